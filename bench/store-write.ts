/**
 * The event write path alone: the group-commit store (src/store/events.ts) against the
 * local PostgreSQL, with no HTTP, limits or validation in front. 64 concurrent writers
 * create events whose blind indexes and search tokens are those of bench/event-body.ts
 * (payload and context are random bytes of their sealed sizes). Reports events/s and the
 * CPU PostgreSQL (all its processes) and this process spent per event, which is how
 * the README's "what bounds throughput" figures were taken.
 *
 * Usage: node --import tsx bench/store-write.ts [--events 20000] [--max-batch 32]
 *          [--without <search|filters>]   (drops those indexes, to see what they cost)
 *          [--projects 40]   (events spread evenly over this many projects)
 */
import { randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { blindIndexesOf, searchTokenIds, searchTokens } from "../src/crypto/blind-index.js";
import { ServiceError } from "../src/errors.js";
import { createEventStore, type NewEvent } from "../src/store/events.js";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { sampleEvent } from "./event-body.js";
import { commandCpuSeconds, dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "20000" },
    "max-batch": { type: "string", default: "32" },
    without: { type: "string" },
    idempotency: { type: "boolean", default: false },
    projects: { type: "string", default: "40" },
  },
});
const total = Number(values.events);
const WRITERS = 64;
const PROJECTS = Number(values.projects);
const DATABASE = "audit_bench_store";

const DROPPED: Record<string, string[]> = {
  search: ["events_search_tokens"],
  expiry: ["idempotency_keys_by_expiry"],
  filters: [
    "events_page_by_actor",
    "events_page_by_entity_id",
    "events_page_by_entity_type",
    "events_page_by_action",
    "events_page_by_tenant",
  ],
};

const db = createPostgresDb({ url: await recreateDatabase(DATABASE) });
await migrate(db);
for (const name of values.without ? (DROPPED[values.without] ?? []) : []) {
  await db.query(`drop index ${name}`);
}

const projects = Array.from({ length: PROJECTS }, () => randomUUID());
for (const id of projects) {
  await db.query(
    "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'bench', 'pro', $2)",
    [id, randomBytes(60)],
  );
}
const store = createEventStore(db, {
  maxBatch: Number(values["max-batch"]),
  concurrency: 4,
  quota: {
    limits: { free: 1_000, start: 100_000, pro: 1_000_000_000 },
    refuse: () => new ServiceError("quota_exceeded", "over quota"),
  },
});

// One index key per project, as in the service: search tokens and filter values differ
// between projects, which is what the indexes see in production.
const indexKeys = projects.map(() => randomBytes(32));
const payload = randomBytes(900);
const context = randomBytes(450);

function newEvent(sequence: number): NewEvent {
  const indexKey = indexKeys[sequence % PROJECTS] ?? randomBytes(32);
  const event = sampleEvent(sequence) as Record<string, string>;
  const texts = [
    event.actorId,
    event.actorDisplay,
    event.entityType,
    event.entityId,
    event.actionKey,
    event.actionDescription,
    event.tenantId,
    event.source,
  ].filter((text): text is string => text !== undefined);
  const [actorIdx, entityTypeIdx, entityIdIdx, actionIdx, tenantIdx] = blindIndexesOf(indexKey, [
    ["actorId", event.actorId ?? ""],
    ["entityType", event.entityType ?? ""],
    ["entityId", event.entityId ?? ""],
    ["action", event.actionKey ?? ""],
    ["tenantId", event.tenantId ?? ""],
  ]);
  const tokenIds = searchTokenIds(indexKey, searchTokens(texts));
  if (!actorIdx || !entityTypeIdx || !entityIdIdx || !actionIdx || !tenantIdx) {
    throw new Error("indexes missing");
  }
  const now = new Date();
  return {
    projectId: projects[sequence % PROJECTS] ?? "",
    environment: "live",
    eventId: randomUUID(),
    occurredAt: now,
    receivedAt: now,
    sealed: {
      keyVersion: 1,
      payload,
      context,
      actorIdx,
      entityTypeIdx,
      entityIdIdx,
      actionIdx,
      tenantIdx,
      legacyActionIdx: undefined,
      searchTokens: tokenIds,
    },
    // With --idempotency, each event carries a new Idempotency-Key claim, as a client
    // that sends one on every request.
    idempotency: values.idempotency
      ? {
          keyHash: randomBytes(32),
          bodyHash: randomBytes(32),
          expiresAt: new Date(now.getTime() + 86_400_000),
        }
      : undefined,
  };
}

const latencies: number[] = [];

async function write(count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < count) {
        const event = newEvent(next++);
        const sent = performance.now();
        await store.createEvent(event);
        latencies.push(performance.now() - sent);
      }
    }),
  );
}

const percentile = (sorted: number[], share: number) =>
  Number((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? 0).toFixed(1));

await write(2_000); // warm-up
latencies.length = 0;
const started = performance.now();
const databaseBefore = await commandCpuSeconds("postgres");
const processBefore = process.cpuUsage();
await write(total);
const seconds = (performance.now() - started) / 1000;
const databaseCpu = (await commandCpuSeconds("postgres")) - databaseBefore;
const processCpu = process.cpuUsage(processBefore);
const micros = (cpuSeconds: number) => Math.round((cpuSeconds * 1e6) / total);
process.stdout.write(
  `${JSON.stringify({
    idempotency: values.idempotency,
    without: values.without ?? null,
    maxBatch: Number(values["max-batch"]),
    eventsPerSecond: Math.round(total / seconds),
    latencyP50Ms: percentile(
      latencies.sort((a, b) => a - b),
      0.5,
    ),
    latencyP99Ms: percentile(latencies, 0.99),
    postgresCpuMicrosPerEvent: micros(databaseCpu),
    postgresCores: Number((databaseCpu / seconds).toFixed(2)),
    // Includes making the test events (indexes, tokens), as the service would.
    processCpuMicrosPerEvent: micros((processCpu.user + processCpu.system) / 1e6),
  })}\n`,
);
await db.close();
await dropDatabase(DATABASE);
process.exit(0);
