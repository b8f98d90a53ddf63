/**
 * EventService's streaming operations, Export Events and Follow Events, for REST and
 * every RPC protocol. An operation first checks the whole request (credential,
 * parameters, range) and throws its error before anything is streamed; it then hands
 * over chunks of events, which RPC sends as messages (`exportMessage`, `followMessage`)
 * and REST renders as NDJSON, CSV or Server-Sent Events (transport/rest-streams.ts).
 */
import { create } from "@bufbuild/protobuf";
import {
  type ErasedEvent,
  ErasedEventSchema,
  type ExportEventsResponse,
  ExportEventsResponseSchema,
  type FollowEventsResponse,
  FollowEventsResponseSchema,
  type UnreadableEvent,
  UnreadableEventSchema,
} from "../../gen/audit/v1/events_pb.js";
import type { EventChunk, ExportService } from "../events/export-service.js";
import type { FollowService } from "../events/follow-service.js";
import { storedEventMessage } from "./event-operations.js";
import type { OperationCall } from "./operation.js";

export type { EventChunk };

type ListedEvent = EventChunk["events"][number];
type Tombstone = EventChunk["erased"][number];
type Unreadable = EventChunk["unreadable"][number];

/** One position of a chunk: an event, what remains of an erased one, or one that does not decrypt. */
export type ChunkEntry =
  | { event: ListedEvent }
  | { erased: Tombstone }
  | { unreadable: Unreadable };

/** The log index of a chunk's entry. */
function entryIndex(entry: ChunkEntry): bigint {
  if ("event" in entry) return entry.event.logIndex;
  return "erased" in entry ? entry.erased.logIndex : entry.unreadable.logIndex;
}

/** A chunk's events, tombstones and unreadable events merged, in log-index order. */
export function chunkEntries(chunk: EventChunk): ChunkEntry[] {
  const entries: ChunkEntry[] = chunk.events.map((event) => ({ event }));
  if (chunk.erased.length === 0 && chunk.unreadable.length === 0) return entries;
  for (const erased of chunk.erased) entries.push({ erased });
  for (const unreadable of chunk.unreadable) entries.push({ unreadable });
  return entries.sort((a, b) => {
    const [x, y] = [entryIndex(a), entryIndex(b)];
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** A tombstone as its RPC message. */
export function erasedEventMessage(erased: Tombstone): ErasedEvent {
  return create(ErasedEventSchema, {
    eventId: erased.eventId,
    logIndex: erased.logIndex,
    receivedAt: erased.receivedAt.toISOString(),
    erasedAt: erased.erasedAt.toISOString(),
  });
}

/** An unreadable event as its RPC message. */
export function unreadableEventMessage(unreadable: Unreadable): UnreadableEvent {
  return create(UnreadableEventSchema, {
    eventId: unreadable.eventId,
    logIndex: unreadable.logIndex,
    receivedAt: unreadable.receivedAt.toISOString(),
    reason: unreadable.reason,
  });
}

/** An opened stream: what it covers, and its chunks. */
export interface OpenedStream {
  projectId: string;
  environment: string;
  fromIndex: bigint;
  /** End of an export's range (exclusive); undefined for a follow stream. */
  endIndex?: bigint;
  /** Chunks in log-index order; stops when `signal` aborts. */
  chunks: AsyncGenerator<EventChunk>;
}

/** The streaming operations of EventService. */
export interface EventStreamOperations {
  exportEvents(call: OperationCall, signal: AbortSignal): Promise<OpenedStream>;
  /**
   * `lastEventId` (SSE's Last-Event-ID: the logIndex last received) overrides the
   * request's fromIndex: the stream resumes after it.
   */
  followEvents(
    call: OperationCall,
    signal: AbortSignal,
    lastEventId?: string,
  ): Promise<OpenedStream>;
}

/** Creates the streaming operations. */
export function eventStreamOperations(
  exports: ExportService,
  follows: FollowService,
): EventStreamOperations {
  return {
    async exportEvents(call, signal) {
      const opened = await exports.open({
        credential: call.facts.credential,
        params: call.readJson,
      });
      return {
        projectId: opened.projectId,
        environment: opened.environment,
        fromIndex: opened.fromIndex,
        endIndex: opened.endIndex,
        chunks: opened.chunks(signal),
      };
    },
    async followEvents(call, signal, lastEventId) {
      const opened = await follows.open({
        credential: call.facts.credential,
        params: call.readJson,
        ...(lastEventId === undefined ? {} : { lastEventId }),
      });
      return {
        projectId: opened.projectId,
        environment: opened.environment,
        fromIndex: opened.fromIndex,
        chunks: opened.chunks(signal),
      };
    },
  };
}

/** A chunk of an export as its RPC message. */
export function exportMessage(chunk: EventChunk): ExportEventsResponse {
  return create(ExportEventsResponseSchema, {
    events: chunk.events.map(storedEventMessage),
    erased: chunk.erased.map(erasedEventMessage),
    unreadable: chunk.unreadable.map(unreadableEventMessage),
    nextIndex: chunk.nextIndex,
  });
}

/** A chunk of a follow stream as its RPC message (no events: a heartbeat). */
export function followMessage(chunk: EventChunk): FollowEventsResponse {
  return create(FollowEventsResponseSchema, {
    events: chunk.events.map(storedEventMessage),
    erased: chunk.erased.map(erasedEventMessage),
    unreadable: chunk.unreadable.map(unreadableEventMessage),
    nextIndex: chunk.nextIndex,
  });
}
