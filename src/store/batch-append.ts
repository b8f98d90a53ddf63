/**
 * The write of one bulk request (POST /api/ingest/events, CreateEvents): its events are
 * appended to their log's journal together, in one transaction, or not at all. The
 * journal rows are the same as those of single events (store/journal-append.ts), so the
 * integrator sequences, indexes and proves them the same way (docs/write-path.md).
 *
 * One statement counts the whole batch against the monthly quota and inserts the events
 * and their contexts only if it fits: the counter row is raised by the batch's size only
 * when the result stays within the plan's limit, and locked until the statement commits,
 * so a batch is never partly admitted and the limit is never passed, whatever runs
 * concurrently here or on other instances (the single-event path locks the same row).
 *
 * With an Idempotency-Key, the batch's claim is inserted first in the same transaction:
 * the insert waits on a concurrent holder of the key, so two requests with one key store
 * one batch; the loser then reads the winner's claim (committed by then) and replays or
 * conflicts. A quota refusal rolls the claim back with the events. Batch keys live in
 * their own table: a key used for a batch and for a single event are unrelated.
 *
 * Lock order: the batch key, then the counter row. The single-event path locks counter
 * rows, then its own keys: no cycle, so no deadlock.
 */
import type { SealedEvent } from "../crypto/event-cipher.js";
import { ServiceError } from "../errors.js";
import type { Db, Queryable } from "./db.js";
import { type QuotaPolicy, utcMonth } from "./write-model.js";

/** One event of a batch, sealed. */
export interface BatchEvent {
  eventId: string;
  occurredAt: Date;
  sealed: SealedEvent;
}

/** The claim of a batch's Idempotency-Key. */
export interface BatchClaim {
  keyHash: Buffer;
  bodyHash: Buffer;
  expiresAt: Date;
  /** Per item of the request, in order: the id of its event, or null for a refused item. */
  eventIds: (string | null)[];
}

/** One request's batch. */
export interface NewBatch {
  projectId: string;
  environment: string;
  /** Shared by every event of the batch. */
  receivedAt: Date;
  /** In log order (their ids ascending, so that the log keeps the request's order). */
  events: BatchEvent[];
  claim: BatchClaim | undefined;
}

/** A claim already held for the batch's key. */
export interface HeldBatch {
  bodyHash: Buffer;
  eventIds: (string | null)[];
  receivedAt: Date;
}

/** The outcome of an append: stored now, or the key's earlier batch. */
export type BatchAppendResult = { kind: "stored" } | { kind: "held"; held: HeldBatch };

/** The batch write path. */
export interface BatchAppender {
  /**
   * Appends a batch; resolves after its transaction committed. Throws the quota's
   * refusal when the batch does not fit under the plan's limit (nothing is written).
   */
  append(batch: NewBatch): Promise<BatchAppendResult>;
  /** Deletes batch idempotency keys that expired before `now`; returns how many. */
  deleteExpiredKeys(now: Date): Promise<number>;
  /** Resolves when every append in flight has settled. */
  drain(): Promise<void>;
}

/** Options of the appender. */
export interface BatchAppenderOptions {
  quota: QuotaPolicy;
  /** Most appends at once (keep below the pool size: reads need connections too). */
  concurrency?: number;
  /** Called after an append that wrote events has committed (wakes the integrator). */
  onAppended?: () => void;
}

/** Creates the appender. */
export function createBatchAppender(db: Db, options: BatchAppenderOptions): BatchAppender {
  const concurrency = options.concurrency ?? 4;
  let running = 0;
  const waiting: (() => void)[] = [];
  const idleWaiters: (() => void)[] = [];

  const acquire = async () => {
    while (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
  };
  const release = () => {
    running--;
    waiting.shift()?.();
    if (running === 0 && waiting.length === 0) for (const wake of idleWaiters.splice(0)) wake();
  };

  return {
    async append(batch) {
      await acquire();
      try {
        const result = batch.claim
          ? await db.transaction((tx) => appendClaimed(tx, batch, batch.claim, options.quota))
          : await appendEvents(db, batch, options.quota);
        if (result.kind === "stored" && batch.events.length > 0) options.onAppended?.();
        return result;
      } finally {
        release();
      }
    },
    async deleteExpiredKeys(now) {
      const rows = await db.query(
        "delete from batch_idempotency_keys where expires_at <= $1 returning 1",
        [now],
      );
      return rows.length;
    },
    drain() {
      if (running === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

/** The claim, then the events; a held claim writes nothing. */
async function appendClaimed(
  tx: Queryable,
  batch: NewBatch,
  claim: BatchClaim | undefined,
  quota: QuotaPolicy,
): Promise<BatchAppendResult> {
  if (!claim) return appendEvents(tx, batch, quota);
  const key = [batch.projectId, batch.environment, claim.keyHash];
  // Takes over only an expired claim; waits on a holder whose transaction is open.
  const won = await tx.query(
    `insert into batch_idempotency_keys as k
       (project_id, environment, key_hash, body_hash, event_ids, received_at, expires_at)
     values ($1, $2, $3, $4, $5::uuid[], $6, $7)
     on conflict (project_id, environment, key_hash) do update
       set body_hash = excluded.body_hash, event_ids = excluded.event_ids,
           received_at = excluded.received_at, expires_at = excluded.expires_at
       where k.expires_at <= excluded.received_at
     returning 1`,
    [...key, claim.bodyHash, claim.eventIds, batch.receivedAt, claim.expiresAt],
  );
  if (won.length === 0) {
    // A new statement sees the holder's commit (read committed). The ids as JSON: both
    // drivers parse it alike (postgres.js leaves a uuid[] as its text).
    const [held] = await tx.query<{
      body_hash: Uint8Array;
      event_ids: (string | null)[];
      received_at: Date;
    }>(
      `select body_hash, to_json(event_ids) as event_ids, received_at from batch_idempotency_keys
        where project_id = $1 and environment = $2 and key_hash = $3`,
      key,
    );
    if (!held) throw new ServiceError("unavailable", "batch idempotency claim not found");
    return {
      kind: "held",
      held: {
        bodyHash: Buffer.from(held.body_hash),
        eventIds: held.event_ids,
        receivedAt: held.received_at,
      },
    };
  }
  return appendEvents(tx, batch, quota);
}

// One statement: the counter is raised by the batch's size only if the total stays
// within the plan's limit (a new row only if the batch alone fits); the events and
// their contexts are inserted only if it was. A counter row that is there but full is
// still locked by ON CONFLICT until the statement ends, so the refusal's figures are
// read after it, not raced.
const APPEND = `
with plan_limit as (
  select p.plan, l.lim
    from projects p
    join unnest($9::text[], $10::int[]) as l(plan, lim) on l.plan = p.plan
   where p.id = $1
),
counted as (
  insert into usage_counters as u (project_id, environment, month, count, last_added)
  select $1, $2, $4::date, $11::int, $11::int from plan_limit where $11::int <= lim
  on conflict (project_id, environment, month) do update
    set count = u.count + excluded.count, last_added = excluded.count
    where u.count + excluded.count <= (select lim from plan_limit)
  returning u.count
),
batch as (
  select * from unnest($5::uuid[], $6::timestamptz[], $7::int[], $8::bytea[], $12::bytea[])
    as b(id, occurred_at, key_version, payload, context)
   where exists (select 1 from counted)
),
inserted as (
  insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                      payload)
  select $1, $2, id, occurred_at, $3, key_version, payload from batch
  returning 1
),
contexts as (
  insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
  select $1, $2, id, key_version, context from batch where context is not null
)
select (select count(*)::int from inserted) as inserted,
       (select plan from plan_limit) as plan,
       (select lim from plan_limit) as lim`;

/** Appends the events counted against the quota, or throws its refusal. */
async function appendEvents(
  db: Queryable,
  batch: NewBatch,
  quota: QuotaPolicy,
): Promise<BatchAppendResult> {
  const { events } = batch;
  if (events.length === 0) return { kind: "stored" };
  const month = utcMonth(batch.receivedAt);
  const plans = Object.keys(quota.limits);
  const [row] = await db.query<{ inserted: number; plan: string | null; lim: number | null }>(
    APPEND,
    [
      batch.projectId,
      batch.environment,
      batch.receivedAt,
      month,
      events.map((e) => e.eventId),
      events.map((e) => e.occurredAt),
      events.map((e) => e.sealed.keyVersion),
      events.map((e) => e.sealed.payload),
      plans,
      plans.map((plan) => quota.limits[plan] ?? 0),
      events.length,
      events.map((e) => e.sealed.context ?? null),
    ],
  );
  if (row && row.inserted === events.length) return { kind: "stored" };
  if (!row?.plan || row.lim === null) {
    // No plan: the project is gone (deleted after its key was authenticated).
    throw new ServiceError("unavailable", "the batch's project has no plan");
  }
  const [counter] = await db.query<{ count: number }>(
    `select count from usage_counters
      where project_id = $1 and environment = $2 and month = $3::date`,
    [batch.projectId, batch.environment, month],
  );
  throw quota.refuse({ current: counter?.count ?? 0, limit: row.lim, plan: row.plan });
}
