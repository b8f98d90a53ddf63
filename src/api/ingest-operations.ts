/**
 * IngestService's operations: CreateEvent and CreateEvents over REST and every RPC
 * protocol, and the IngestEvents stream over gRPC and Connect (HTTP/2).
 *
 * The stream's flow control: at most `STREAM_WINDOW` events are read ahead of their
 * acknowledgements. Past that the operation stops reading the stream, so the transport
 * stops reading the connection and HTTP/2 flow control holds the client back; memory
 * per stream stays bounded however fast a client sends. The events read together (up to
 * `STREAM_BATCH`, or what arrived within `STREAM_GATHER_MS` of the first) are written as
 * one group, in one group-commit batch. Acknowledgements go out in the order the events
 * were sent, one per event, each once its event's transaction committed.
 */
import { create, type DescMethod, fromJson, type Message } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CreateEventResponseSchema,
  CreateEventsResponseSchema,
  type EventResult,
  EventResultSchema,
  IngestEventsResponseSchema,
  IngestService,
  ValidationIssueSchema,
} from "../../gen/audit/v1/ingest_pb.js";
import { type FieldIssue, Messages, toServiceError } from "../errors.js";
import type {
  BulkIngestService,
  EventStream,
  ItemResult,
  StreamItem,
} from "../ingest/bulk-ingest.js";
import type { IngestService as Ingest } from "../ingest/ingest-service.js";
import type {
  Operation,
  Operations,
  StreamCall,
  StreamOperation,
  StreamOperations,
} from "./operation.js";

/** Most events of a stream read ahead of their acknowledgements. */
export const STREAM_WINDOW = 256;

/** Most events of a stream written as one group (one group-commit batch). */
export const STREAM_BATCH = 100;

/** How long events read are held for more to join their group before it is written. */
export const STREAM_GATHER_MS = 2;

/** The operations of IngestService. */
export function ingestOperations(ingest: Ingest, bulk: BulkIngestService): Operations {
  return new Map<DescMethod, Operation>([
    [
      IngestService.method.createEvent,
      async (call) => {
        const idempotencyKey = call.header("idempotency-key");
        const result = await ingest.createEvent({
          credential: call.facts.credential,
          idempotencyKey: idempotencyKey === "" ? undefined : idempotencyKey,
          idempotencyKeyRepeated: call.facts.repeatedHeaders.has("idempotency-key"),
          readBody: call.readJson,
        });
        return {
          message: create(CreateEventResponseSchema, {
            eventId: result.eventId,
            receivedAt: result.receivedAt.toISOString(),
          }),
          created: !result.replayed,
          ...(result.replayed ? { headers: { "idempotent-replayed": "true" } } : {}),
        };
      },
    ],
    [
      IngestService.method.createEvents,
      async (call) => {
        const outcome = await bulk.createEvents({
          credential: call.facts.credential,
          idempotencyKey: call.header("idempotency-key"),
          idempotencyKeyRepeated: call.facts.repeatedHeaders.has("idempotency-key"),
          readBody: call.readJson,
        });
        return {
          message: create(CreateEventsResponseSchema, {
            results: outcome.results.map(toEventResult),
          }),
          created: !outcome.replayed,
          ...(outcome.replayed ? { headers: { "idempotent-replayed": "true" } } : {}),
        };
      },
    ],
  ]);
}

/** The streaming operations of IngestService. */
export function ingestStreamOperations(bulk: BulkIngestService): StreamOperations {
  return new Map<DescMethod, StreamOperation>([
    [IngestService.method.ingestEvents, (call) => ingestEvents(bulk, call)],
  ]);
}

/** One event's answer: its acknowledgement, and the refusal that ends the stream. */
interface Answer {
  message: Message;
  fatal?: { error: unknown };
}

/** An event read, not yet written: its request and its place in the stream. */
interface Gathered {
  read: () => unknown;
  sequence: bigint;
}

// The kinds of refusal that concern one event; any other ends the stream.
const EVENT_ERRORS = new Set(["validation", "conflict", "bad_request"]);

type Next =
  | { answer: Answer }
  | { read: IteratorResult<() => unknown> }
  | { gathered: "due" }
  | { stopped: unknown };

async function* ingestEvents(bulk: BulkIngestService, call: StreamCall): AsyncGenerator<Message> {
  const stream = await bulk.openStream(call.facts.credential);
  const requests = call.requests[Symbol.asyncIterator]();
  // Answers of the events written, in the order sent (each tagged once, raced often).
  const pending: Promise<Next>[] = [];
  // Events read and not yet written: written together once STREAM_BATCH are read, no more
  // can be read now (window full, stream ended or refused), or STREAM_GATHER_MS passed.
  let gathered: Gathered[] = [];
  let due: Promise<Next> | undefined;
  let reading: Promise<Next> | undefined;
  let ended = false;
  let refused: { error: unknown } | undefined;
  let sequence = 0n;

  const write = () => {
    for (const answer of answers(stream, gathered))
      pending.push(answer.then((a) => ({ answer: a })));
    gathered = [];
    due = undefined;
  };

  for (;;) {
    // Once refused, nothing more is read: the events read are answered, then it ends.
    const listening = !ended && refused === undefined;
    const inFlight = pending.length + gathered.length;
    if (
      gathered.length >= STREAM_BATCH ||
      (gathered.length > 0 && (!listening || inFlight >= STREAM_WINDOW))
    ) {
      write();
    }
    if (listening && !reading && inFlight < STREAM_WINDOW) {
      // While its log is behind (the pushback) the stream reads nothing, so it holds no
      // slot; a refusal after the wait ends it like any other.
      // A request that cannot be read (too large, not a message) stops the reading like
      // a refusal: the events read before it are still written and answered.
      const read = () =>
        requests.next().then(
          (result): Next => ({ read: result }),
          (error: unknown): Next => ({ stopped: unreadable(error) }),
        );
      const held = stream.ready();
      reading = held ? held.then(read, (error: unknown): Next => ({ stopped: error })) : read();
    }
    if (gathered.length > 0 && !due) {
      due = new Promise((resolve) => setTimeout(resolve, STREAM_GATHER_MS)).then(() => ({
        gathered: "due" as const,
      }));
    }
    const waits: Promise<Next>[] = [];
    const oldest = pending[0];
    if (oldest) waits.push(oldest);
    if (listening && reading) waits.push(reading);
    if (due) waits.push(due);
    if (waits.length === 0) break;
    const next = await Promise.race(waits);
    if ("gathered" in next) {
      if (gathered.length > 0) write();
      continue;
    }
    if ("stopped" in next) {
      reading = undefined;
      if (!refused) refused = { error: next.stopped };
      continue;
    }
    if ("read" in next) {
      reading = undefined;
      if (next.read.done) ended = true;
      else gathered.push({ read: next.read.value, sequence: sequence++ });
      continue;
    }
    pending.shift();
    yield next.answer.message;
    if (next.answer.fatal && !refused) refused = next.answer.fatal;
  }
  // Every event read has been answered; the stream ends with the refusal, if any.
  if (refused) throw refused.error;
}

/**
 * Why a stream's request could not be read, as the client is told. The runtime calls a
 * binary message it cannot parse Internal (a server fault, logged as one); it is the
 * client's, InvalidArgument, as a JSON message it cannot parse already is.
 */
function unreadable(error: unknown): unknown {
  return error instanceof ConnectError &&
    error.code === Code.Internal &&
    error.rawMessage.startsWith("parse binary:")
    ? new ConnectError(error.rawMessage, Code.InvalidArgument)
    : error;
}

/**
 * Writes events read together as one group; one answer per event, in order, that never
 * rejects (its refusal is in the answer). A request that cannot be read is answered
 * alone.
 */
function answers(stream: EventStream, gathered: readonly Gathered[]): Promise<Answer>[] {
  const out: Promise<Answer>[] = [];
  const items: StreamItem[] = [];
  const places: number[] = [];
  gathered.forEach(({ read, sequence }, i) => {
    try {
      const request = read() as { event?: unknown; idempotencyKey?: unknown };
      const key = typeof request.idempotencyKey === "string" ? request.idempotencyKey : undefined;
      // An absent event is an empty one: its validation names the required fields.
      items.push({ event: request.event ?? {}, idempotencyKey: key });
      places.push(i);
    } catch (error) {
      out[i] = Promise.resolve(refusal(error, sequence));
    }
  });
  const writes = items.length > 0 ? stream.ingest(items) : [];
  places.forEach((i, n) => {
    const sequence = (gathered[i] as Gathered).sequence;
    const written = writes[n] ?? Promise.reject(new Error("no write for a stream event"));
    out[i] = written.then(
      (result) => ({
        message: create(IngestEventsResponseSchema, {
          sequence,
          result: create(EventResultSchema, {
            eventId: result.eventId,
            receivedAt: result.receivedAt.toISOString(),
          }),
          replayed: result.replayed,
        }),
      }),
      (error: unknown) => refusal(error, sequence),
    );
  });
  return out;
}

/** An event's refusal as its answer; fatal unless it concerns that event alone. */
function refusal(error: unknown, sequence: bigint): Answer {
  const refused = toServiceError(error);
  const fatal = refused === undefined || !EVENT_ERRORS.has(refused.kind);
  return {
    message: create(IngestEventsResponseSchema, {
      sequence,
      result: create(EventResultSchema, {
        error: refused?.message ?? Messages.internal,
        details: (refused?.facts.issues ?? []).map(toIssue),
      }),
    }),
    // Thrown as it came: the error boundary maps it, and reports an unexpected one.
    ...(fatal ? { fatal: { error } } : {}),
  };
}

function toEventResult(result: ItemResult): EventResult {
  return result.stored
    ? create(EventResultSchema, {
        eventId: result.eventId,
        receivedAt: result.receivedAt.toISOString(),
      })
    : create(EventResultSchema, { error: result.error, details: result.details.map(toIssue) });
}

function toIssue(issue: FieldIssue) {
  return create(ValidationIssueSchema, {
    path: fromJson(ListValueSchema, issue.path),
    message: issue.message,
    code: issue.code,
  });
}
