/**
 * The SQL of retention's expiry (docs/lifecycle.md, "Retention"): which logs have a
 * period, and one batch of one log's expired events turned into tombstones by the
 * tombstone model's own function (store/erasure-store.ts), so that an expired event is
 * exactly the tombstone an erasure leaves.
 *
 * Invariants:
 * - Only integrated events whose leaf is in the log's tree expire: the batch is read from
 *   `event_index` below `log_trees.size`, so a journal row without a log index, or an event
 *   whose leaf is still to be computed from its content, is left for a later run.
 * - A batch is one transaction holding the log's retention lock: every event of it is a
 *   tombstone, or none is (a crash leaves no half-erased event); two instances never work
 *   one log at once.
 * - Each run of a log is one `erasures` record (selector `retention`, receivedBefore the
 *   cutoff): created by the first batch, counted by each, completed by the last. A run cut
 *   short (SIGKILL) leaves its record pending; the next run of the log resumes it.
 */
import { uuidv7 } from "../ids.js";
import type { Queryable } from "./db.js";
import {
  addErased,
  completeErasure,
  insertErasure,
  type LogRef,
  tombstoneEvents,
} from "./erasure-store.js";

/** A log with a retention period, and its lock key. */
export interface RetainedLog extends LogRef {
  retentionDays: number;
  /** event_logs.lock_id: with RETENTION_LOCK_CLASS, the key of the log's retention lock. */
  lockId: number;
}

/**
 * The first half of the two-part advisory-lock keys of retention: distinct from the
 * integrator's one-part keys (PostgreSQL keeps the two key spaces apart) and from erasure's.
 */
export const RETENTION_LOCK_CLASS = 727_310_025;

const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** Who a retention run's erasure record names as requester. */
export const RETENTION_REQUESTER = "retention";

/** Every log with a retention period (retention_days > 0). */
export async function retainedLogs(db: Queryable): Promise<RetainedLog[]> {
  const rows = await db.query<{
    project_id: string;
    environment: string;
    retention_days: number;
    lock_id: number;
  }>(
    `select r.project_id, r.environment, r.retention_days, l.lock_id
       from log_retention r
       join event_logs l on l.project_id = r.project_id and l.environment = r.environment
      where r.retention_days > 0
      order by l.lock_id`,
  );
  return rows.map((row) => ({
    projectId: row.project_id,
    environment: row.environment,
    retentionDays: row.retention_days,
    lockId: row.lock_id,
  }));
}

/** What one batch did. */
export interface ExpiryBatch {
  /** False when another instance holds the log's retention lock: nothing was done. */
  locked: boolean;
  /** The run the batch belongs to. */
  run?: RetentionRun;
  /** Events this batch turned into tombstones. */
  expired: number;
  /** True when the log has no more expired integrated events (the run is complete). */
  done: boolean;
}

/**
 * One batch of a log's expiry, in `tx` (one transaction): takes the log's retention lock
 * (or gives up), resumes the log's pending retention run or starts one with `cutoff`, reads
 * up to `batchSize` of the log's lowest live log indexes, tombstones those received before
 * the run's cutoff, and completes the run when a batch finds none (a log with nothing to
 * expire gets no record). Reading in log-index
 * order from the lowest live one, a run stops at the first batch holding no expired event:
 * receivedAt follows log-index order up to the few milliseconds transactions overlap, and
 * an event left behind is the lowest live one at the next run.
 */
export async function expireBatch(
  tx: Queryable,
  log: RetainedLog,
  cutoff: Date,
  batchSize: number,
): Promise<ExpiryBatch> {
  const [lock] = await tx.query<{ locked: boolean }>(
    "select pg_try_advisory_xact_lock($1, $2) as locked",
    [RETENTION_LOCK_CLASS, log.lockId],
  );
  if (!lock?.locked) return { locked: false, expired: 0, done: false };
  const pending = await pendingRun(tx, log);
  const receivedBefore = pending?.receivedBefore ?? cutoff;
  // Rows stamped with the log's period expire by whole days, as their partition is dropped
  // (store/retention-partitions.ts): those received before the UTC day of the cutoff.
  // Rows stamped with another period (the log's period changed since) expire at the cutoff.
  const rows = await tx.query<{ log_index: string; expired: boolean }>(
    `select i.log_index::text as log_index,
            case when i.retention_days = $5 then i.received_at < $6
                 else i.received_at < $3 end as expired
       from event_index i
      where i.project_id = $1 and i.environment = $2
        -- Only events whose leaf is in the tree (a database upgraded from before the
        -- tree gets its old events' leaves later, computed from their content).
        and i.log_index < coalesce((select t.size from log_trees t
                                     where t.project_id = $1 and t.environment = $2), 0)
      order by i.log_index
      limit $4`,
    [
      log.projectId,
      log.environment,
      receivedBefore,
      batchSize,
      log.retentionDays,
      utcDayStart(receivedBefore),
    ],
  );
  const expiredIndexes = rows.filter((row) => row.expired).map((row) => BigInt(row.log_index));
  if (expiredIndexes.length === 0) {
    // Nothing (more) to expire: a run with nothing to do leaves no record.
    if (pending) await completeErasure(tx, pending.id);
    return { locked: true, ...(pending ? { run: pending } : {}), expired: 0, done: true };
  }
  const run = pending ?? (await startRun(tx, log, cutoff));
  const tombstoned = await tombstoneEvents(tx, log, expiredIndexes, { erasedAt: new Date() });
  await addErased(tx, run.id, tombstoned.length);
  return { locked: true, run, expired: tombstoned.length, done: false };
}

/** A retention run of a log: its erasure record's id and cutoff. */
export interface RetentionRun {
  id: string;
  receivedBefore: Date;
}

/** The start (00:00 UTC) of the day of `at`. */
export function utcDayStart(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 86_400_000) * 86_400_000);
}

/** The log's pending retention run, left by a run cut short (read under the log's lock). */
export async function pendingRun(tx: Queryable, log: LogRef): Promise<RetentionRun | undefined> {
  const [pending] = await tx.query<{ id: string; received_before: Date }>(
    `select id, received_before from erasures
      where project_id = $1 and environment = $2 and selector = 'retention'
        and status = 'pending'
      order by requested_at limit 1`,
    [log.projectId, log.environment],
  );
  return pending && { id: pending.id, receivedBefore: pending.received_before };
}

/** Records a new retention run of the log, pending, with its cutoff. */
export async function startRun(tx: Queryable, log: LogRef, cutoff: Date): Promise<RetentionRun> {
  const [position] = await tx.query<{ xid: string; id: string }>(
    `select integrated_xid::text as xid, integrated_id as id from event_logs
      where project_id = $1 and environment = $2`,
    [log.projectId, log.environment],
  );
  const record = await insertErasure(tx, {
    id: uuidv7(),
    projectId: log.projectId,
    environment: log.environment,
    selector: { kind: "retention", receivedBefore: cutoff },
    requestedBy: RETENTION_REQUESTER,
    // The integrated position when the run began, for the record: only integrated events
    // expire, and later runs take what was integrated after it.
    bound: { xid: BigInt(position?.xid ?? "0"), id: position?.id ?? NIL_UUID },
  });
  return { id: record.id, receivedBefore: cutoff };
}
