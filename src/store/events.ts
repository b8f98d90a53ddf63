/**
 * The event repository's write path, with group commit. Events of concurrent requests
 * are gathered on the next turn of the event loop and written together: one SQL
 * statement counts them against the monthly quota, inserts those admitted with their
 * contexts, and gives back the idempotency keys of those refused. Each caller's promise
 * settles only after that statement's transaction commits, so an event is acknowledged
 * only once it is durable, and a failed write fails every event in it (none is
 * acknowledged). A batch without idempotency keys is one statement and one round trip;
 * with keys, the claims go first in the same transaction. Rows hold ciphertext and
 * blind indexes only.
 *
 * Invariants kept across batches and instances:
 * - one Idempotency-Key (per project and environment) yields one event: the claim is an
 *   insert that waits on any concurrent holder of the same key; two requests with one
 *   key in the same batch are split, the later one going to the next batch;
 * - the monthly count never passes the plan's limit: the counter row is locked by the
 *   upsert until the statement commits, and only as many events as fit are inserted;
 * - counter rows are locked in a fixed order, so concurrent batches never deadlock.
 */

import type { SealedEvent } from "../crypto/event-cipher.js";
import { Messages, ServiceError } from "../errors.js";
import type { Db, Queryable } from "./db.js";

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
}

interface Pending {
  event: NewEvent;
  resolve: (result: WriteResult) => void;
  reject: (error: unknown) => void;
}

interface ClaimRow {
  project_id: string;
  environment: string;
  key_hash: Uint8Array;
  event_id: string;
  received_at: Date;
  body_hash: Uint8Array;
}

/** Creates the repository. */
export function createEventStore(db: Db, options: EventStoreOptions): EventStore {
  const maxBatch = options.maxBatch ?? 500;
  const concurrency = options.concurrency ?? 4;
  let queue: Pending[] = [];
  let running = 0;
  let scheduled = false;
  const idleWaiters: (() => void)[] = [];

  const schedule = () => {
    if (scheduled || queue.length === 0 || running >= concurrency) return;
    scheduled = true;
    setImmediate(flush);
  };

  const flush = () => {
    scheduled = false;
    while (queue.length > 0 && running < concurrency) {
      const { batch, deferred } = splitBatch(queue, maxBatch);
      queue = deferred;
      running++;
      void writeBatch(db, batch, options.quota).finally(() => {
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
 * order) any event whose idempotency key is already in the batch.
 */
function splitBatch(queue: Pending[], max: number): { batch: Pending[]; deferred: Pending[] } {
  const batch: Pending[] = [];
  const deferred: Pending[] = [];
  const keys = new Set<string>();
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
  const events = batch.map((pending) => pending.event);
  let outcomes: (WriteResult | ServiceError)[];
  try {
    outcomes = events.some((event) => event.idempotency)
      ? await db.transaction(async (tx) => {
          const claims = await claimKeys(tx, events);
          const fresh = events.filter((_, i) => claims[i] === undefined);
          const written = await writeEvents(tx, fresh, quota);
          let next = 0;
          return claims.map((claim) => claim ?? written[next++] ?? unsettled());
        })
      : await writeEvents(db, events, quota);
  } catch (error) {
    for (const pending of batch) pending.reject(error);
    return;
  }
  batch.forEach((pending, i) => {
    const outcome = outcomes[i] ?? unsettled();
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
  });
}

function unsettled(): ServiceError {
  return new ServiceError("unavailable", "event write left without an outcome");
}

/**
 * Claims the batch's idempotency keys. Per event: undefined when it is to be created
 * (no key, or the key was new or expired and is now claimed), the original event on a
 * replay, or a conflict error when the key was used with another body.
 */
async function claimKeys(
  tx: Queryable,
  events: NewEvent[],
): Promise<(WriteResult | ServiceError | undefined)[]> {
  const results: (WriteResult | ServiceError | undefined)[] = events.map(() => undefined);
  const keyed = events
    .map((event, index) => ({ event, index, claim: event.idempotency }))
    .filter((entry): entry is { event: NewEvent; index: number; claim: IdempotencyClaim } =>
      Boolean(entry.claim),
    );
  if (keyed.length === 0) return results;

  // Takes each key when new or expired. A concurrent transaction holding one of the keys
  // makes this wait until it commits or rolls back.
  const claimed = await tx.query<{ project_id: string; environment: string; key_hash: Uint8Array }>(
    `insert into idempotency_keys
       (project_id, environment, key_hash, body_hash, event_id, received_at, expires_at)
     select * from unnest($1::uuid[], $2::text[], $3::bytea[], $4::bytea[], $5::uuid[],
                          $6::timestamptz[], $7::timestamptz[])
     on conflict (project_id, environment, key_hash) do update
       set body_hash = excluded.body_hash, event_id = excluded.event_id,
           received_at = excluded.received_at, expires_at = excluded.expires_at
       where idempotency_keys.expires_at <= excluded.received_at
     returning project_id, environment, key_hash`,
    [
      keyed.map(({ event }) => event.projectId),
      keyed.map(({ event }) => event.environment),
      keyed.map(({ claim }) => claim.keyHash),
      keyed.map(({ claim }) => claim.bodyHash),
      keyed.map(({ event }) => event.eventId),
      keyed.map(({ event }) => event.receivedAt),
      keyed.map(({ claim }) => claim.expiresAt),
    ],
  );
  const taken = new Set(claimed.map((row) => idempotencyScope(toScope(row), row.key_hash)));
  const held = keyed.filter(
    ({ event, claim }) => !taken.has(idempotencyScope(event, claim.keyHash)),
  );
  if (held.length === 0) return results;

  const existing = await tx.query<ClaimRow>(
    `select k.project_id, k.environment, k.key_hash, k.event_id, k.received_at, k.body_hash
       from idempotency_keys k
       join unnest($1::uuid[], $2::text[], $3::bytea[]) as w(project_id, environment, key_hash)
         on k.project_id = w.project_id and k.environment = w.environment
        and k.key_hash = w.key_hash`,
    [
      held.map(({ event }) => event.projectId),
      held.map(({ event }) => event.environment),
      held.map(({ claim }) => claim.keyHash),
    ],
  );
  const byScope = new Map(
    existing.map((row) => [idempotencyScope(toScope(row), row.key_hash), row]),
  );
  for (const { event, index, claim } of held) {
    const row = byScope.get(idempotencyScope(event, claim.keyHash));
    if (!row) throw new Error("idempotency key neither claimed nor found");
    results[index] = Buffer.from(row.body_hash).equals(claim.bodyHash)
      ? { eventId: row.event_id, receivedAt: row.received_at, replayed: true }
      : new ServiceError("conflict", Messages.idempotencyConflict);
  }
  return results;
}

function toScope(row: { project_id: string; environment: string }) {
  return { projectId: row.project_id, environment: row.environment };
}

// One statement: count the batch against each (project, environment, month) counter,
// admitting in arrival order (rank) as many as fit, insert the admitted events and
// their contexts, and delete the idempotency claims of the refused ones.
const WRITE_EVENTS = `
with batch as (
  select * from unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[],
                       $5::timestamptz[], $6::int[], $7::bytea[], $8::bytea[], $9::bytea[],
                       $10::bytea[], $11::bytea[], $12::bytea[], $13::text[], $14::bytea[],
                       $15::date[], $16::int[], $17::bytea[], $20::bytea[])
    as b(project_id, environment, id, occurred_at, received_at, key_version, payload,
         actor_idx, entity_type_idx, entity_id_idx, action_idx, tenant_idx, search_tokens,
         context, month, rank, key_hash, legacy_action_idx)
),
plan_limits as (
  select p.id as project_id, p.plan, l.lim
    from projects p
    join unnest($18::text[], $19::int[]) as l(plan, lim) on l.plan = p.plan
   where p.id in (select project_id from batch)
),
counted as (
  insert into usage_counters as u (project_id, environment, month, count, last_added)
  select g.project_id, g.environment, g.month, least(g.n, pl.lim), least(g.n, pl.lim)
    from (select project_id, environment, month, count(*)::int as n
            from batch group by project_id, environment, month) as g
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
  select b.* from batch b
    join counted c on c.project_id = b.project_id and c.environment = b.environment
                  and c.month = b.month
   where b.rank <= c.last_added
),
inserted as (
  insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                      payload, actor_idx, entity_type_idx, entity_id_idx, action_idx,
                      tenant_idx, legacy_action_idx, search_tokens)
  select project_id, environment, id, occurred_at, received_at, key_version, payload,
         actor_idx, entity_type_idx, entity_id_idx, action_idx, tenant_idx, legacy_action_idx,
         search_tokens::int8[]
    from admitted
),
contexts as (
  insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
  select project_id, environment, id, key_version, context
    from admitted where context is not null
),
released as (
  delete from idempotency_keys k
   using batch b
   where b.key_hash is not null and k.project_id = b.project_id
     and k.environment = b.environment and k.key_hash = b.key_hash and k.event_id = b.id
     and not exists (select 1 from admitted a where a.id = b.id)
)
select project_id, environment, month::text as month, count, last_added, plan from counted`;

interface CounterRow {
  project_id: string;
  environment: string;
  month: string;
  count: number;
  last_added: number;
  plan: string;
}

/**
 * Writes events that are not replays: per event, in order, its result or the quota
 * error that refused it.
 */
async function writeEvents(
  target: Queryable,
  events: NewEvent[],
  quota: QuotaPolicy,
): Promise<(WriteResult | ServiceError)[]> {
  if (events.length === 0) return [];
  const months = events.map((event) => utcMonth(event.receivedAt));
  const ranks = new Map<string, number>();
  const rankOf = events.map((event, i) => {
    const group = `${event.projectId}|${event.environment}|${months[i]}`;
    const rank = (ranks.get(group) ?? 0) + 1;
    ranks.set(group, rank);
    return rank;
  });
  const plans = Object.keys(quota.limits);
  const counters = await target.query<CounterRow>(WRITE_EVENTS, [
    events.map((e) => e.projectId),
    events.map((e) => e.environment),
    events.map((e) => e.eventId),
    events.map((e) => e.occurredAt),
    events.map((e) => e.receivedAt),
    events.map((e) => e.sealed.keyVersion),
    events.map((e) => e.sealed.payload),
    events.map((e) => e.sealed.actorIdx),
    events.map((e) => e.sealed.entityTypeIdx),
    events.map((e) => e.sealed.entityIdIdx),
    events.map((e) => e.sealed.actionIdx),
    events.map((e) => e.sealed.tenantIdx ?? null),
    // Each event's token ids as an int8[] literal: arrays of arrays cannot be unnested
    // row by row, so each row casts its own.
    events.map((e) => `{${e.sealed.searchTokens.join(",")}}`),
    events.map((e) => e.sealed.context ?? null),
    months,
    rankOf,
    events.map((e) => e.idempotency?.keyHash ?? null),
    plans,
    plans.map((plan) => quota.limits[plan] ?? 0),
    events.map((e) => e.sealed.legacyActionIdx ?? null),
  ]);
  const byGroup = new Map(
    counters.map((row) => [`${row.project_id}|${row.environment}|${row.month}`, row]),
  );
  return events.map((event, i) => {
    const counter = byGroup.get(`${event.projectId}|${event.environment}|${months[i]}`);
    if (!counter) throw new Error(`no usage counter for project ${event.projectId}`);
    if ((rankOf[i] ?? 0) <= counter.last_added) {
      return { eventId: event.eventId, receivedAt: event.receivedAt, replayed: false };
    }
    return quota.refuse({
      current: counter.count,
      limit: quota.limits[counter.plan] ?? 0,
      plan: counter.plan,
    });
  });
}

/** The first day of `at`'s UTC month, as a SQL date: the quota's counting period. */
export function utcMonth(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, "0")}-01`;
}
