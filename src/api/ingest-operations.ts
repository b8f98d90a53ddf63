/**
 * IngestService's operations: CreateEvent and CreateEvents over REST and every RPC
 * protocol, and the IngestEvents stream over gRPC and Connect (HTTP/2).
 *
 * The stream's flow control: at most `STREAM_WINDOW` events are read ahead of their
 * acknowledgements. Past that the operation stops reading the stream, so the transport
 * stops reading the connection and HTTP/2 flow control holds the client back; memory
 * per stream stays bounded however fast a client sends. Acknowledgements go out in the
 * order the events were sent, each once its event's transaction committed.
 */
import { create, type DescMethod, fromJson, type Message } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";
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
import type { BulkIngestService, EventStream, ItemResult } from "../ingest/bulk-ingest.js";
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

// The kinds of refusal that concern one event; any other ends the stream.
const EVENT_ERRORS = new Set(["validation", "conflict", "bad_request"]);

async function* ingestEvents(bulk: BulkIngestService, call: StreamCall): AsyncGenerator<Message> {
  const stream = await bulk.openStream(call.facts.credential);
  const requests = call.requests[Symbol.asyncIterator]();
  const pending: Promise<Answer>[] = [];
  let reading: Promise<IteratorResult<() => unknown>> | undefined;
  let ended = false;
  let refused: { error: unknown } | undefined;
  let sequence = 0n;

  type Next = { answer: Answer } | { read: IteratorResult<() => unknown> };
  for (;;) {
    // Once refused, nothing more is read: the events read are answered, then it ends.
    const listening = !ended && refused === undefined;
    if (listening && !reading && pending.length < STREAM_WINDOW) reading = requests.next();
    const oldest = pending.length > 0 ? pending[0] : undefined;
    const waits: Promise<Next>[] = [];
    if (oldest) waits.push(oldest.then((answer) => ({ answer })));
    if (listening && reading) waits.push(reading.then((read) => ({ read })));
    if (waits.length === 0) break;
    const next = await Promise.race(waits);
    if ("read" in next) {
      reading = undefined;
      if (next.read.done) ended = true;
      else pending.push(answer(stream, next.read.value, sequence++));
      continue;
    }
    pending.shift();
    yield next.answer.message;
    if (next.answer.fatal && !refused) refused = next.answer.fatal;
  }
  // Every event read has been answered; the stream ends with the refusal, if any.
  if (refused) throw refused.error;
}

/** Writes one event of a stream; never rejects (its refusal is in the answer). */
async function answer(
  stream: EventStream,
  readRequest: () => unknown,
  sequence: bigint,
): Promise<Answer> {
  try {
    const request = readRequest() as { event?: unknown; idempotencyKey?: unknown };
    const key = typeof request.idempotencyKey === "string" ? request.idempotencyKey : undefined;
    // An absent event is an empty one: its validation names the required fields.
    const result = await stream.ingest(request.event ?? {}, key);
    return {
      message: create(IngestEventsResponseSchema, {
        sequence,
        result: create(EventResultSchema, {
          eventId: result.eventId,
          receivedAt: result.receivedAt.toISOString(),
        }),
        replayed: result.replayed,
      }),
    };
  } catch (error) {
    const refusal = toServiceError(error);
    const fatal = refusal === undefined || !EVENT_ERRORS.has(refusal.kind);
    return {
      message: create(IngestEventsResponseSchema, {
        sequence,
        result: create(EventResultSchema, {
          error: refusal?.message ?? Messages.internal,
          details: (refusal?.facts.issues ?? []).map(toIssue),
        }),
      }),
      // Thrown as it came: the error boundary maps it, and reports an unexpected one.
      ...(fatal ? { fatal: { error } } : {}),
    };
  }
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
