/**
 * The partitions of the content tables (migration 12, docs/lifecycle.md "Partitioned
 * storage"): `events`, `event_contexts` and `event_index` are partitioned by the
 * retention period stamped on each row at acknowledgement, then by UTC day of
 * `received_at`. A (period, day) partition, `<table>_r<days>_<yyyymmdd>`, holds rows that
 * all expire on the same day; retention drops it whole, after writing its tombstones.
 *
 * Invariants:
 * - A partition is dropped only when every row in it has expired under its log's current
 *   period, has its leaf in the log's tree, and has its tombstone, written in the same
 *   transaction as the DROP (so readers see the content or the tombstone, never both nor
 *   neither). Rows of a log whose period has since become longer (or for ever) are first
 *   moved to that period's partitions (`restampLog`).
 * - One instance at a time drops or moves (a two-part advisory lock, RETENTION_LOCK_CLASS
 *   and 0; log lock ids start at 1), and it holds the retention lock of every log in the
 *   partition, so the batched path (store/retention-expiry.ts) never works those logs
 *   meanwhile.
 * - Creating partitions ahead never makes an insert fail: a row no partition takes goes
 *   to a DEFAULT partition (of its period, or of the periods) and expires by the batched
 *   path.
 */
import type { Db, Queryable } from "./db.js";
import { addErased, type LogRef, SCRUBBED_BODY_HASH } from "./erasure-store.js";
import { pendingRun, RETENTION_LOCK_CLASS, startRun } from "./retention-expiry.js";

const DAY_MS = 86_400_000;

/** The tables partitioned by period and day: every one that holds content. */
const CONTENT_TABLES = ["events", "event_contexts", "event_index"] as const;

/** `YYYY-MM-DD` of a UTC instant. */
function isoDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The name of a (period, day) partition of `table`. */
export function dayPartition(table: string, days: number, day: Date): string {
  return `${table}_r${days}_${isoDay(day).replaceAll("-", "")}`;
}

/**
 * Creates, where missing, the partitions of `days` (the period's own, and its days from
 * `first` to `last`, UTC): `audit_content_partitions` (migration 12). A day whose rows
 * already went to the period's default partition is not created. Returns how many tables
 * it created.
 */
export async function ensurePartitions(
  db: Queryable,
  days: number,
  first: Date,
  last: Date,
): Promise<number> {
  const [row] = await db.query<{ made: number }>(
    "select audit_content_partitions($1, $2::date, $3::date) as made",
    [days, isoDay(first), isoDay(last)],
  );
  return row?.made ?? 0;
}

/** The periods (days > 0) that have partitions of their own. */
export async function partitionedPeriods(db: Queryable): Promise<number[]> {
  const rows = await db.query<{ days: number }>(
    `select substring(c.relname from '^event_index_r([0-9]+)$')::int as days
       from pg_inherits h
       join pg_class c on c.oid = h.inhrelid
       join pg_class p on p.oid = h.inhparent
      where p.relname = 'event_index' and c.relname ~ '^event_index_r[0-9]+$'
      order by days`,
  );
  return rows.map((row) => row.days).filter((days) => days > 0);
}

/** The days (00:00 UTC) that have a partition of the period `days`, oldest first. */
export async function partitionDays(db: Queryable, days: number): Promise<Date[]> {
  const rows = await db.query<{ day: string }>(
    `select substring(c.relname from '_([0-9]{8})$') as day
       from pg_inherits h
       join pg_class c on c.oid = h.inhrelid
       join pg_class p on p.oid = h.inhparent
      where p.relname = $1 and c.relname ~ '_[0-9]{8}$'
      order by day`,
    [`event_index_r${days}`],
  );
  return rows.map(
    (row) => new Date(`${row.day.slice(0, 4)}-${row.day.slice(4, 6)}-${row.day.slice(6)}Z`),
  );
}

/** A log with rows in a partition, with its current period and lock key. */
export interface PartitionLog extends LogRef {
  lockId: number;
  /** The log's period now (0: for ever). */
  retentionDays: number;
}

/** What an attempt to drop a (period, day) partition did. */
export type DayDrop =
  /** Dropped: `expired` tombstones written, per log. */
  | { kind: "dropped"; expired: number; logs: { log: PartitionLog; expired: number }[] }
  /** Nothing to drop (the partition is gone). */
  | { kind: "gone" }
  /** Another instance holds the drop lock or a log's retention lock: try at the next run. */
  | { kind: "busy" }
  /** Rows in it have no leaf in their log's tree yet: try at the next run. */
  | { kind: "not-integrated" }
  /** Logs whose period is now longer (or for ever) have rows in it: move them first. */
  | { kind: "keepers"; logs: PartitionLog[] };

/**
 * In `tx` (one transaction): drops the (period `days`, `day`) partitions of the three
 * content tables, after writing the tombstones of their events, when every row in them
 * has expired at `now` (the caller checks that the day ended before `now - days`).
 * The tombstones count in each log's pending retention run (started here when the log
 * has none, with its own cutoff), which the batched path completes.
 */
export async function dropExpiredDay(
  tx: Queryable,
  days: number,
  day: Date,
  now: Date,
): Promise<DayDrop> {
  const [drop] = await tx.query<{ locked: boolean }>(
    "select pg_try_advisory_xact_lock($1, 0) as locked",
    [RETENTION_LOCK_CLASS],
  );
  if (!drop?.locked) return { kind: "busy" };
  const [events, contexts, index] = CONTENT_TABLES.map((table) => dayPartition(table, days, day));
  const [exists] = await tx.query<{ found: boolean }>(
    "select to_regclass($1) is not null as found",
    [index],
  );
  if (!exists?.found) {
    await tx.query(`drop table if exists ${events}, ${contexts}`);
    return { kind: "gone" };
  }
  // A reader waiting on these tables holds its place: give up rather than stall ingestion
  // behind a queued exclusive lock.
  await tx.query("set local lock_timeout = '2s'");
  const logs = (
    await tx.query<{
      project_id: string;
      environment: string;
      lock_id: number;
      retention_days: number;
    }>(
      `select x.project_id, x.environment, l.lock_id,
              coalesce(r.retention_days, 0) as retention_days
         from (select project_id, environment from ${events}
               union select project_id, environment from ${index}) as x
         join event_logs l on l.project_id = x.project_id and l.environment = x.environment
         left join log_retention r on r.project_id = x.project_id
                                  and r.environment = x.environment
        order by l.lock_id`,
    )
  ).map(
    (row): PartitionLog => ({
      projectId: row.project_id,
      environment: row.environment,
      lockId: row.lock_id,
      retentionDays: row.retention_days,
    }),
  );
  const keepers = logs.filter((log) => log.retentionDays === 0 || log.retentionDays > days);
  if (keepers.length > 0) return { kind: "keepers", logs: keepers };
  for (const log of logs) {
    const [lock] = await tx.query<{ locked: boolean }>(
      "select pg_try_advisory_xact_lock($1, $2) as locked",
      [RETENTION_LOCK_CLASS, log.lockId],
    );
    if (!lock?.locked) return { kind: "busy" };
  }
  // The period's tables, parents first as readers lock them: no deadlock with a reader.
  await tx.query(
    `lock table ${CONTENT_TABLES.map((t) => `${t}_r${days}`).join(", ")} in access exclusive mode`,
  );
  // Every journal row has its index row and its leaf in the tree: the leaf is computed
  // from the content, which must not go before.
  const [ready] = await tx.query<{ journal: number; in_tree: number }>(
    `select (select count(*)::int from ${events}) as journal,
            (select count(*)::int from ${index} i
               join log_trees t on t.project_id = i.project_id
                               and t.environment = i.environment
              where i.log_index < t.size) as in_tree`,
  );
  if (!ready || ready.journal !== ready.in_tree) return { kind: "not-integrated" };

  const erasedAt = new Date();
  const runs: string[] = [];
  for (const log of logs) {
    const cutoff = new Date(now.getTime() - log.retentionDays * DAY_MS);
    const run = (await pendingRun(tx, log)) ?? (await startRun(tx, log, cutoff));
    runs.push(run.id);
  }
  const written = await tx.query<{ lock_id: number; n: number }>(
    `with t as (
       insert into event_tombstones
         (project_id, environment, log_index, id, received_at, erased_at, erasure_id)
       select i.project_id, i.environment, i.log_index, i.id, i.received_at, $1, r.erasure_id
         from ${index} i
         join unnest($2::uuid[], $3::text[], $4::uuid[]) as r(project_id, environment, erasure_id)
           on r.project_id = i.project_id and r.environment = i.environment
       -- An erasure racing on a position tombstoned it already.
       on conflict do nothing
       returning project_id, environment)
     select l.lock_id, count(*)::int as n from t
       join event_logs l on l.project_id = t.project_id and l.environment = t.environment
      group by l.lock_id`,
    [erasedAt, logs.map((log) => log.projectId), logs.map((log) => log.environment), runs],
  );
  const counted = new Map(written.map((row) => [row.lock_id, row.n]));
  const perLog: { log: PartitionLog; expired: number }[] = [];
  for (const [i, log] of logs.entries()) {
    const expired = counted.get(log.lockId) ?? 0;
    await addErased(tx, runs[i] as string, expired);
    perLog.push({ log, expired });
  }
  // Idempotency claims on these events keep their key, not their body hash (as erasure).
  await tx.query(
    `update idempotency_keys set body_hash = $1
      where event_id in (select id from ${events}) and body_hash <> $1`,
    [SCRUBBED_BODY_HASH],
  );
  await tx.query(
    `update batch_idempotency_keys k set body_hash = $1
      where k.body_hash <> $1
        and exists (select 1 from unnest(k.event_ids) as u(id)
                     where u.id in (select id from ${events}))`,
    [SCRUBBED_BODY_HASH],
  );
  await tx.query(`drop table ${events}, ${contexts}, ${index}`);
  return {
    kind: "dropped",
    expired: perLog.reduce((sum, each) => sum + each.expired, 0),
    logs: perLog,
  };
}

/**
 * Moves a log's rows stamped with the period `from` to its current period (`log.
 * retentionDays`, longer or 0), in the three content tables, in `tx`: the log's period
 * became longer, so those rows must outlive their partitions. Partitions of the new period
 * are created for the days the rows span. Returns the journal rows moved, or undefined when
 * another instance holds the drop lock or the log's retention lock.
 */
export async function restampLog(
  tx: Queryable,
  log: PartitionLog,
  from: number,
  now: Date,
): Promise<number | undefined> {
  const [locks] = await tx.query<{ locked: boolean }>(
    "select pg_try_advisory_xact_lock($1, 0) and pg_try_advisory_xact_lock($1, $2) as locked",
    [RETENTION_LOCK_CLASS, log.lockId],
  );
  if (!locks?.locked) return undefined;
  if (log.retentionDays > 0) {
    const [span] = await tx.query<{ oldest: Date | null }>(
      `select min(received_at) as oldest from events
        where project_id = $1 and environment = $2 and retention_days = $3`,
      [log.projectId, log.environment, from],
    );
    if (span?.oldest) {
      await ensurePartitions(
        tx,
        log.retentionDays,
        span.oldest,
        new Date(Math.max(now.getTime(), span.oldest.getTime())),
      );
    }
  }
  let moved = 0;
  for (const table of CONTENT_TABLES) {
    const rows = await tx.query<{ n: number }>(
      `with m as (update ${table} set retention_days = $4
                   where project_id = $1 and environment = $2 and retention_days = $3
                   returning 1)
       select count(*)::int as n from m`,
      [log.projectId, log.environment, from, log.retentionDays],
    );
    if (table === "events") moved = rows[0]?.n ?? 0;
  }
  return moved;
}

/** The partitions of `days` to create ahead of `now`: from yesterday to three days on. */
export async function createAhead(db: Db, days: number, now: Date): Promise<number> {
  return db.transaction((tx) =>
    ensurePartitions(
      tx,
      days,
      new Date(now.getTime() - DAY_MS),
      new Date(now.getTime() + 3 * DAY_MS),
    ),
  );
}
