/**
 * Export and follow (docs/export.md) against the service as a separate process on the
 * local PostgreSQL:
 * 1. export: `--events` (1,000,000) events are seeded straight into one log's journal and
 *    index in bulk (sealed as ingestion seals them; their blind indexes are placeholders,
 *    an unfiltered export does not read them), then GET /api/events/export streams them all
 *    (NDJSON, and CSV); reported: events/s and the service's resident memory above what it
 *    held before (sampled every 50 ms from /proc);
 * 2. follow: `--followers` (100) SSE streams on a fresh log while `--rate` events/s are
 *    created over HTTP for `--seconds`; reported: the delay from each event's
 *    acknowledgement (its 201 received) to its arrival on every stream, p50/p99/max.
 *
 * Usage: node --import tsx bench/export.ts [--events 1000000] [--followers 100]
 *          [--rate 50] [--seconds 20] [--port 3917]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { generateApiKey } from "../src/auth/api-keys.js";
import { sealEvent } from "../src/crypto/event-cipher.js";
import { createKeyring } from "../src/crypto/keyring.js";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { createProjectStore } from "../src/store/projects.js";
import { dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "1000000" },
    followers: { type: "string", default: "100" },
    rate: { type: "string", default: "50" },
    seconds: { type: "string", default: "20" },
    port: { type: "string", default: "3917" },
  },
});
const TOTAL = Number(values.events);
const DATABASE = "audit_bench_export";
const masterKey = randomBytes(32);
const url = await recreateDatabase(DATABASE);
const db = createPostgresDb({ url });
await migrate(db);
const keyring = createKeyring({ db, masterKey });
const projects = createProjectStore(db, keyring);

/** A project with a live key: its id and the key's secret. */
async function provision() {
  const project = await projects.createProject("bench", "pro");
  const key = generateApiKey("live");
  await projects.createApiKey({
    projectId: project.id,
    environment: "live",
    keyHash: key.hash,
    prefix: key.prefix,
  });
  return { projectId: project.id, secret: key.secret };
}

// 1. Seed one log in bulk: journal rows and their index rows, 5,000 per statement.
const big = await provision();
const keys = await keyring.forProject(big.projectId);
const seedStarted = performance.now();
const BATCH = 5_000;
const zero = Buffer.alloc(16);
for (let start = 0; start < TOTAL; start += BATCH) {
  const count = Math.min(BATCH, TOTAL - start);
  const ids: string[] = [];
  const offsets: number[] = [];
  const lengths: number[] = [];
  const payloads: Buffer[] = [];
  let at = 1;
  for (let i = 0; i < count; i++) {
    const eventId = randomUUID();
    const sealed = await sealEvent(
      keys,
      { projectId: big.projectId, environment: "live", eventId },
      {
        entityType: "invoice",
        entityId: `inv_${start + i}`,
        actorType: "user",
        actorId: `user_${(start + i) % 977}`,
        actorDisplay: "Ada Lovelace",
        actionKey: "invoice.paid",
        tenantId: `tenant_${(start + i) % 13}`,
        source: "billing",
      },
      undefined,
    );
    ids.push(eventId);
    offsets.push(at);
    lengths.push(sealed.payload.length);
    payloads.push(sealed.payload);
    at += sealed.payload.length;
  }
  await db.query(
    `with r as (
       select * from unnest($3::uuid[], $4::int[], $5::int[]) with ordinality as r(id, at, len, n)
     ), e as (
       insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                           payload)
       select $1, $2, r.id, now(), now(), $6, substring($7::bytea from r.at for r.len) from r
       returning id, xid
     )
     insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                              actor_idx, entity_type_idx, entity_id_idx, action_idx,
                              search_tokens)
     select $1, $2, $8::int8 + r.n - 1, r.id, e.xid, now(), $9, $9, $9, $9, '{}'
       from r join e using (id)`,
    [
      big.projectId,
      "live",
      ids,
      offsets,
      lengths,
      keys.currentVersion,
      Buffer.concat(payloads),
      String(start),
      zero,
    ],
  );
}
await db.query(
  `update event_logs set size = $3, integrated_xid = pg_current_xact_id(),
          integrated_id = 'ffffffff-ffff-ffff-ffff-ffffffffffff', integrated_at = now()
    where project_id = $1 and environment = $2`,
  [big.projectId, "live", String(TOTAL)],
);
console.log(`seeded ${TOTAL} events in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
const followed = await provision();
await db.close();

// The service, as a process of its own.
const port = Number(values.port);
const base = `http://127.0.0.1:${port}`;
const service: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
  env: {
    ...process.env,
    DATABASE_URL: url,
    MASTER_KEY: masterKey.toString("base64"),
    TOKEN_SIGNING_KEY: randomBytes(32).toString("hex"),
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "warn",
    RATE_LIMIT_MAX: "1000000000",
  },
  stdio: ["ignore", "ignore", "inherit"],
});
const pid = service.pid ?? 0;
for (;;) {
  const ok = await fetch(`${base}/healthz`).then(
    (r) => r.ok,
    () => false,
  );
  if (ok) break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}

async function rssBytes(): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/** Streams an export to its end, counting lines; events/s and peak extra RSS. */
async function measureExport(format: "ndjson" | "csv", limit?: number) {
  const query = new URLSearchParams({ format, ...(limit ? { toIndex: String(limit - 1) } : {}) });
  const before = await rssBytes();
  let peak = before;
  const sampler = setInterval(() => {
    void rssBytes().then((rss) => {
      peak = Math.max(peak, rss);
    });
  }, 50);
  const started = performance.now();
  const response = await fetch(`${base}/api/events/export?${query}`, {
    headers: { authorization: `Bearer ${big.secret}` },
  });
  if (!response.ok || !response.body) throw new Error(`export: ${response.status}`);
  let newlines = 0;
  let bytes = 0;
  for await (const chunk of response.body) {
    bytes += chunk.length;
    for (const byte of chunk) if (byte === 10) newlines++;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const events = format === "csv" ? newlines - 1 : newlines;
  return { events, seconds, bytes, rate: events / seconds, extraRss: peak - before };
}

// Warm up (code paths, key cache, connections), then the whole log.
await measureExport("ndjson", 20_000);
for (const format of ["ndjson", "csv"] as const) {
  const run = await measureExport(format);
  console.log(
    `export ${format}: ${run.events} events in ${run.seconds.toFixed(1)} s = ${Math.round(run.rate)} events/s, ${(run.bytes / 1e6).toFixed(0)} MB, peak RSS +${(run.extraRss / 1e6).toFixed(1)} MB`,
  );
}

// 2. Follow latency: every follower receives every event; delay from acknowledgement.
const FOLLOWERS = Number(values.followers);
const acknowledged = new Map<string, number>();
const arrivals: [string, number][] = [];
const aborts: AbortController[] = [];
const readers: Promise<void>[] = [];
for (let i = 0; i < FOLLOWERS; i++) {
  const abort = new AbortController();
  aborts.push(abort);
  const response = await fetch(`${base}/api/events/stream`, {
    headers: { authorization: `Bearer ${followed.secret}` },
    signal: abort.signal,
  });
  if (!response.body) throw new Error("no stream");
  const body = response.body;
  readers.push(
    (async () => {
      const decoder = new TextDecoder();
      let buffer = "";
      try {
        for await (const chunk of body) {
          const now = performance.now();
          buffer += decoder.decode(chunk, { stream: true });
          for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (!data) continue;
            arrivals.push([(JSON.parse(data) as { eventId: string }).eventId, now]);
          }
        }
      } catch {
        // Aborted at the end.
      }
    })(),
  );
}
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const sent = rate * seconds;
const followStarted = performance.now();
const posts: Promise<void>[] = [];
for (let i = 0; i < sent; i++) {
  const due = followStarted + (i * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  posts.push(
    fetch(`${base}/api/ingest/event`, {
      method: "POST",
      headers: { authorization: `Bearer ${followed.secret}`, "content-type": "application/json" },
      body: JSON.stringify({
        actionKey: "user.login",
        entityType: "user",
        entityId: `u${i}`,
        actorId: `u${i}`,
      }),
    }).then(async (response) => {
      const at = performance.now();
      const body = (await response.json()) as { eventId: string };
      acknowledged.set(body.eventId, at);
    }),
  );
}
await Promise.all(posts);
const deadline = performance.now() + 10_000;
while (arrivals.length < sent * FOLLOWERS && performance.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 100));
}
for (const abort of aborts) abort.abort();
await Promise.all(readers);
// An event may reach a stream before its 201 has been read here: a delay of 0.
const delays = arrivals
  .map(([eventId, at]) => Math.max(0, at - (acknowledged.get(eventId) ?? Number.NaN)))
  .filter((delay) => !Number.isNaN(delay))
  .sort((a, b) => a - b);
const pct = (p: number) =>
  delays[Math.min(delays.length - 1, Math.floor(p * delays.length))] ?? NaN;
console.log(
  `follow: ${FOLLOWERS} followers, ${sent} events at ${rate}/s: ${delays.length} of ${sent * FOLLOWERS} deliveries; delay after acknowledgement p50 ${pct(0.5).toFixed(0)} ms, p99 ${pct(0.99).toFixed(0)} ms, max ${(delays.at(-1) ?? NaN).toFixed(0)} ms`,
);

service.kill("SIGTERM");
await new Promise((resolve) => service.once("exit", resolve));
await dropDatabase(DATABASE);
