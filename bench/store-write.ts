/**
 * The write path's two stages alone, against the local PostgreSQL, with no HTTP, limits
 * or validation in front (docs/write-path.md):
 * 1. the acknowledgement: 64 concurrent writers append sealed events (bench/event-body.ts,
 *    sealed as ingestion seals them) through the group-commit store (src/store/events.ts);
 * 2. the integrator: passes sequence the backlog and write its filter indexes and search
 *    tokens (src/log/integrator.ts), until it has caught up.
 * Each stage reports events/s and the CPU that PostgreSQL (all its processes) and this
 * process spent per event. The README's Performance section quotes these figures.
 *
 * Usage: node --import tsx bench/store-write.ts [--events 20000] [--max-batch 32]
 *          [--idempotency]   (each event carries a new Idempotency-Key)
 *          [--projects 40]   (events spread evenly over this many projects)
 *          [--pass 5000]     (most events per integrator pass)
 *          [--database audit_bench_store]  (the scratch database, dropped at the end)
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import pino from "pino";
import { type EventPayload, sealEvent } from "../src/crypto/event-cipher.js";
import { createKeyring } from "../src/crypto/keyring.js";
import { ServiceError } from "../src/errors.js";
import { uuidv7 } from "../src/ids.js";
import { encodeHtml, encodeJson } from "../src/ingest/html-encoding.js";
import { createIntegrator } from "../src/log/integrator.js";
import { createEventStore, type NewEvent } from "../src/store/events.js";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { createProjectStore } from "../src/store/projects.js";
import { sampleEvent } from "./event-body.js";
import {
  commandCpuSeconds,
  databaseCpuSeconds,
  dropDatabase,
  recreateDatabase,
} from "./machine.js";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "20000" },
    "max-batch": { type: "string", default: "32" },
    idempotency: { type: "boolean", default: false },
    projects: { type: "string", default: "40" },
    pass: { type: "string", default: "5000" },
    database: { type: "string", default: "audit_bench_store" },
  },
});
const total = Number(values.events);
const WRITERS = 64;
const PROJECTS = Number(values.projects);
const DATABASE = values.database;

const db = createPostgresDb({ url: await recreateDatabase(DATABASE) });
await migrate(db);
const keyring = createKeyring({ db, masterKey: randomBytes(32) });
const projectStore = createProjectStore(db, keyring);
const projects: string[] = [];
for (let i = 0; i < PROJECTS; i++) projects.push((await projectStore.createProject("b", "pro")).id);

const store = createEventStore(db, {
  maxBatch: Number(values["max-batch"]),
  concurrency: 4,
  quota: {
    limits: { free: 1_000, start: 100_000, pro: 1_000_000_000 },
    refuse: () => new ServiceError("quota_exceeded", "over quota"),
  },
});
const integrator = createIntegrator({
  db,
  keyring,
  logger: pino({ level: "silent" }),
  maxEventsPerPass: Number(values.pass),
});

/** An event as ingestion would append it: fields HTML-encoded, sealed with a salt. */
async function newEvent(sequence: number): Promise<NewEvent> {
  const projectId = projects[sequence % PROJECTS] ?? "";
  const keys = await keyring.forProject(projectId);
  const { context, changes, occurredAt, ...fields } = sampleEvent(sequence) as Record<
    string,
    unknown
  >;
  const payload = Object.fromEntries(
    Object.entries(fields).map(([name, value]) => [name, encodeHtml(String(value))]),
  ) as unknown as EventPayload;
  payload.changes = encodeJson(changes as never) as unknown as NonNullable<EventPayload["changes"]>;
  const now = new Date();
  const eventId = uuidv7(now.getTime());
  return {
    projectId,
    environment: "live",
    eventId,
    occurredAt: new Date(String(occurredAt)),
    receivedAt: now,
    sealed: await sealEvent(
      keys,
      { projectId, environment: "live", eventId },
      payload,
      encodeJson(context as never) as never,
    ),
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

async function append(count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < count) {
        const event = await newEvent(next++);
        const sent = performance.now();
        await store.createEvent(event);
        latencies.push(performance.now() - sent);
      }
    }),
  );
}

async function integrateAll(): Promise<number> {
  let passes = 0;
  for (;;) {
    const result = await integrator.runPass();
    passes++;
    if (result.integrated === 0 && !result.more) return passes;
  }
}

const percentile = (sorted: number[], share: number) =>
  Number((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? 0).toFixed(1));

/** Runs `work` and measures it: seconds, and CPU µs per event of PostgreSQL and this process. */
async function measure(work: () => Promise<unknown>) {
  const started = performance.now();
  const databaseBefore = await commandCpuSeconds("postgres");
  const backendsBefore = await databaseCpuSeconds(DATABASE);
  const processBefore = process.cpuUsage();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const databaseCpu = (await commandCpuSeconds("postgres")) - databaseBefore;
  let backendsCpu = 0;
  for (const [pid, after] of await databaseCpuSeconds(DATABASE)) {
    backendsCpu += after - (backendsBefore.get(pid) ?? 0);
  }
  const processCpu = process.cpuUsage(processBefore);
  const micros = (cpuSeconds: number) => Math.round((cpuSeconds * 1e6) / total);
  return {
    eventsPerSecond: Math.round(total / seconds),
    postgresCpuMicrosPerEvent: micros(databaseCpu),
    // Only this bench's backends: other clients of a shared server do not count.
    backendCpuMicrosPerEvent: micros(backendsCpu),
    processCpuMicrosPerEvent: micros((processCpu.user + processCpu.system) / 1e6),
  };
}

// Warm-up of both stages.
await append(2_000);
await integrateAll();
latencies.length = 0;

const acknowledgement = await measure(() => append(total));
latencies.sort((a, b) => a - b);
let passes = 0;
const integration = await measure(async () => {
  passes = await integrateAll();
});
process.stdout.write(
  `${JSON.stringify({
    events: total,
    projects: PROJECTS,
    idempotency: values.idempotency,
    maxBatch: Number(values["max-batch"]),
    acknowledgement: {
      ...acknowledgement,
      latencyP50Ms: percentile(latencies, 0.5),
      latencyP99Ms: percentile(latencies, 0.99),
      // Includes sealing the events (encryption, as the service does per request).
    },
    integration: { ...integration, passes, maxEventsPerPass: Number(values.pass) },
  })}\n`,
);
await db.close();
await dropDatabase(DATABASE);
process.exit(0);
