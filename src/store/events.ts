/**
 * The event repository's write path, with group commit. Events of concurrent requests
 * are gathered on the next turn of the event loop and written together by one SQL
 * statement (one round trip, its own transaction): it answers replays of held
 * Idempotency-Keys, counts the other events against the monthly quota, claims the keys
 * of those admitted, and appends them to their logs' journal with their contexts. Each
 * caller's promise settles only after that statement has committed, so an event is
 * acknowledged only once it is durable, and a failed write fails every event in it (none
 * is acknowledged), except that a value the database refuses fails only its own event
 * (each is then written alone). Rows hold ids, timestamps and ciphertext only: nothing
 * derivable (index, search token, log position) is written here; the integrator
 * (log/integrator.ts) derives it behind the journal (docs/write-path.md).
 *
 * Invariants kept across batches and instances:
 * - one Idempotency-Key (per project and environment) yields one event: the claim is an
 *   insert that waits on any concurrent holder of the same key, and an event is written
 *   only with its claim; two requests with one key in the same batch are split, the
 *   later one going to the next batch;
 * - the monthly count never passes the plan's limit: the counter row is locked by the
 *   upsert until the statement commits, and only as many events as fit are inserted;
 *   an event counted whose key another instance's batch won meanwhile is given back right
 *   after (a second statement: until then, or if it fails, the count is that much high);
 * - counter rows, then keys, are locked in a fixed order, so concurrent batches never
 *   deadlock.
 */

import type { SealedEvent } from "../crypto/event-cipher.js";
import { Messages, ServiceError } from "../errors.js";
import type { Db } from "./db.js";

/** An idempotency claim: the key (hashed), the canonical body hash, its expiry. */
export interface IdempotencyClaim {
  keyHash: Buffer;
  bodyHash: Buffer;
  expiresAt: Date;
}

/** Everything written for one new event. */
export interface NewEvent {
  projectId: string;
  environment: string;
  eventId: string;
  occurredAt: Date;
  receivedAt: Date;
  sealed: SealedEvent;
  idempotency: IdempotencyClaim | undefined;
}

/** The outcome of a write: a new event, or the original one on an idempotent replay. */
export interface WriteResult {
  eventId: string;
  receivedAt: Date;
  replayed: boolean;
}

/** The figures of a quota refusal. */
export interface QuotaRefusal {
  current: number;
  limit: number;
  plan: string;
}

/** The monthly quota the store enforces as it writes. */
export interface QuotaPolicy {
  /** Events per UTC month and environment, by plan name. */
  limits: Readonly<Record<string, number>>;
  /** The error that refuses an event over the limit. */
  refuse(refusal: QuotaRefusal): ServiceError;
}

/** The event repository. */
export interface EventStore {
  /** Writes one event; resolves after its transaction has committed. */
  createEvent(event: NewEvent): Promise<WriteResult>;
  /** Deletes idempotency keys that expired before `now`; returns how many. */
  deleteExpiredIdempotencyKeys(now: Date): Promise<number>;
  /** Resolves when every accepted write has settled. */
  drain(): Promise<void>;
}

/** Options of the event store. */
export interface EventStoreOptions {
  /** The monthly quota. */
  quota: QuotaPolicy;
  /** Most events in one transaction. */
  maxBatch?: number;
  /** Most transactions at once (keep below the pool size: reads need connections too). */
  concurrency?: number;
  /** Called after a batch that appended events has committed (wakes the integrator). */
  onAppended?: () => void;
}

interface Pending {
  event: NewEvent;
  resolve: (result: WriteResult) => void;
  reject: (error: unknown) => void;
}

/** What an Idempotency-Key's claim answers a replay with. */
interface HeldClaim {
  event_id: string;
  received_at: Date;
  body_hash: Uint8Array;
}

/** A claim row with its key. */
interface ClaimRow extends HeldClaim {
  project_id: string;
  environment: string;
  key_hash: Uint8Array;
}

/** Creates the repository. */
export function createEventStore(db: Db, options: EventStoreOptions): EventStore {
  const maxBatch = options.maxBatch ?? 500;
  const concurrency = options.concurrency ?? 4;
  let queue: Pending[] = [];
  let running = 0;
  let scheduled = false;
  const idleWaiters: (() => void)[] = [];
  // Idempotency-Keys of the batches being written: a request with one of them waits for
  // that batch to commit, then replays it (rather than racing it and losing the key).
  const keysInFlight = new Set<string>();

  const schedule = () => {
    if (scheduled || queue.length === 0 || running >= concurrency) return;
    scheduled = true;
    setImmediate(flush);
  };

  const flush = () => {
    scheduled = false;
    while (queue.length > 0 && running < concurrency) {
      const { batch, deferred } = splitBatch(queue, maxBatch, keysInFlight);
      if (batch.length === 0) break;
      queue = deferred;
      const keys = batch.flatMap(({ event }) =>
        event.idempotency ? [idempotencyScope(event, event.idempotency.keyHash)] : [],
      );
      for (const key of keys) keysInFlight.add(key);
      running++;
      void writeBatch(db, batch, options.quota).finally(() => {
        options.onAppended?.();
        for (const key of keys) keysInFlight.delete(key);
        running--;
        schedule();
        if (running === 0 && queue.length === 0) {
          for (const wake of idleWaiters.splice(0)) wake();
        }
      });
    }
  };

  return {
    createEvent(event) {
      return new Promise<WriteResult>((resolve, reject) => {
        queue.push({ event, resolve, reject });
        schedule();
      });
    },
    async deleteExpiredIdempotencyKeys(now) {
      const rows = await db.query(
        "delete from idempotency_keys where expires_at <= $1 returning 1",
        [now],
      );
      return rows.length;
    },
    drain() {
      if (running === 0 && queue.length === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

/**
 * Takes up to `max` events from the queue for one batch, leaving in the queue (in
 * order) any event whose idempotency key is already in the batch or in `busy` (batches
 * being written).
 */
function splitBatch(
  queue: Pending[],
  max: number,
  busy: ReadonlySet<string>,
): { batch: Pending[]; deferred: Pending[] } {
  const batch: Pending[] = [];
  const deferred: Pending[] = [];
  const keys = new Set<string>(busy);
  for (const pending of queue) {
    if (batch.length >= max) {
      deferred.push(pending);
      continue;
    }
    const claim = pending.event.idempotency;
    if (claim) {
      const key = idempotencyScope(pending.event, claim.keyHash);
      if (keys.has(key)) {
        deferred.push(pending);
        continue;
      }
      keys.add(key);
    }
    batch.push(pending);
  }
  return { batch, deferred };
}

function idempotencyScope(
  event: { projectId: string; environment: string },
  keyHash: Uint8Array,
): string {
  return `${event.projectId}|${event.environment}|${Buffer.from(keyHash).toString("base64")}`;
}

/** Writes one batch and settles each caller once it has committed (or failed). */
async function writeBatch(db: Db, batch: Pending[], quota: QuotaPolicy): Promise<void> {
  let outcomes: (WriteResult | ServiceError)[];
  try {
    outcomes = await writeEvents(
      db,
      batch.map((pending) => pending.event),
      quota,
    );
  } catch (error) {
    // A value the database refused fails the whole statement, and nothing of it was
    // written: each event is tried alone, so that only the event that holds the value
    // fails, not those of other requests (or projects) that shared its batch.
    // One after the other, in arrival order (as the quota counts them), so that this
    // rare path never takes more connections than the batch did.
    if (batch.length > 1 && isRefusedValue(error)) {
      for (const pending of batch) await writeBatch(db, [pending], quota);
      return;
    }
    for (const pending of batch) pending.reject(error);
    return;
  }
  batch.forEach((pending, i) => {
    const outcome = outcomes[i] ?? unsettled();
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
  });
}

/**
 * True for the database's refusal of a value in the statement (SQLSTATE classes 22,
 * data exception, and 23, integrity constraint violation), as opposed to the database
 * or the connection failing, which would fail each event alone just the same.
 */
function isRefusedValue(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^2[23][0-9A-Z]{3}$/.test(code);
}

function unsettled(): ServiceError {
  return new ServiceError("unavailable", "event write left without an outcome");
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
// The sealed payloads travel as one bytea ($14) and the contexts as another ($15), each
// event's cut out by its start and length: PostgreSQL reads one large value much faster
// than an array of them (about 8 against 30 µs of its CPU per event, measured for the
// journal's design).
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
// transaction's id by its default), and their contexts.
const INSERT_STEPS = `
inserted as (
  insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                      payload)
  select project_id, environment, id, occurred_at, received_at, key_version,
         substring($14::bytea from payload_at for payload_len)
    from written
),
contexts as (
  insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
  select project_id, environment, id, key_version,
         substring($15::bytea from context_at for context_len)
    from written where context_at is not null
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
interface OutcomeRow extends Nullable<HeldClaim> {
  outcome: "written" | "held" | "lost" | "refused";
  count: number | null;
  plan: string | null;
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

/** Writes a batch of events: per event, in order, its result or the error that refused it. */
async function writeEvents(
  db: Db,
  events: NewEvent[],
  quota: QuotaPolicy,
): Promise<(WriteResult | ServiceError)[]> {
  const months = events.map((event) => utcMonth(event.receivedAt));
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
  const rows = keyed
    ? await db.query<OutcomeRow>(WRITE_EVENTS, [
        ...params,
        events.map((e) => e.idempotency?.keyHash ?? null),
        events.map((e) => e.idempotency?.bodyHash ?? null),
        events.map((e) => e.idempotency?.expiresAt ?? null),
      ])
    : await db.query<OutcomeRow>(WRITE_UNKEYED_EVENTS, params);
  const lost: number[] = [];
  const outcomes = events.map((event, i): WriteResult | ServiceError => {
    const row = rows[i];
    switch (row?.outcome) {
      case "written":
        return { eventId: event.eventId, receivedAt: event.receivedAt, replayed: false };
      case "held":
        return answerFromClaim(event, row);
      case "lost":
        lost.push(i);
        return unsettled();
      case "refused":
        // No counter: the project is unknown, so nothing was written for this event.
        if (row.count === null || row.plan === null) return unsettled();
        return quota.refuse({
          current: row.count,
          limit: quota.limits[row.plan] ?? 0,
          plan: row.plan,
        });
      default:
        return unsettled();
    }
  });
  if (lost.length > 0) {
    // The statement has committed: whatever happens now, the other events keep their
    // outcomes, and a lost one left unsettled is answered 503 (its retry replays).
    const settled = await settleLost(
      db,
      lost.map((i) => events[i] as NewEvent),
      lost.map((i) => months[i] as string),
    ).catch(() => []);
    lost.forEach((i, n) => {
      outcomes[i] = settled[n] ?? unsettled();
    });
  }
  return outcomes;
}

/**
 * Events counted against the quota whose Idempotency-Key another batch claimed first
 * (both were in flight at once): gives their count back, then answers each from the
 * claim that won, which has committed by now (the claim insert waited for it).
 */
async function settleLost(
  db: Db,
  events: NewEvent[],
  months: string[],
): Promise<(WriteResult | ServiceError)[]> {
  // One counter and one statement at a time: no lock is held while waiting for another.
  for (const [i, event] of events.entries()) {
    await db.query(
      `update usage_counters set count = count - 1
        where project_id = $1 and environment = $2 and month = $3`,
      [event.projectId, event.environment, months[i]],
    );
  }
  const claims = await db.query<ClaimRow>(
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
  const byScope = new Map(
    claims.map((row) => [
      idempotencyScope({ projectId: row.project_id, environment: row.environment }, row.key_hash),
      row,
    ]),
  );
  return events.map((event) =>
    answerFromClaim(
      event,
      event.idempotency && byScope.get(idempotencyScope(event, event.idempotency.keyHash)),
    ),
  );
}

/** A replay of the claim's event when the bodies match, a conflict when they differ. */
function answerFromClaim(
  event: NewEvent,
  claim: Nullable<HeldClaim> | undefined,
): WriteResult | ServiceError {
  if (!event.idempotency || !claim?.event_id || !claim.received_at || !claim.body_hash) {
    return unsettled();
  }
  return Buffer.from(claim.body_hash).equals(event.idempotency.bodyHash)
    ? { eventId: claim.event_id, receivedAt: claim.received_at, replayed: true }
    : new ServiceError("conflict", Messages.idempotencyConflict);
}

/**
 * Values as one buffer and where each one is in it (1-based starts, as SQL's substring
 * counts); an absent value has a null start and length.
 */
function slices(values: readonly (Buffer | undefined)[]): {
  blob: Buffer;
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
  return { blob: Buffer.concat(present), starts, lengths };
}

/** The first day of `at`'s UTC month, as a SQL date: the quota's counting period. */
export function utcMonth(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, "0")}-01`;
}
