/**
 * The cost of retention's expiry on PostgreSQL (docs/lifecycle.md, "Retention"): N events
 * (1,000,000 by default) of one log, all older than its period, loaded straight by SQL into
 * a fresh database (journal rows with a ~1 KB payload, contexts, index rows with blind
 * indexes and ~30 search tokens, the tree's size), then expired two ways, each on its own
 * fresh copy:
 *
 * 1. `job`: the service's expiry job (src/lifecycle/retention-job.ts): tombstones in batches
 *    of 5,000 (tombstoneEvents: a DELETE of the content rows, an INSERT of the tombstones);
 * 2. `partitions`: the same content in tables partitioned by day of receivedAt; expiry is
 *    the tombstones' INSERT ... SELECT and a DROP of the expired partitions.
 *
 * For each: wall time, WAL written, PostgreSQL CPU, dead tuples left for VACUUM, table
 * sizes, and the effect on concurrent ingestion (4 writers appending journal rows to
 * another log: rows/s and p99 latency, during the expiry against a quiet baseline).
 *
 * Usage: node --import tsx bench/expiry.ts [--events 1000000] [--mode job|partitions|both]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import pino from "pino";
import { createRetentionJob } from "../src/lifecycle/retention-job.js";
import type { Db } from "../src/store/db.js";
import { migrate } from "../src/store/migrations.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
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

/** Loads the events by SQL: journal, contexts, index rows, log and tree sizes. */
async function load(db: Db, partitioned: boolean): Promise<void> {
  await migrate(db);
  for (const id of [PROJECT, OTHER]) {
    await db.query(
      "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'bench', 'pro', '\\x00')",
      [id],
    );
  }
  if (partitioned) await partition(db);
  // Received 10 to 40 days ago, spread evenly, in log-index order.
  const start = `now() - interval '40 days'`;
  const step = `(interval '30 days' / ${EVENTS})`;
  for (let from = 0; from < EVENTS; from += 100_000) {
    const to = Math.min(EVENTS, from + 100_000) - 1;
    await db.query(
      `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                           payload, xid)
       select $1, 'live', ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid,
              ${start} + i * ${step}, ${start} + i * ${step}, 1,
              decode(repeat(md5(i::text) || md5((i + 1)::text), 16), 'hex'), '1'::xid8
         from generate_series($2::int, $3::int) as i`,
      [PROJECT, from, to],
    );
    await db.query(
      `insert into event_contexts (project_id, environment, event_id, key_version, ciphertext
                                   ${partitioned ? ", received_at" : ""})
       select $1, 'live', ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 1,
              decode(repeat(md5(i::text), 6), 'hex')
              ${partitioned ? `, ${start} + i * ${step}` : ""}
         from generate_series($2::int, $3::int) as i`,
      [PROJECT, from, to],
    );
    await db.query(
      `insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                                actor_idx, entity_type_idx, entity_id_idx, action_idx,
                                search_tokens${partitioned ? ", received_at" : ""})
       select $1, 'live', i, ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid,
              '1'::xid8, ${start} + i * ${step},
              decode(md5((i % 5000)::text) || md5('a'), 'hex'), decode(md5('t') || md5('t'), 'hex'),
              decode(md5(i::text) || md5('e'), 'hex'), decode(md5((i % 40)::text) || md5('x'), 'hex'),
              array(select ((i * 31 + k) % 200000)::bigint from generate_series(1, 30) as k)
              ${partitioned ? `, ${start} + i * ${step}` : ""}
         from generate_series($2::int, $3::int) as i`,
      [PROJECT, from, to],
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
    "insert into log_retention (project_id, environment, retention_days) values ($1, 'live', 5)",
    [PROJECT],
  );
  await db.query("vacuum analyze");
}

/**
 * Turns the three content tables into tables partitioned by day of receivedAt (the
 * design docs/lifecycle.md weighs): each becomes the parent of daily partitions.
 */
async function partition(db: Db): Promise<void> {
  await db.query(`alter table event_contexts add column received_at timestamptz not null`);
  await db.query(`alter table event_index add column received_at timestamptz not null`);
  for (const [table, key] of [
    ["events", "project_id, environment, xid, id, received_at"],
    ["event_contexts", "project_id, environment, event_id, received_at"],
    ["event_index", "project_id, environment, log_index, received_at"],
  ] as const) {
    await db.query(`alter table ${table} rename to ${table}_plain`);
    await db.query(
      `create table ${table} (like ${table}_plain including defaults) partition by range (received_at)`,
    );
    await db.query(`alter table ${table} add primary key (${key})`);
    await db.query(`drop table ${table}_plain`);
    for (let day = 45; day >= -1; day -= 1) {
      await db.query(
        `create table ${table}_d${day + 1} partition of ${table}
           for values from (date_trunc('day', now()) - interval '${day} days')
                        to (date_trunc('day', now()) - interval '${day - 1} days')`,
      );
    }
  }
  await db.query("create index event_index_search on event_index using gin (search_tokens)");
  await db.query(
    "create index event_index_by_actor on event_index (project_id, environment, actor_idx, occurred_at desc, id desc)",
  );
}

/** Expiry by partitions: the tombstones by INSERT ... SELECT, then DROP of each partition. */
async function expireByPartitions(db: Db): Promise<number> {
  const cutoff = "date_trunc('day', now() - interval '5 days')";
  const [count] = await db.query<{ n: number }>(
    `with t as (
       insert into event_tombstones (project_id, environment, log_index, id, received_at, erased_at)
       select project_id, environment, log_index, id, received_at, now() from event_index
        where received_at < ${cutoff}
       returning 1)
     select count(*)::int as n from t`,
  );
  const parts = await db.query<{ name: string }>(
    `select c.relname as name from pg_inherits i
       join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
      where p.relname in ('events', 'event_contexts', 'event_index')
        and pg_get_expr(c.relpartbound, c.oid) is not null
        and (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz
            <= ${cutoff}`,
  );
  for (const part of parts) await db.query(`drop table ${part.name}`);
  return count?.n ?? 0;
}

/** Four writers appending journal rows to another log, one row per transaction. */
function ingest(db: Db) {
  let stop = false;
  const latencies: number[] = [];
  const writers = Array.from({ length: 4 }, async () => {
    while (!stop) {
      const started = performance.now();
      await db.query(
        `insert into events (project_id, environment, id, occurred_at, received_at, key_version, payload)
         values ($1, 'live', gen_random_uuid(), now(), now(), 1, $2)`,
        [OTHER, randomBytes(1024)],
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

async function measure(mode: "job" | "partitions") {
  const name = `audit_bench_expiry_${mode}`;
  const db = createPostgresDb({ url: await recreateDatabase(name) });
  const loadStarted = performance.now();
  await load(db, mode === "partitions");
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
  let expired: number;
  if (mode === "job") {
    const job = createRetentionJob({
      db,
      logger: pino({ level: "silent" }),
      intervalMs: 3_600_000,
    });
    expired = (await job.runOnce()).expired;
  } else {
    expired = await expireByPartitions(db);
  }
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

if (values.mode === "job" || values.mode === "both") await measure("job");
if (values.mode === "partitions" || values.mode === "both") await measure("partitions");
