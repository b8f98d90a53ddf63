/**
 * The cost of retention's expiry on PostgreSQL (docs/lifecycle.md, "Retention"): N events
 * (1,000,000 by default) of one log, all older than its period, loaded by SQL into a fresh
 * database, then expired by the service's expiry job (src/lifecycle/retention-job.ts),
 * each mode on its own fresh copy:
 *
 * 1. `partitions`: the log's period (5 days) set before its events were acknowledged, so
 *    they are stamped with it and sit in its daily partitions (migration 12): the job
 *    writes the tombstones by INSERT ... SELECT and drops each expired day's partitions;
 * 2. `batched`: the same events acknowledged while the log kept them for ever (stamped 0),
 *    its period set afterwards: the job's batched path, 5,000 events a transaction
 *    (tombstoneEvents: a DELETE of the content rows, an INSERT of the tombstones).
 *
 * The rows are what the service writes, made by SQL for speed: each chunk of events is
 * one acknowledging transaction (its journal rows carry its xid), `receivedAt` has the
 * millisecond precision of the service's clock, and the contexts and index rows copy
 * their journal row's `received_at`, `retention_days` and `xid` as the acknowledgement and
 * the integrator do; the period is set and the partitions created by the service's own
 * functions. The tree is only its size: the job reads nothing else of it. The load is
 * checked against those invariants before the job runs, and the outcome after it.
 *
 * For each: wall time, WAL written, PostgreSQL CPU (the whole server's, and the bench
 * database's backends'), rows deleted and dead tuples left for VACUUM, table sizes, the
 * effect on concurrent ingestion (4 writers appending journal rows to another log of the
 * same period: rows/s and p99 latency, during the expiry against a quiet baseline), and
 * the counts: events expired by the job, tombstones written, content rows left, and the
 * writers' rows (younger than the period: none may be touched). A count that does not add
 * up is printed and makes the exit code 1.
 *
 * Usage: node --import tsx bench/expiry.ts [--events 1000000] [--mode partitions|batched|both]
 * (BENCH_LOG_LEVEL=info shows the job's log; BENCH_DATABASE_URL the server, bench/machine.ts)
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import pino from "pino";
import { createRetentionJob } from "../src/lifecycle/retention-job.js";
import type { Db } from "../src/store/db.js";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { retentionStamp, writeRetention } from "../src/store/retention.js";
import { createAhead, ensurePartitions } from "../src/store/retention-partitions.js";
import {
  commandCpuSeconds,
  databaseCpuSeconds,
  dropDatabase,
  recreateDatabase,
} from "./machine.js";

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
/** Events per acknowledging transaction of the load. */
const CHUNK = 20_000;

/**
 * Loads the events: journal rows, contexts and index rows, the log's size, integrated
 * position and tree size. `partitions`: the period is set first, so the rows are stamped
 * with it; `batched`: the rows are stamped 0 and the period set afterwards. Returns when
 * the load holds the write path's invariants (else throws).
 */
async function load(db: Db, mode: "partitions" | "batched"): Promise<void> {
  await migrate(db);
  for (const id of [PROJECT, OTHER]) {
    await db.query(
      "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'bench', 'pro', '\\x00')",
      [id],
    );
  }
  const now = Date.now();
  // As SetRetention does (partitions first, then the period): the writers' log has had the
  // period all along, and in `partitions` mode so has the expiring log, whose days the
  // job's earlier runs created ahead of its events.
  await createAhead(db, PERIOD, new Date(now));
  await writeRetention(db, OTHER, ["live"], PERIOD);
  if (mode === "partitions") {
    await ensurePartitions(db, PERIOD, new Date(now - 41 * DAY_MS), new Date(now));
    await writeRetention(db, PROJECT, ["live"], PERIOD);
  }
  // Received 10 to 40 days ago, spread evenly, in log-index order, to the millisecond
  // (the service's clock): one base instant for every table, not each statement's now().
  const from40 = new Date(now - 40 * DAY_MS);
  const step = `${(30 * DAY_MS) / EVENTS} milliseconds`;
  for (let from = 0; from < EVENTS; from += CHUNK) {
    const to = Math.min(EVENTS, from + CHUNK) - 1;
    // One statement, one transaction: the journal rows stamped by the acknowledgement's own
    // SQL with this transaction's xid (the column's default); the contexts and index rows
    // copy the journal row's keys, as the acknowledgement and the integrator do. `n`, the
    // log index, is read back from the id (its last 12 hex digits).
    await db.query(
      `with g as (
         select i, ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid as id,
                date_trunc('milliseconds', $4::timestamptz + i * $5::interval) as at
           from generate_series($2::int, $3::int) as i),
       e as (
         insert into events (project_id, environment, id, occurred_at, received_at,
                             key_version, payload, retention_days)
         select $1, 'live', g.id, g.at, g.at, 1,
                decode(repeat(md5(g.i::text) || md5((g.i + 1)::text), 16), 'hex'),
                ${retentionStamp("$1::uuid", "'live'")}
           from g
         returning id, xid, occurred_at, received_at, retention_days,
                   ('x' || lpad(right(id::text, 12), 16, '0'))::bit(64)::bigint as n),
       c as (
         insert into event_contexts (project_id, environment, event_id, key_version,
                                     ciphertext, received_at, retention_days)
         select $1, 'live', e.id, 1, decode(repeat(md5(e.n::text), 6), 'hex'),
                e.received_at, e.retention_days
           from e)
       insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                                actor_idx, entity_type_idx, entity_id_idx, action_idx,
                                search_tokens, received_at, retention_days)
       select $1, 'live', e.n, e.id, e.xid, e.occurred_at,
              decode(md5((e.n % 5000)::text) || md5('a'), 'hex'),
              decode(md5('t') || md5('t'), 'hex'),
              decode(md5(e.n::text) || md5('e'), 'hex'),
              decode(md5((e.n % 40)::text) || md5('x'), 'hex'),
              array(select ((e.n * 31 + k) % 200000)::bigint from generate_series(1, 30) as k),
              e.received_at, e.retention_days
         from e`,
      [PROJECT, from, to, from40, step],
    );
  }
  // The integrator's position after the last event, and the tree's size.
  await db.query(
    `update event_logs l set size = $2, integrated_xid = h.xid, integrated_id = h.id,
            integrated_at = now()
       from (select xid, id from events where project_id = $1 and environment = 'live'
              order by xid desc, id desc limit 1) as h
      where l.project_id = $1 and l.environment = 'live'`,
    [PROJECT, EVENTS],
  );
  await db.query("insert into log_trees (project_id, environment, size) values ($1, 'live', $2)", [
    PROJECT,
    EVENTS,
  ]);
  if (mode === "batched") {
    await createAhead(db, PERIOD, new Date(now));
    await writeRetention(db, PROJECT, ["live"], PERIOD);
  }
  await db.query("vacuum analyze");
  await checkLoad(db, mode === "partitions" ? PERIOD : 0);
}

/**
 * The write path's invariants on the loaded rows (docs/write-path.md): every journal row
 * has its context and its index row with the same keys, below the tree's size, stamped
 * `stamp`; no row left in a default partition.
 */
async function checkLoad(db: Db, stamp: number): Promise<void> {
  const [row] = await db.query<Record<string, number>>(
    `select (select count(*)::int from events where project_id = $1) as journal,
            (select count(*)::int from events e join event_contexts c
                on c.project_id = e.project_id and c.environment = e.environment
               and c.event_id = e.id and c.received_at = e.received_at
               and c.retention_days = e.retention_days
              where e.project_id = $1) as contexts,
            (select count(*)::int from events e join event_index i
                on i.project_id = e.project_id and i.environment = e.environment
               and i.xid = e.xid and i.id = e.id and i.received_at = e.received_at
               and i.retention_days = e.retention_days
              where e.project_id = $1 and i.log_index < $2) as indexed,
            (select count(*)::int from events where project_id = $1
                and retention_days = $3) as stamped,
            (select count(*)::int from events where tableoid::regclass::text like '%default')
              + (select count(*)::int from event_index
                  where tableoid::regclass::text like '%default') as in_default,
            (select count(distinct xid)::int from events where project_id = $1) as xids`,
    [PROJECT, EVENTS, stamp],
  );
  const wanted = { journal: EVENTS, contexts: EVENTS, indexed: EVENTS, stamped: EVENTS };
  for (const [name, n] of Object.entries(wanted)) {
    if (row?.[name] !== n) throw new Error(`load: ${name} ${row?.[name]}, not ${n}`);
  }
  if (row?.in_default !== 0) throw new Error(`load: ${row?.in_default} rows in default partitions`);
}

/**
 * Four writers appending journal rows to another log of the same period, one row per
 * transaction, stamped as the acknowledgement stamps them.
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
         values ($1, 'live', gen_random_uuid(), $2, $2, 1, $3,
                 ${retentionStamp("$1::uuid", "'live'")})`,
        [OTHER, new Date(), randomBytes(1024)],
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
      rows: latencies.length,
      rowsPerSecond: Math.round(latencies.length / seconds),
      p99Ms: Number((latencies[Math.floor(latencies.length * 0.99)] ?? 0).toFixed(1)),
    };
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU seconds of `name`'s backends since `before` (backends started since count whole). */
async function databaseCpuSince(name: string, before: Map<number, number>): Promise<number> {
  let total = 0;
  for (const [pid, after] of await databaseCpuSeconds(name))
    total += after - (before.get(pid) ?? 0);
  return total;
}

async function measure(mode: "partitions" | "batched"): Promise<boolean> {
  const name = `audit_bench_expiry_${mode}`;
  const url = await recreateDatabase(name);
  let db = createPostgresDb({ url });
  const loadStarted = performance.now();
  await load(db, mode);
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
  const backendsBefore = await databaseCpuSeconds(name);
  const during = ingest(db);
  const started = performance.now();
  const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? "silent" });
  const job = createRetentionJob({ db, logger, intervalMs: 3_600_000 });
  const run = await job.runOnce();
  const seconds = (performance.now() - started) / 1000;
  const busy = await during();
  const cpu = (await commandCpuSeconds("postgres")) - cpuBefore;
  const databaseCpu = await databaseCpuSince(name, backendsBefore);
  const [wal] = await db.query<{ mb: number }>(
    "select round(pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) / 1048576.0)::int as mb",
    [lsn?.lsn],
  );
  // Backends report their table statistics when they end: end them before reading.
  await db.close();
  db = createPostgresDb({ url });
  const [counts] = await db.query<Record<string, number>>(
    `select (select count(*)::int from event_tombstones where project_id = $1) as tombstones,
            (select coalesce(sum(erased), 0)::int from erasures
              where project_id = $1 and selector = 'retention') as recorded,
            (select count(*)::int from erasures
              where project_id = $1 and selector = 'retention' and status <> 'done') as pending,
            (select count(*)::int from events where project_id = $1)
              + (select count(*)::int from event_contexts where project_id = $1)
              + (select count(*)::int from event_index where project_id = $1) as left,
            (select count(*)::int from events where project_id = $2) as writers,
            (select count(*)::int from event_tombstones where project_id = $2) as writers_tombstoned`,
    [PROJECT, OTHER],
  );
  const [stats] = await db.query<{ deleted: string; dead: string }>(
    `select coalesce(sum(n_tup_del), 0)::text as deleted,
            coalesce(sum(n_dead_tup), 0)::text as dead
       from pg_stat_user_tables where relname like 'event%'`,
  );
  const figures = {
    mode,
    events: EVENTS,
    expiredByJob: run.expired,
    tombstones: counts?.tombstones,
    recordedInRuns: counts?.recorded,
    contentRowsLeft: counts?.left,
    writersRows: counts?.writers,
    writersRowsWritten: quiet.rows + busy.rows,
    loadSeconds: Number(loadSeconds.toFixed(1)),
    expirySeconds: Number(seconds.toFixed(1)),
    walMB: wal?.mb,
    postgresCpuSeconds: Number(cpu.toFixed(1)),
    databaseCpuSeconds: Number(databaseCpu.toFixed(1)),
    rowsDeleted: Number(stats?.deleted ?? 0),
    deadTuplesLeft: Number(stats?.dead ?? 0),
    contentMBBefore: sizeBefore,
    contentMBAfter: await size(),
    ingestQuiet: { rowsPerSecond: quiet.rowsPerSecond, p99Ms: quiet.p99Ms },
    ingestDuringExpiry: { rowsPerSecond: busy.rowsPerSecond, p99Ms: busy.p99Ms },
  };
  console.log(JSON.stringify(figures));
  // Every event expired once, with one tombstone, counted by the job and its run records;
  // none of the writers' (younger) rows touched.
  const wrong = [
    run.expired !== EVENTS && `the job expired ${run.expired} of ${EVENTS} events`,
    counts?.tombstones !== EVENTS && `${counts?.tombstones} tombstones for ${EVENTS} events`,
    counts?.recorded !== EVENTS && `the run records count ${counts?.recorded}`,
    counts?.pending !== 0 && `${counts?.pending} run records still pending`,
    counts?.left !== 0 && `${counts?.left} content rows of the expired log left`,
    counts?.writers !== figures.writersRowsWritten &&
      `the writers wrote ${figures.writersRowsWritten} rows, ${counts?.writers} are left`,
    counts?.writers_tombstoned !== 0 && `${counts?.writers_tombstoned} writers' rows tombstoned`,
  ].filter((each): each is string => typeof each === "string");
  for (const each of wrong) console.error(`${mode}: ${each}`);
  await db.close();
  await dropDatabase(name);
  return wrong.length === 0;
}

let ok = true;
if (values.mode === "partitions" || values.mode === "both")
  ok = (await measure("partitions")) && ok;
if (values.mode === "batched" || values.mode === "both") ok = (await measure("batched")) && ok;
if (!ok) process.exitCode = 1;
