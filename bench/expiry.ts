/**
 * The cost of retention's expiry on PostgreSQL (docs/lifecycle.md, "Retention"): N events
 * (1,000,000 by default) of one log, all older than its period, loaded straight by SQL into
 * a fresh database (journal rows with a ~1 KB payload, contexts, index rows with blind
 * indexes and ~30 search tokens, the tree's size), then expired by the service's expiry job
 * (src/lifecycle/retention-job.ts), each mode on its own fresh copy:
 *
 * 1. `partitions`: the rows stamped with the log's period (5 days), as acknowledgement
 *    stamps them, in that period's daily partitions (migration 12): the job writes the
 *    tombstones by INSERT ... SELECT and drops each expired day's partitions;
 * 2. `batched`: the same rows stamped 0 (kept for ever) before the log's period was set,
 *    as after a change of period: the job's batched path, 5,000 events a transaction
 *    (tombstoneEvents: a DELETE of the content rows, an INSERT of the tombstones).
 *
 * For each: wall time, WAL written, PostgreSQL CPU, dead tuples left for VACUUM, table
 * sizes, and the effect on concurrent ingestion (4 writers appending journal rows to
 * another log: rows/s and p99 latency, during the expiry against a quiet baseline).
 *
 * Usage: node --import tsx bench/expiry.ts [--events 1000000] [--mode partitions|batched|both]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import pino from "pino";
import { createRetentionJob } from "../src/lifecycle/retention-job.js";
import type { Db } from "../src/store/db.js";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { ensurePartitions } from "../src/store/retention-partitions.js";
import { commandCpuSeconds, dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "1000000" },
    mode: { type: "string", default: "both" },
  },
});
const EVENTS = Number(values.events);
const PROJECT = "0190a000-0000-7000-8000-000000000001";
const OTHER = "0190a000-0000-7000-8000-000000000002";
const PERIOD = 5;
const DAY_MS = 86_400_000;

/**
 * Loads the events by SQL: journal, contexts, index rows, log and tree sizes; stamped with
 * the period (`partitions`) or 0 (`batched`), whose period is then set.
 */
async function load(db: Db, stamp: number): Promise<void> {
  await migrate(db);
  for (const id of [PROJECT, OTHER]) {
    await db.query(
      "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'bench', 'pro', '\\x00')",
      [id],
    );
  }
  // The period's partitions, from the oldest event's day to 3 days ahead (the writers'
  // rows go to today's).
  await ensurePartitions(
    db,
    PERIOD,
    new Date(Date.now() - 41 * DAY_MS),
    new Date(Date.now() + 3 * DAY_MS),
  );
  // Received 10 to 40 days ago, spread evenly, in log-index order.
  const at = `now() - interval '40 days' + i * (interval '30 days' / ${EVENTS})`;
  const id = `('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid`;
  for (let from = 0; from < EVENTS; from += 100_000) {
    const to = Math.min(EVENTS, from + 100_000) - 1;
    await db.query(
      `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                           payload, xid, retention_days)
       select $1, 'live', ${id}, ${at}, ${at}, 1,
              decode(repeat(md5(i::text) || md5((i + 1)::text), 16), 'hex'), '1'::xid8, $4
         from generate_series($2::int, $3::int) as i`,
      [PROJECT, from, to, stamp],
    );
    await db.query(
      `insert into event_contexts (project_id, environment, event_id, key_version, ciphertext,
                                   received_at, retention_days)
       select $1, 'live', ${id}, 1, decode(repeat(md5(i::text), 6), 'hex'), ${at}, $4
         from generate_series($2::int, $3::int) as i`,
      [PROJECT, from, to, stamp],
    );
    await db.query(
      `insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                                actor_idx, entity_type_idx, entity_id_idx, action_idx,
                                search_tokens, received_at, retention_days)
       select $1, 'live', i, ${id}, '1'::xid8, ${at},
              decode(md5((i % 5000)::text) || md5('a'), 'hex'), decode(md5('t') || md5('t'), 'hex'),
              decode(md5(i::text) || md5('e'), 'hex'), decode(md5((i % 40)::text) || md5('x'), 'hex'),
              array(select ((i * 31 + k) % 200000)::bigint from generate_series(1, 30) as k),
              ${at}, $4
         from generate_series($2::int, $3::int) as i`,
      [PROJECT, from, to, stamp],
    );
  }
  await db.query(
    `update event_logs set size = $2, integrated_xid = '2', integrated_at = now()
      where project_id = $1 and environment = 'live'`,
    [PROJECT, EVENTS],
  );
  await db.query("insert into log_trees (project_id, environment, size) values ($1, 'live', $2)", [
    PROJECT,
    EVENTS,
  ]);
  await db.query(
    "insert into log_retention (project_id, environment, retention_days) values ($1, 'live', $2)",
    [PROJECT, PERIOD],
  );
  await db.query("vacuum analyze");
}

/**
 * Four writers appending journal rows to another log of the same period, one row per
 * transaction.
 */
function ingest(db: Db) {
  let stop = false;
  const latencies: number[] = [];
  const writers = Array.from({ length: 4 }, async () => {
    while (!stop) {
      const started = performance.now();
      await db.query(
        `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                             payload, retention_days)
         values ($1, 'live', gen_random_uuid(), now(), now(), 1, $2, $3)`,
        // The expiring log's period: its partitions are the ones the drops lock.
        [OTHER, randomBytes(1024), PERIOD],
      );
      latencies.push(performance.now() - started);
    }
  });
  const began = performance.now();
  return async () => {
    stop = true;
    await Promise.all(writers);
    const seconds = (performance.now() - began) / 1000;
    latencies.sort((a, b) => a - b);
    return {
      rowsPerSecond: Math.round(latencies.length / seconds),
      p99Ms: Number((latencies[Math.floor(latencies.length * 0.99)] ?? 0).toFixed(1)),
    };
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function measure(mode: "partitions" | "batched") {
  const name = `audit_bench_expiry_${mode}`;
  const db = createPostgresDb({ url: await recreateDatabase(name) });
  const loadStarted = performance.now();
  await load(db, mode === "partitions" ? PERIOD : 0);
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const size = async () => {
    const [row] = await db.query<{ mb: number }>(
      `select round(sum(pg_total_relation_size(c.oid)) / 1048576.0)::int as mb from pg_class c
        where c.relkind in ('r', 'p') and c.relnamespace = 'public'::regnamespace
          and (c.relname like 'event%')`,
    );
    return row?.mb ?? 0;
  };
  const sizeBefore = await size();

  const baseline = ingest(db);
  await sleep(5_000);
  const quiet = await baseline();

  const [lsn] = await db.query<{ lsn: string }>("select pg_current_wal_lsn()::text as lsn");
  const cpuBefore = await commandCpuSeconds("postgres");
  const during = ingest(db);
  const started = performance.now();
  const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? "silent" });
  const job = createRetentionJob({ db, logger, intervalMs: 3_600_000 });
  const run = await job.runOnce();
  const [stones] = await db.query<{ n: number }>(
    "select count(*)::int as n from event_tombstones where project_id = $1",
    [PROJECT],
  );
  const expired = stones?.n ?? 0;
  if (expired !== run.expired)
    console.error(`the job counted ${run.expired}, tombstones ${expired}`);
  const seconds = (performance.now() - started) / 1000;
  const busy = await during();
  const cpu = (await commandCpuSeconds("postgres")) - cpuBefore;
  const [wal] = await db.query<{ mb: number }>(
    "select round(pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) / 1048576.0)::int as mb",
    [lsn?.lsn],
  );
  await db.query("select pg_stat_force_next_flush()").catch(() => undefined);
  await sleep(1_000);
  const [dead] = await db.query<{ n: string }>(
    `select coalesce(sum(n_dead_tup), 0)::text as n from pg_stat_user_tables
      where relname like 'event%'`,
  );
  const figures = {
    mode,
    events: EVENTS,
    expired,
    loadSeconds: Number(loadSeconds.toFixed(1)),
    expirySeconds: Number(seconds.toFixed(1)),
    walMB: wal?.mb,
    postgresCpuSeconds: Number(cpu.toFixed(1)),
    deadTuplesLeft: Number(dead?.n ?? 0),
    contentMBBefore: sizeBefore,
    contentMBAfter: await size(),
    ingestQuiet: quiet,
    ingestDuringExpiry: busy,
  };
  console.log(JSON.stringify(figures));
  await db.close();
  await dropDatabase(name);
}

if (values.mode === "partitions" || values.mode === "both") await measure("partitions");
if (values.mode === "batched" || values.mode === "both") await measure("batched");
