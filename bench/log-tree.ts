/**
 * The verifiable log's costs (docs/verifiable-log.md), against the local PostgreSQL, or
 * with --embedded against PGlite in a scratch directory:
 * 1. the leaf of an event (its REST JSON canonicalized, the commitment and the leaf), per
 *    event, in this process;
 * 2. tree maintenance: leaves appended in passes of --pass (as the integrator's stage does,
 *    src/verifiable-log/tree-append.ts), up to --leaves, with the process CPU per leaf;
 * 3. serving proofs from a tree of --leaves through the service's own read path
 *    (src/verifiable-log/log-service.ts: the event located by id, the latest checkpoint,
 *    the tiles and the leaf), --proofs inclusion proofs of random events, then as many
 *    consistency proofs between random published sizes, one at a time, with p50 / p99 /
 *    max latency. Each event has its event_index row (written here in bulk, as the
 *    integrator would) so that the lookup by id is measured too; the credential check is
 *    not (API keys are cached: bench/run.ts measures that path).
 *
 * Usage: node --import tsx bench/log-tree.ts [--leaves 1000000] [--pass 5000]
 *        [--proofs 2000] [--embedded] [--keep] [--reuse]
 * --keep leaves the PostgreSQL database in place; --reuse then measures the proofs again
 * on the tree it holds (building a million leaves takes minutes on a loaded machine).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import type { Authenticator } from "../src/auth/authenticator.js";
import { createKeyring } from "../src/crypto/keyring.js";
import type { Db } from "../src/store/db.js";
import { migrate } from "../src/store/migrations.js";
import { createPgliteDb } from "../src/store/pglite-driver.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { toBase64 } from "../src/tlog/bytes.js";
import { listedEventLeaf } from "../src/tlog/leaf.js";
import { createNodeLogCrypto } from "../src/tlog/node-crypto.js";
import { createCheckpointPublisher } from "../src/verifiable-log/checkpoint-publisher.js";
import { createLogReadService } from "../src/verifiable-log/log-service.js";
import { createLogSigning } from "../src/verifiable-log/log-signing.js";
import { appendLeaves } from "../src/verifiable-log/tree-append.js";
import { databaseUrl, dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    leaves: { type: "string", default: "1000000" },
    pass: { type: "string", default: "5000" },
    proofs: { type: "string", default: "2000" },
    embedded: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    reuse: { type: "boolean", default: false },
  },
});
const LEAVES = Number(values.leaves);
const PASS = Number(values.pass);
const PROOFS = Number(values.proofs);
const DATABASE = "audit_bench_log_tree";
const crypto = createNodeLogCrypto();
const dataDir = values.embedded ? await mkdtemp(join(tmpdir(), "audit-bench-log-")) : undefined;
const db: Db =
  dataDir === undefined
    ? createPostgresDb({
        url: values.reuse ? databaseUrl(DATABASE) : await recreateDatabase(DATABASE),
      })
    : await createPgliteDb(dataDir);
await migrate(db);
console.log(`driver: ${db.driver}`);
const [kept] = values.reuse
  ? await db.query<{ project_id: string }>(
      "select project_id from log_trees where environment = 'live' and size = $1",
      [LEAVES],
    )
  : [];
const log = { projectId: kept?.project_id ?? randomUUID(), environment: "live" as const };

const cpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
const eventId = (i: number) => `0193a5b2-7c1e-7d3f-8a9b-${i.toString(16).padStart(12, "0")}`;
const signing = createLogSigning({ crypto, issuer: "bench", seed: new Uint8Array(32).fill(1) });
const publisher = createCheckpointPublisher({
  db,
  crypto,
  signing,
  logger: pino({ level: "silent" }),
  intervalMs: 60_000,
});
// Published sizes for the consistency proofs: a few earlier ones, then the whole tree.
const sizes = [1, 1000, Math.floor(LEAVES / 3), Math.floor(LEAVES / 2), LEAVES - 1].filter(
  (n) => n >= 1 && n < LEAVES,
);

/** Parts 1 and 2, and what part 3 reads: each event's event_index row, the checkpoints. */
async function build() {
  // 1. Leaves of events as the list renders them.
  const sample = (i: number) => ({
    eventId: `0193a5b2-7c1e-7d3f-8a9b-${i.toString(16).padStart(12, "0")}`,
    receivedAt: new Date(1_764_000_000_000 + i).toISOString(),
    occurredAt: new Date(1_764_000_000_000 + i).toISOString(),
    actionKey: "invoice.paid",
    entityType: "invoice",
    entityId: `inv_${i}`,
    actorType: "user",
    actorId: `user_${i % 97}`,
    actorDisplay: "Alice Martin",
    tenantId: "acme",
    source: "billing-api",
    context: { ip: "203.0.113.7", amount: i * 1.5, tags: ["a", "b"], nested: { ok: true } },
    changes: [{ op: "set", path: "status", before: "open", after: "paid" }],
    logIndex: i,
    salt: toBase64(new Uint8Array(32).fill(i & 0xff)),
  });
  let t = cpu();
  const SAMPLE = 20_000;
  for (let i = 0; i < SAMPLE; i++) await listedEventLeaf(crypto, sample(i));
  console.log(
    `leaf of an event (JCS, commitment, leaf): ${(((cpu() - t) / SAMPLE) * 1e6).toFixed(1)} µs CPU`,
  );

  // 2. Tree maintenance.
  const leaf = new Uint8Array(65);
  leaf[0] = 1;
  let size = 0;
  const started = Date.now();
  t = cpu();
  while (size < LEAVES) {
    const count = Math.min(PASS, LEAVES - size);
    const leaves = Array.from({ length: count }, (_, i) => {
      const copy = leaf.slice();
      new DataView(copy.buffer).setUint32(1, size + i);
      return copy;
    });
    size = await db.transaction((tx) => appendLeaves(crypto, tx, log, size, leaves));
  }
  const wall = (Date.now() - started) / 1000;
  console.log(
    `tree of ${LEAVES} leaves in passes of ${PASS}: ${wall.toFixed(1)} s, ${((LEAVES / wall) | 0).toLocaleString("en")} leaves/s, ${(((cpu() - t) / LEAVES) * 1e6).toFixed(1)} µs process CPU per leaf`,
  );
  const [{ bytes } = { bytes: "0" }] = await db.query<{ bytes: string }>(
    "select pg_total_relation_size('log_tiles')::text as bytes",
  );
  console.log(
    `log_tiles: ${(Number(bytes) / 1024 / 1024).toFixed(1)} MiB (${(Number(bytes) / LEAVES) | 0} bytes per leaf)`,
  );

  // Each leaf's event_index row, as the integrator would write it (the proof finds the
  // event's position there by id).
  let at = performance.now();
  for (let from = 0; from < LEAVES; from += 250_000) {
    await db.query(
      `insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                                received_at, actor_idx, entity_type_idx, entity_id_idx,
                                action_idx, search_tokens)
       select $1, $2, g, ('0193a5b2-7c1e-7d3f-8a9b-' || lpad(to_hex(g), 12, '0'))::uuid,
              '1'::xid8, now(), now(), '\\x00', '\\x00', '\\x00', '\\x00', '{}'
         from generate_series($3::int8, $4::int8 - 1) as g`,
      [log.projectId, log.environment, from, Math.min(LEAVES, from + 250_000)],
    );
  }
  console.log(`event_index rows written in ${((performance.now() - at) / 1000).toFixed(1)} s`);
  // As autovacuum would after such growth: the planner's statistics.
  await db.query("analyze event_index");
  await db.query("analyze log_tiles");
  for (const n of sizes) {
    await db.query("update log_trees set size = $3 where project_id = $1 and environment = $2", [
      log.projectId,
      log.environment,
      n,
    ]);
    await publisher.publishNow();
  }
  await db.query("update log_trees set size = $3 where project_id = $1 and environment = $2", [
    log.projectId,
    log.environment,
    LEAVES,
  ]);
  at = performance.now();
  await publisher.publishNow();
  console.log(`checkpoint of ${LEAVES} leaves signed in ${(performance.now() - at).toFixed(1)} ms`);
}

if (kept === undefined) await build();
else console.log(`reusing the tree of ${LEAVES} leaves of log ${log.projectId}`);

// 3. Proofs, through the service's read path.
const principal = {
  kind: "api_key" as const,
  projectId: log.projectId,
  environment: log.environment,
  tenantId: undefined,
};
const authenticator: Authenticator = {
  requireApiKey: () => Promise.reject(new Error("not used")),
  requireReader: () => Promise.resolve(principal),
  invalidate: () => {},
};
const service = createLogReadService({
  db,
  crypto,
  authenticator,
  keyring: createKeyring({ db, masterKey: randomBytes(32) }),
  signing,
});
const credential = { kind: "api_key" as const, value: "pk_live_bench", via: "bearer" as const };
const timed = async (count: number, one: () => Promise<unknown>) => {
  const times: number[] = [];
  const before = cpu();
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await one();
    times.push(performance.now() - start);
  }
  const cpuMs = ((cpu() - before) / count) * 1000;
  times.sort((a, b) => a - b);
  return `p50 ${percentile(times, 0.5).toFixed(2)} ms, p99 ${percentile(times, 0.99).toFixed(2)} ms, max ${(times.at(-1) ?? 0).toFixed(2)} ms (${count}; ${cpuMs.toFixed(2)} ms process CPU each)`;
};
const inclusion = await timed(PROOFS, () =>
  service.inclusionProof(credential, { eventId: eventId(Math.floor(Math.random() * LEAVES)) }),
);
console.log(`inclusion proof in ${LEAVES} leaves, random events: ${inclusion}`);
const consistency = await timed(PROOFS, () =>
  service.consistencyProof(credential, {
    from: sizes[Math.floor(Math.random() * sizes.length)],
    to: LEAVES,
  }),
);
console.log(`consistency proof to ${LEAVES} from ${sizes.join(", ")}: ${consistency}`);
await publisher.stop();
await db.close();
if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
else if (!values.keep) await dropDatabase(DATABASE);
