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
 *
 * A value the database refuses (SQLSTATE class 22 or 23) fails the whole statement, and
 * nothing of it was written. Each event is then tried alone in a transaction that is
 * rolled back (a probe; postgres.js fails a transaction in which any statement failed,
 * so savepoints cannot do it), and the batch is appended again without the events
 * refused, which are named (`refused`); in atomic mode, or when none is left, nothing is
 * written and `RefusedValues` is thrown. Rare: what validation lets through is sealed
 * before it reaches the database, so no such value is known today.
 */
import type { SealedEvent } from "../crypto/event-cipher.js";
import { ServiceError } from "../errors.js";
import type { Db, Queryable } from "./db.js";
import { isRefusedValue } from "./group-commit.js";
import { BLOBS, slices } from "./journal-append.js";
import { retentionStamp } from "./retention.js";
import { type QuotaPolicy, utcMonth, type WritingListener } from "./write-model.js";

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
  /** All or nothing: an event whose value the database refuses refuses the batch. */
  atomic: boolean;
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

/**
 * The outcome of an append: stored now (but for the events whose value the database
 * refused, by id), or the key's earlier batch.
 */
export type BatchAppendResult =
  | { kind: "stored"; refused: ReadonlySet<string> }
  | { kind: "held"; held: HeldBatch };

/**
 * Thrown when the database refused a value of the batch and nothing was stored: the
 * batch was atomic, or every event was refused.
 */
export class RefusedValues extends Error {
  /** The ids of the events whose value the database refused. */
  readonly eventIds: ReadonlySet<string>;

  constructor(eventIds: ReadonlySet<string>) {
    super(`the database refused ${eventIds.size} event(s) of the batch`);
    this.name = "RefusedValues";
    this.eventIds = eventIds;
  }
}

const NONE_REFUSED: ReadonlySet<string> = new Set();

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
  /** Called with a batch's events just before they are written (write-model.ts). */
  onWriting?: WritingListener;
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
        options.onWriting?.(batch.events);
        let result: BatchAppendResult;
        try {
          result = batch.claim
            ? await db.transaction((tx) => appendClaimed(tx, batch, batch.claim, options.quota))
            : await appendEvents(db, batch, options.quota);
        } catch (error) {
          if (!isRefusedValue(error)) throw error;
          const refused = await refusedEvents(db, batch);
          // Refused, yet no event alone is: not an event's value; fail as it came.
          if (refused.size === 0) throw error;
          if (batch.atomic || refused.size === batch.events.length) {
            throw new RefusedValues(refused);
          }
          const rest = withoutRefused(batch, refused);
          const appended = rest.claim
            ? await db.transaction((tx) => appendClaimed(tx, rest, rest.claim, options.quota))
            : await appendEvents(db, rest, options.quota);
          result = appended.kind === "stored" ? { kind: "stored", refused } : appended;
        }
        if (result.kind === "stored" && batch.events.length > result.refused.size) {
          options.onAppended?.();
        }
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
  const held = await claimKey(tx, batch, claim);
  return held ? { kind: "held", held } : appendEvents(tx, batch, quota);
}

/** Claims the batch's key; returns the claim that holds it when another does. */
async function claimKey(
  tx: Queryable,
  batch: NewBatch,
  claim: BatchClaim,
): Promise<HeldBatch | undefined> {
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
  if (won.length > 0) return undefined;
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
    bodyHash: Buffer.from(held.body_hash),
    eventIds: held.event_ids,
    receivedAt: held.received_at,
  };
}

// One statement: the counter is raised by the batch's size only if the total stays
// within the plan's limit (a new row only if the batch alone fits); the events and
// their contexts are inserted only if it was. A counter row that is there but full is
// still locked by ON CONFLICT until the statement ends, so the refusal's figures are
// read after it, not raced. The sealed payloads travel as one value ($15, base64) and the
// contexts as another ($16), each event's cut out by its start and length, as the
// single-event path sends them (journal-append.ts): PostgreSQL reads one large value
// much faster than an array of them.
const COUNT = `
plan_limit as (
  select p.plan, l.lim
    from projects p
    join unnest($4::text[], $5::int[]) as l(plan, lim) on l.plan = p.plan
   where p.id = $1
),
counted as (
  insert into usage_counters as u (project_id, environment, month, count, last_added)
  select $1, $2, $3::date, $6::int, $6::int from plan_limit where $6::int <= lim
  on conflict (project_id, environment, month) do update
    set count = u.count + excluded.count, last_added = excluded.count
    where u.count + excluded.count <= (select lim from plan_limit)
  returning u.count
)`;

const APPEND = `
with ${COUNT},
batch as (
  select * from unnest($8::uuid[], $9::timestamptz[], $10::int[], $11::int[], $12::int[],
                       $13::int[], $14::int[])
    as b(id, occurred_at, key_version, payload_at, payload_len, context_at, context_len)
   where exists (select 1 from counted)
),
${BLOBS("$15", "$16")},
-- The log's retention period, stamped on its rows: the partition they go to.
retention as (select ${retentionStamp("$1::uuid", "$2::text")} as days),
inserted as (
  insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                      payload, retention_days)
  select $1, $2, id, occurred_at, $7, key_version,
         substring(bl.payloads from payload_at for payload_len), (select days from retention)
    from batch, blobs bl
  returning 1
),
contexts as (
  insert into event_contexts (project_id, environment, event_id, key_version, ciphertext,
                              received_at, retention_days)
  select $1, $2, id, key_version, substring(bl.contexts from context_at for context_len), $7,
         (select days from retention)
    from batch, blobs bl where context_at is not null
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
  if (events.length === 0) return { kind: "stored", refused: NONE_REFUSED };
  const payloads = slices(events.map((e) => e.sealed.payload));
  const contexts = slices(events.map((e) => e.sealed.context));
  const [row] = await db.query<CountRow>(APPEND, [
    ...countParams(batch, quota, events.length),
    batch.receivedAt,
    events.map((e) => e.eventId),
    events.map((e) => e.occurredAt),
    events.map((e) => e.sealed.keyVersion),
    payloads.starts,
    payloads.lengths,
    contexts.starts,
    contexts.lengths,
    payloads.blob,
    contexts.blob,
  ]);
  if (row && row.inserted === events.length) return { kind: "stored", refused: NONE_REFUSED };
  throw await quotaRefusal(db, batch, quota, row);
}

/** What APPEND answers. */
interface CountRow {
  inserted: number;
  plan: string | null;
  lim: number | null;
}

/** The parameters of APPEND's count ($1 to $6), in order. */
function countParams(batch: NewBatch, quota: QuotaPolicy, count: number): unknown[] {
  const plans = Object.keys(quota.limits);
  return [
    batch.projectId,
    batch.environment,
    utcMonth(batch.receivedAt),
    plans,
    plans.map((plan) => quota.limits[plan] ?? 0),
    count,
  ];
}

/** The quota's refusal of a batch that did not fit (`row`: what the count answered). */
async function quotaRefusal(
  db: Queryable,
  batch: NewBatch,
  quota: QuotaPolicy,
  row: CountRow | undefined,
): Promise<Error> {
  if (!row?.plan || row.lim === null) {
    // No plan: the project is gone (deleted after its key was authenticated).
    return new ServiceError("unavailable", "the batch's project has no plan");
  }
  const [counter] = await db.query<{ count: number }>(
    `select count from usage_counters
      where project_id = $1 and environment = $2 and month = $3::date`,
    [batch.projectId, batch.environment, utcMonth(batch.receivedAt)],
  );
  return quota.refuse({ current: counter?.count ?? 0, limit: row.lim, plan: row.plan });
}

// Thrown to roll a probe's transaction back once its insert has passed.
const PROBED = Symbol("probed");

/**
 * The events of the batch whose value the database refuses: each is inserted alone in
 * a transaction rolled back afterwards, whatever the outcome, so nothing is written.
 */
async function refusedEvents(db: Db, batch: NewBatch): Promise<Set<string>> {
  const refused = new Set<string>();
  for (const event of batch.events) {
    try {
      await db.transaction(async (tx) => {
        await tx.query(
          `insert into events (project_id, environment, id, occurred_at, received_at,
                               key_version, payload)
           values ($1, $2, $3, $4, $5, $6, $7)`,
          [
            batch.projectId,
            batch.environment,
            event.eventId,
            event.occurredAt,
            batch.receivedAt,
            event.sealed.keyVersion,
            event.sealed.payload,
          ],
        );
        if (event.sealed.context) {
          await tx.query(
            `insert into event_contexts (project_id, environment, event_id, key_version,
                                         ciphertext, received_at)
             values ($1, $2, $3, $4, $5, $6)`,
            [
              batch.projectId,
              batch.environment,
              event.eventId,
              event.sealed.keyVersion,
              event.sealed.context,
              batch.receivedAt,
            ],
          );
        }
        throw PROBED;
      });
    } catch (error) {
      if (error === PROBED) continue;
      if (!isRefusedValue(error)) throw error;
      refused.add(event.eventId);
    }
  }
  return refused;
}

/** The batch without its refused events; its claim names none of them. */
function withoutRefused(batch: NewBatch, refused: ReadonlySet<string>): NewBatch {
  return {
    ...batch,
    events: batch.events.filter((event) => !refused.has(event.eventId)),
    claim: batch.claim && {
      ...batch.claim,
      eventIds: batch.claim.eventIds.map((id) => (id !== null && refused.has(id) ? null : id)),
    },
  };
}
