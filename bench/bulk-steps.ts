/**
 * The time per event of each step of bulk ingestion in this process, with no network or
 * database: what the service's own code spends on the acknowledgement path of a REST batch
 * of 100 ~1 KB events (bench/event-body.ts) and of an IngestEvents stream event, and what
 * the integrator spends per event behind them (open the payload, derive the blind
 * indexes). CPU time, not wall time: steadier on a loaded VM, where end-to-end figures
 * are not; judge a change to one step here first, then with bench/bulk.ts.
 *
 * Usage: node --import tsx bench/bulk-steps.ts [--events 20000]
 */
import { randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { create, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { EventSchema } from "../gen/audit/v1/event_pb.js";
import {
  CreateEventsResponseSchema,
  EventResultSchema,
  IngestEventsRequestSchema,
  IngestEventsResponseSchema,
} from "../gen/audit/v1/ingest_pb.js";
import type { Authenticator, KeyPrincipal } from "../src/auth/authenticator.js";
import { type OpenedPayload, openPayload } from "../src/crypto/event-cipher.js";
import type { Keyring, ProjectKeys } from "../src/crypto/keyring.js";
import { createBulkIngestService } from "../src/ingest/bulk-ingest.js";
import { eventValidator } from "../src/ingest/event-input.js";
import { eventBodyHash } from "../src/ingest/idempotency-hash.js";
import { journalEvent, sealInput } from "../src/ingest/ingest-service.js";
import { deriveIndexes } from "../src/log/derive.js";
import type { BatchAppender } from "../src/store/batch-append.js";
import type { EventStore } from "../src/store/events.js";
import { parseJsonBody } from "../src/transport/body.js";
import { restJson } from "../src/transport/rest-rendering.js";
import type { EventInput } from "../src/vocabulary/event-input.js";
import { sampleEvent } from "./event-body.js";

const { values } = parseArgs({ options: { events: { type: "string", default: "20000" } } });
const rounds = Number(values.events);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--events must be a positive integer");
const BATCH = 100;

const principal: KeyPrincipal = {
  kind: "api_key",
  keyId: randomUUID(),
  projectId: randomUUID(),
  environment: "live",
  plan: "pro",
};
const dataKey = randomBytes(32);
const keys: ProjectKeys = {
  projectId: principal.projectId,
  currentVersion: 1,
  indexKey: randomBytes(32),
  dataKey: async () => dataKey,
};
const unused = () => {
  throw new Error("not used");
};
const authenticator: Authenticator = {
  requireApiKey: async () => principal,
  requireReader: unused,
  invalidate: unused,
};
const keyring: Keyring = {
  newProjectKeys: unused,
  rotate: unused,
  forProject: async () => keys,
  opensStoredKeys: async () => true,
};

const events = Array.from({ length: 1000 }, (_, i) => sampleEvent(i));
const batchBodies = Array.from({ length: 10 }, (_, b) =>
  Buffer.from(JSON.stringify({ events: events.slice(b * BATCH, (b + 1) * BATCH) })),
);
const inputs = events.map((event) => eventValidator.validate(event).value as EventInput);
const at = (i: number) => ({
  projectId: principal.projectId,
  environment: "live",
  eventId: `0192f0c4-0000-7000-8000-${String(i).padStart(12, "0")}`,
});
const sealed = await Promise.all(inputs.map((input, i) => sealInput(keys, at(i), input)));
const streamMessages = events.map((event) =>
  create(IngestEventsRequestSchema, { event: fromJson(EventSchema, event as never) }),
);
const streamBinaries = streamMessages.map((message) =>
  toBinary(IngestEventsRequestSchema, message),
);

const results: Record<string, number> = {};

/**
 * Microseconds of this process's CPU (user and system, all threads: garbage collection
 * included) per event of `step`, which handles `perCall` events: on a machine shared
 * with other work, CPU time moves far less than wall time.
 */
async function record(name: string, step: (i: number) => unknown, perCall = 1): Promise<void> {
  const calls = Math.ceil(rounds / perCall);
  for (let call = 0; call < Math.min(calls, 200); call++) await step(call * perCall);
  const started = process.cpuUsage();
  for (let call = 0; call < calls; call++) await step(call * perCall);
  const used = process.cpuUsage(started);
  const micros = (used.user + used.system) / (calls * perCall);
  results[name] = Math.round(micros * 10) / 10;
}

const n = (i: number) => i % events.length;

// REST batch, the acknowledgement path.
await record(
  "REST: parse the batch body",
  (i) =>
    parseJsonBody(
      "application/json",
      batchBodies[(i / BATCH) % batchBodies.length] as Buffer,
      undefined,
    ),
  BATCH,
);
await record("validate", (i) => eventValidator.validate(events[n(i)]));
await record("seal (encode, JSON, AES-GCM payload + context)", (i) =>
  sealInput(keys, at(i), inputs[n(i)] as EventInput),
);
const instantBatches: BatchAppender = {
  append: async () => ({ kind: "stored", refused: new Set() }),
  deleteExpiredKeys: unused,
  drain: async () => {},
};
const instantStore: EventStore = {
  createEvent: async (created) => ({
    eventId: created.eventId,
    receivedAt: created.receivedAt,
    replayed: false,
  }),
  deleteExpiredIdempotencyKeys: unused,
  drain: async () => {},
};
const bulk = createBulkIngestService({
  authenticator,
  keyring,
  events: instantStore,
  batches: instantBatches,
  idempotencyTtlSeconds: 86_400,
});
await record(
  "REST: createEvents, store answering at once (validate + seal + ids)",
  (i) =>
    bulk.createEvents({
      credential: { kind: "api_key", value: "pk_live_bench", via: "bearer" },
      idempotencyKey: undefined,
      readBody: () =>
        parseJsonBody(
          "application/json",
          batchBodies[(i / BATCH) % batchBodies.length] as Buffer,
          undefined,
        ),
    }),
  BATCH,
);
const reply = create(CreateEventsResponseSchema, {
  results: Array.from({ length: BATCH }, (_, i) =>
    create(EventResultSchema, { eventId: at(i).eventId, receivedAt: new Date().toISOString() }),
  ),
});
await record(
  "REST: render the results (REST JSON + stringify)",
  () => JSON.stringify(restJson(CreateEventsResponseSchema, reply)),
  BATCH,
);

// Stream, per event.
await record("stream: request message to JSON (toJson)", (i) =>
  toJson(IngestEventsRequestSchema, streamMessages[n(i)] as never),
);
await record("stream: journalEvent (validate + seal)", (i) =>
  journalEvent(keyring, principal, events[n(i)], new Date(), at(i).eventId),
);
await record("idempotency body hash (only with a key)", (i) =>
  eventBodyHash(inputs[n(i)] as EventInput),
);
const ack = create(IngestEventsResponseSchema, {
  sequence: 1n,
  result: create(EventResultSchema, { eventId: at(0).eventId, receivedAt: "x" }),
});
await record("stream: acknowledgement message (binary)", () =>
  toBinary(IngestEventsResponseSchema, ack),
);
results["(stream request, binary bytes)"] = streamBinaries[0]?.length ?? 0;

// The integrator, per event.
await record("integrator: open the payload", (i) =>
  openPayload(keys, at(n(i)), 1, (sealed[n(i)] as { payload: Buffer }).payload),
);
const opened = await Promise.all(sealed.map((one, i) => openPayload(keys, at(i), 1, one.payload)));
await record("integrator: derive the blind indexes", (i) =>
  deriveIndexes(keys, (opened[n(i)] as OpenedPayload).payload),
);

console.table(
  Object.entries(results).map(([step, micros]) => ({ step, "CPU µs per event": micros })),
);
