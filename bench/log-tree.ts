/**
 * The verifiable log's costs, against the local PostgreSQL (docs/verifiable-log.md):
 * 1. the leaf of an event (its REST JSON canonicalized, the commitment and the leaf), per
 *    event, in this process;
 * 2. tree maintenance: leaves appended in passes of --pass (as the integrator's stage does,
 *    src/verifiable-log/tree-append.ts), up to --leaves, with the process CPU per leaf;
 * 3. serving proofs from a tree of --leaves: --proofs inclusion proofs of random leaves
 *    (the latest checkpoint, the tiles, the leaf) and as many consistency proofs,
 *    one at a time, with p50 / p99 / max latency.
 * The lookup of an event's position by id (one indexed row of event_index) is not in the
 * proof figure.
 *
 * Usage: node --import tsx bench/log-tree.ts [--leaves 1000000] [--pass 5000] [--proofs 2000]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import pino from "pino";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { toBase64 } from "../src/tlog/bytes.js";
import { listedEventLeaf } from "../src/tlog/leaf.js";
import { createNodeLogCrypto } from "../src/tlog/node-crypto.js";
import { proveRecord, proveTree } from "../src/tlog/tree.js";
import { createCheckpointPublisher } from "../src/verifiable-log/checkpoint-publisher.js";
import { createLogSigning } from "../src/verifiable-log/log-signing.js";
import { appendLeaves } from "../src/verifiable-log/tree-append.js";
import { readCheckpoint, readLeaf, tileHashReader } from "../src/verifiable-log/tree-store.js";
import { dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    leaves: { type: "string", default: "1000000" },
    pass: { type: "string", default: "5000" },
    proofs: { type: "string", default: "2000" },
  },
});
const LEAVES = Number(values.leaves);
const PASS = Number(values.pass);
const PROOFS = Number(values.proofs);
const DATABASE = "audit_bench_log_tree";
const crypto = createNodeLogCrypto();
const db = createPostgresDb({ url: await recreateDatabase(DATABASE) });
await migrate(db);
const log = { projectId: randomUUID(), environment: "live" };

const cpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

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

// 3. Proofs.
const signing = createLogSigning({ crypto, issuer: "bench", seed: new Uint8Array(32).fill(1) });
const publisher = createCheckpointPublisher({
  db,
  crypto,
  signing,
  logger: pino({ level: "silent" }),
  intervalMs: 60_000,
});
t = performance.now();
await publisher.publishNow();
console.log(`checkpoint of ${LEAVES} leaves signed in ${(performance.now() - t).toFixed(1)} ms`);
const inclusion: number[] = [];
const proofCpu = cpu();
for (let i = 0; i < PROOFS; i++) {
  const index = Math.floor(Math.random() * LEAVES);
  const start = performance.now();
  const checkpoint = await readCheckpoint(db, log);
  const treeSize = checkpoint?.size ?? LEAVES;
  await proveRecord(crypto, treeSize, index, tileHashReader(crypto, db, log));
  await readLeaf(db, log, index);
  inclusion.push(performance.now() - start);
}
const proofCpuMs = ((cpu() - proofCpu) / PROOFS) * 1000;
inclusion.sort((a, b) => a - b);
console.log(
  `inclusion proof in ${LEAVES} leaves: p50 ${percentile(inclusion, 0.5).toFixed(2)} ms, p99 ${percentile(inclusion, 0.99).toFixed(2)} ms, max ${(inclusion.at(-1) ?? 0).toFixed(2)} ms (${PROOFS} proofs; ${proofCpuMs.toFixed(2)} ms process CPU each)`,
);
const consistency: number[] = [];
for (let i = 0; i < PROOFS; i++) {
  const from = 1 + Math.floor(Math.random() * (LEAVES - 1));
  const start = performance.now();
  await proveTree(crypto, LEAVES, from, tileHashReader(crypto, db, log));
  consistency.push(performance.now() - start);
}
consistency.sort((a, b) => a - b);
console.log(
  `consistency proof to ${LEAVES}: p50 ${percentile(consistency, 0.5).toFixed(2)} ms, p99 ${percentile(consistency, 0.99).toFixed(2)} ms`,
);
await publisher.stop();
await db.close();
await dropDatabase(DATABASE);
