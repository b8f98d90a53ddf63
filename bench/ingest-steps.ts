/**
 * The time per event of each step of Create Event in this process, with no network,
 * database or Redis: what the service's own code spends, measured in a tight loop. On a
 * VM whose end-to-end figures drift by tens of percent between runs, these stay within a
 * few percent, so a change to one step can be judged here first.
 *
 * The last rows run the whole ingest service on the same ~1 KB events (bench/event-body.ts):
 * once with a store that answers at once, once through the group-commit store
 * (src/store/events.ts) over a database that answers every batch at once, after turning
 * its parameters into array literals as the PostgreSQL driver does.
 *
 * Usage: node --import tsx bench/ingest-steps.ts [--events 20000]
 */
import { randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import type { JsonValue } from "@bufbuild/protobuf";
import type { Authenticator, KeyPrincipal } from "../src/auth/authenticator.js";
import { seal } from "../src/crypto/aead.js";
import { blindIndexesOf, searchTokenIds, searchTokens } from "../src/crypto/blind-index.js";
import type { Keyring, ProjectKeys } from "../src/crypto/keyring.js";
import { ServiceError } from "../src/errors.js";
import { eventValidator } from "../src/ingest/event-input.js";
import { encodeJson } from "../src/ingest/html-encoding.js";
import { createIngestService } from "../src/ingest/ingest-service.js";
import { arrayLiteral } from "../src/store/array-literal.js";
import type { Db } from "../src/store/db.js";
import { createEventStore, type EventStore } from "../src/store/events.js";
import { sampleEvent } from "./event-body.js";

const { values } = parseArgs({ options: { events: { type: "string", default: "20000" } } });
const rounds = Number(values.events);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--events must be a positive integer");

const bodies = Array.from({ length: 1000 }, (_, i) => Buffer.from(JSON.stringify(sampleEvent(i))));
const parsed = bodies.map((body) => JSON.parse(body.toString("utf8")) as Record<string, unknown>);
const texts = (event: Record<string, unknown>) =>
  ["actorId", "actorDisplay", "entityType", "entityId", "actionKey", "actionDescription"]
    .concat(["tenantId", "source"])
    .map((field) => event[field])
    .filter((text): text is string => typeof text === "string");

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
  throw new Error("not used by Create Event");
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

const results: Record<string, number> = {};

/**
 * Records the microseconds of wall time per event of `step`, which handles `perCall`
 * events from the i-th on; this loop is the only work running, after a warm-up.
 */
async function record(name: string, step: (i: number) => unknown, perCall = 1): Promise<void> {
  const calls = Math.ceil(rounds / perCall);
  for (let call = 0; call < Math.min(calls, 2000); call++) await step(call * perCall);
  const started = process.hrtime.bigint();
  for (let call = 0; call < calls; call++) await step(call * perCall);
  const micros = Number(process.hrtime.bigint() - started) / (calls * perCall) / 1000;
  results[name] = Math.round(micros * 10) / 10;
}

const event = (i: number) => parsed[i % parsed.length] as Record<string, unknown>;
await record("parse JSON body", (i) =>
  JSON.parse((bodies[i % bodies.length] as Buffer).toString()),
);
await record("validate", (i) => eventValidator.validate(event(i)));
await record("search tokens (words, prefixes)", (i) => searchTokens(texts(event(i))));
const tokens = searchTokens(texts(event(0)));
await record(`search token ids (${tokens.length} tokens)`, () =>
  searchTokenIds(keys.indexKey, tokens),
);
await record("filter blind indexes (5)", (i) =>
  blindIndexesOf(keys.indexKey, [
    ["actorId", String(event(i).actorId)],
    ["entityType", String(event(i).entityType)],
    ["entityId", String(event(i).entityId)],
    ["action", String(event(i).actionKey)],
    ["tenantId", String(event(i).tenantId)],
  ]),
);
// The payload is every field but the context, which is sealed apart.
const payloads = parsed.map(({ context: _, ...fields }) => fields);
await record("seal payload (JSON + AES-GCM)", (i) =>
  seal(
    dataKey,
    Buffer.from(JSON.stringify(payloads[i % payloads.length]), "utf8"),
    `event:${i}:payload`,
  ),
);
await record("seal context (encode + JSON + AES-GCM)", (i) =>
  seal(
    dataKey,
    Buffer.from(JSON.stringify(encodeJson(event(i).context as JsonValue)), "utf8"),
    `event:${i}:context`,
  ),
);

const ingestWith = (events: EventStore) =>
  createIngestService({ authenticator, keyring, events, idempotencyTtlSeconds: 86_400 });
const createEvent = (ingest: ReturnType<typeof ingestWith>, i: number) =>
  ingest.createEvent({
    credential: { kind: "api_key", value: "pk_live_bench", via: "bearer" },
    idempotencyKey: undefined,
    readBody: () => JSON.parse((bodies[i % bodies.length] as Buffer).toString()),
  });

const instantStore: EventStore = {
  createEvent: async (created) => ({
    eventId: created.eventId,
    receivedAt: created.receivedAt,
    replayed: false,
  }),
  deleteExpiredIdempotencyKeys: unused,
  drain: async () => {},
};
const alone = ingestWith(instantStore);
await record("createEvent, store answering at once", (i) => createEvent(alone, i));

// A database that takes every batch: parameters become literals, every event is written.
const instantDb: Db = {
  driver: "postgres",
  async query<Row>(_sql: string, params: readonly unknown[] = []) {
    for (const value of params) if (Array.isArray(value)) arrayLiteral(value);
    const batchSize = (params[0] as unknown[]).length;
    return Array.from({ length: batchSize }, () => ({ outcome: "written" })) as Row[];
  },
  transaction: unused,
  ping: async () => {},
  close: async () => {},
};
const store = createEventStore(instantDb, {
  concurrency: 4,
  maxBatch: 32,
  quota: { limits: { pro: 1e9 }, refuse: () => new ServiceError("quota_exceeded", "over") },
});
const batched = ingestWith(store);
// 64 requests in flight at once, as the end-to-end benchmark's connections.
const inFlight = 64;
await record(
  "createEvent through the group-commit store",
  (i) => Promise.all(Array.from({ length: inFlight }, (_, n) => createEvent(batched, i + n))),
  inFlight,
);

console.table(Object.entries(results).map(([step, micros]) => ({ step, "µs per event": micros })));
