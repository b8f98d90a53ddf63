/**
 * The SQL of the event write path and the functions that run it: the one statement
 * that writes a batch (answers held Idempotency-Keys, counts the other events against
 * the monthly quota, claims the keys of those admitted, appends them to their logs'
 * journal with their contexts), and the two that settle events whose key another batch
 * won (give their count back, read the winning claims). Nothing here decides what an
 * outcome means to a caller (write-outcomes.ts does).
 *
 * Invariants of the statement (see the comments on it below):
 * - an event is written only with its Idempotency-Key's claim, an insert that waits on
 *   any concurrent holder of the same key and takes over only an expired claim;
 * - a counter row is locked by its upsert until the statement commits and raised only by
 *   as many events as fit under the plan's limit; only those are inserted;
 * - counter rows, then keys, are locked in a fixed order, so concurrent batches never
 *   deadlock;
 * - rows hold ids, timestamps and ciphertext only (nothing derivable: the integrator,
 *   log/integrator.ts, derives index, search token and log position behind the journal).
 */

import type { Db } from "./db.js";
import { retentionStamp } from "./retention.js";
import type { NewEvent, QuotaPolicy } from "./write-model.js";

/** What an Idempotency-Key's claim answers a replay with. */
export interface HeldClaim {
  event_id: string;
  received_at: Date;
  body_hash: Uint8Array;
}

/** A claim row with its key. */
export interface ClaimRow extends HeldClaim {
  project_id: string;
  environment: string;
  key_hash: Uint8Array;
}

// One statement, one round trip, its own transaction:
// - held: the batch's keys already claimed and not expired (replays and conflicts);
// - fresh: the other events, ranked in arrival order per (project, environment, month)
//   counter; each counter is raised by as many as fit under the plan's limit (locked in
//   a fixed order) and those ranked within it are admitted;
// - the admitted events' keys are claimed: an insert that waits on a concurrent holder
//   of the same key and takes over only an expired claim; an event whose key was taken
//   meanwhile by a batch that committed after this statement began is not written
//   ("lost": counted, not written; the caller gives its count back and answers from the
//   claim that won);
// - the written events and their contexts are inserted.
// One row per event of the batch, in order, tells its outcome.
// A batch without Idempotency-Keys (the common case) gets the statement without the
// claim steps: PostgreSQL sets up and runs fewer steps per statement (about 7% less
// of its CPU per event in batches of 16, bench/store-write.ts).

// Parameters $1-$15 are those of every batch; $16-$18 (the claims) only of keyed ones.
// The sealed payloads travel as one value ($14, base64: BLOBS) and the contexts as
// another ($15), each event's cut out by its start and length: PostgreSQL reads one
// large value much faster
// than an array of them (about 8 against 30 µs of its CPU per event, measured for the
// journal's design).
/**
 * The step that decodes a statement's payloads and contexts, each sent as the base64 text
 * of their concatenation (`slices`), once: materialized, so that a generic plan does not
 * decode them again for every row. Base64 text, not a bytea parameter: the driver sends
 * every parameter as text, and a bytea's text is hex, twice its size, which cost the
 * process a tenth of its CPU per event to write out (bench/bulk.ts profiles).
 */
export const BLOBS = (payloads: string, contexts: string) => `blobs as materialized (
  select decode(${payloads}::text, 'base64') as payloads,
         decode(${contexts}::text, 'base64') as contexts
)`;

const EVENT_COLUMNS = `
  $1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[], $5::timestamptz[], $6::int[],
  $7::int[], $8::int[], $9::int[], $10::int[], $11::date[]`;
const EVENT_NAMES = `
  project_id, environment, id, occurred_at, received_at, key_version, payload_at,
  payload_len, context_at, context_len, month`;

// From `fresh` (the events to count, with their rank): counts them against the quota and
// keeps as `admitted` those that fit.
const COUNT_STEPS = `
plan_limits as (
  select p.id as project_id, p.plan, l.lim
    from projects p
    join unnest($12::text[], $13::int[]) as l(plan, lim) on l.plan = p.plan
   where p.id in (select project_id from fresh)
),
counted as (
  insert into usage_counters as u (project_id, environment, month, count, last_added)
  select g.project_id, g.environment, g.month, least(g.n, pl.lim), least(g.n, pl.lim)
    from (select project_id, environment, month, count(*)::int as n
            from fresh group by project_id, environment, month) as g
    join plan_limits pl on pl.project_id = g.project_id
   order by g.project_id, g.environment, g.month
  on conflict (project_id, environment, month) do update
    set (count, last_added) = (
      select u.count + a.added, a.added
        from (select greatest(0, least(excluded.count, pl.lim - u.count)) as added
                from plan_limits pl where pl.project_id = u.project_id) as a)
  returning u.project_id, u.environment, u.month, u.count, u.last_added,
            (select pl.plan from plan_limits pl where pl.project_id = u.project_id) as plan
),
admitted as (
  select f.* from fresh f
    join counted c on c.project_id = f.project_id and c.environment = f.environment
                  and c.month = f.month
   where f.rank <= c.last_added
),`;

// Appends the events of `written` to their logs' journal (each row stamped with this
// transaction's id by its default), and their contexts. Both rows are stamped with the
// log's retention period, the partition they go to (docs/lifecycle.md).
const INSERT_STEPS = `
${BLOBS("$14", "$15")},
inserted as (
  insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                      payload, retention_days)
  select project_id, environment, id, occurred_at, received_at, key_version,
         substring(bl.payloads from payload_at for payload_len),
         ${retentionStamp("written.project_id", "written.environment")}
    from written, blobs bl
),
contexts as (
  insert into event_contexts (project_id, environment, event_id, key_version, ciphertext,
                              received_at, retention_days)
  select project_id, environment, id, key_version,
         substring(bl.contexts from context_at for context_len), received_at,
         ${retentionStamp("written.project_id", "written.environment")}
    from written, blobs bl where context_at is not null
)`;

const RANK = `row_number() over (partition by b.project_id, b.environment, b.month
                                 order by b.ord) as rank`;

const WRITE_EVENTS = `
with batch as (
  select * from unnest(${EVENT_COLUMNS}, $16::bytea[], $17::bytea[], $18::timestamptz[])
    with ordinality as b(${EVENT_NAMES}, key_hash, body_hash, expires_at, ord)
),
held as (
  -- One primary-key lookup per keyed event, whatever the table's size (the limit keeps
  -- the planner from turning the lateral subquery into a join it may hash).
  select k.project_id, k.environment, k.key_hash, k.event_id, k.received_at, k.body_hash
    from batch b
    cross join lateral (
      select * from idempotency_keys i
       where i.project_id = b.project_id and i.environment = b.environment
         and i.key_hash = b.key_hash and i.expires_at > b.received_at
       limit 1) as k
   where b.key_hash is not null
),
fresh as (
  select b.*, ${RANK}
    from batch b
   where not exists (select 1 from held h
                      where h.project_id = b.project_id and h.environment = b.environment
                        and h.key_hash = b.key_hash)
),${COUNT_STEPS}
claimed as (
  insert into idempotency_keys as k
    (project_id, environment, key_hash, body_hash, event_id, received_at, expires_at)
  select project_id, environment, key_hash, body_hash, id, received_at, expires_at
    from admitted where key_hash is not null
   order by project_id, environment, key_hash
  on conflict (project_id, environment, key_hash) do update
    set body_hash = excluded.body_hash, event_id = excluded.event_id,
        received_at = excluded.received_at, expires_at = excluded.expires_at
    where k.expires_at <= excluded.received_at
  returning k.event_id
),
written as (
  select a.* from admitted a
   where a.key_hash is null or a.id in (select event_id from claimed)
),${INSERT_STEPS}
select case when w.id is not null then 'written'
            when h.event_id is not null then 'held'
            when a.id is not null then 'lost'
            else 'refused' end as outcome,
       h.event_id, h.received_at, h.body_hash, c.count, c.plan
  from batch b
  left join written w on w.id = b.id
  left join admitted a on a.id = b.id
  left join held h on h.project_id = b.project_id and h.environment = b.environment
                  and h.key_hash = b.key_hash
  left join counted c on c.project_id = b.project_id and c.environment = b.environment
                     and c.month = b.month
 order by b.ord`;

const WRITE_UNKEYED_EVENTS = `
with batch as (
  select * from unnest(${EVENT_COLUMNS})
    with ordinality as b(${EVENT_NAMES}, ord)
),
fresh as (
  select b.*, ${RANK} from batch b
),${COUNT_STEPS}
written as (
  select * from admitted
),${INSERT_STEPS}
select case when w.id is not null then 'written' else 'refused' end as outcome,
       null::uuid as event_id, null::timestamptz as received_at, null::bytea as body_hash,
       c.count, c.plan
  from batch b
  left join written w on w.id = b.id
  left join counted c on c.project_id = b.project_id and c.environment = b.environment
                     and c.month = b.month
 order by b.ord`;

/** An event's outcome; the held claim's columns are null unless it was held. */
export interface OutcomeRow extends Nullable<HeldClaim> {
  outcome: "written" | "held" | "lost" | "refused";
  count: number | null;
  plan: string | null;
}

/** Each column of `T` may be null (SQL outer joins). */
export type Nullable<T> = { [K in keyof T]: T[K] | null };

/**
 * Runs the statement that writes a batch of events (`months`: each event's counting
 * period): one outcome row per event, in order. One round trip, its own transaction.
 */
export async function appendBatch(
  db: Db,
  events: readonly NewEvent[],
  months: readonly string[],
  quota: QuotaPolicy,
): Promise<OutcomeRow[]> {
  const plans = Object.keys(quota.limits);
  const payloads = slices(events.map((e) => e.sealed.payload));
  const contexts = slices(events.map((e) => e.sealed.context));
  const params = [
    events.map((e) => e.projectId),
    events.map((e) => e.environment),
    events.map((e) => e.eventId),
    events.map((e) => e.occurredAt),
    events.map((e) => e.receivedAt),
    events.map((e) => e.sealed.keyVersion),
    payloads.starts,
    payloads.lengths,
    contexts.starts,
    contexts.lengths,
    months,
    plans,
    plans.map((plan) => quota.limits[plan] ?? 0),
    payloads.blob,
    contexts.blob,
  ];
  const keyed = events.some((e) => e.idempotency !== undefined);
  return keyed
    ? db.query<OutcomeRow>(WRITE_EVENTS, [
        ...params,
        events.map((e) => e.idempotency?.keyHash ?? null),
        events.map((e) => e.idempotency?.bodyHash ?? null),
        events.map((e) => e.idempotency?.expiresAt ?? null),
      ])
    : db.query<OutcomeRow>(WRITE_UNKEYED_EVENTS, params);
}

/**
 * Gives back the count of events counted but not written (their key was lost). One
 * counter and one statement at a time: no lock is held while waiting for another.
 */
export async function giveBackCounts(
  db: Db,
  events: readonly NewEvent[],
  months: readonly string[],
): Promise<void> {
  for (const [i, event] of events.entries()) {
    await db.query(
      `update usage_counters set count = count - 1
        where project_id = $1 and environment = $2 and month = $3`,
      [event.projectId, event.environment, months[i]],
    );
  }
}

/** Reads the claims now held for the events' Idempotency-Keys. */
export function readClaims(db: Db, events: readonly NewEvent[]): Promise<ClaimRow[]> {
  return db.query<ClaimRow>(
    `select k.project_id, k.environment, k.key_hash, k.event_id, k.received_at, k.body_hash
       from idempotency_keys k
       join unnest($1::uuid[], $2::text[], $3::bytea[]) as w(project_id, environment, key_hash)
         on k.project_id = w.project_id and k.environment = w.environment
        and k.key_hash = w.key_hash`,
    [
      events.map((e) => e.projectId),
      events.map((e) => e.environment),
      events.map((e) => e.idempotency?.keyHash ?? null),
    ],
  );
}

/**
 * Values as one buffer, in base64 (`BLOBS` decodes it), and where each one is in it
 * (1-based starts, as SQL's substring counts); an absent value has a null start and
 * length.
 */
export function slices(values: readonly (Buffer | undefined)[]): {
  blob: string;
  starts: (number | null)[];
  lengths: (number | null)[];
} {
  const starts: (number | null)[] = [];
  const lengths: (number | null)[] = [];
  const present: Buffer[] = [];
  let at = 1;
  for (const value of values) {
    if (value === undefined) {
      starts.push(null);
      lengths.push(null);
      continue;
    }
    starts.push(at);
    lengths.push(value.length);
    present.push(value);
    at += value.length;
  }
  return { blob: Buffer.concat(present, at - 1).toString("base64"), starts, lengths };
}
