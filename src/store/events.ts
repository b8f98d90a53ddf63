/**
 * The event repository's write path, with group commit. Events of concurrent requests
 * are gathered on the next turn of the event loop and written together in one
 * transaction: the idempotency claims, the monthly quota, the events and their
 * contexts. Each caller's promise settles only after that transaction commits, so an
 * event is acknowledged only once it is durable, and a failed transaction fails every
 * event in it (none is acknowledged). Rows hold ciphertext and blind indexes only.
 *
 * Invariants kept across batches and instances:
 * - one Idempotency-Key (per project and environment) yields one event: the claim is an
 *   insert that waits on any concurrent holder of the same key; two requests with one
 *   key in the same batch are split, the later one going to the next batch;
 * - the quota counter rows are locked in a fixed order, so batches never deadlock.
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

/**
 * A check of the events about to be created, run inside the batch's transaction after
 * the idempotency claims (the monthly quota): per event, in order, the error that
 * refuses it, or undefined.
 */
export type BatchCheck = (
  tx: Queryable,
  events: readonly NewEvent[],
) => Promise<(ServiceError | undefined)[]>;

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
  check?: BatchCheck;
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
export function createEventStore(db: Db, options: EventStoreOptions = {}): EventStore {
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
      void writeBatch(db, batch, options.check).finally(() => {
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

/** Writes one batch in one transaction and settles each caller. */
async function writeBatch(db: Db, batch: Pending[], check: BatchCheck | undefined): Promise<void> {
  let outcomes: (WriteResult | ServiceError)[];
  try {
    outcomes = await db.transaction(async (tx) => {
      const results: (WriteResult | ServiceError | undefined)[] = await claimKeys(
        tx,
        batch.map((pending) => pending.event),
      );
      const toCreate = batch.map((_, i) => i).filter((i) => results[i] === undefined);
      const candidates = toCreate.map((i) => batch[i]?.event).filter(isDefined);
      await insertEvents(tx, candidates);
      // The quota comes last: its counter rows stay locked until COMMIT, so the less
      // work after it, the less concurrent batches of the same projects wait.
      const refusals = check ? await check(tx, candidates) : [];
      const refused: NewEvent[] = [];
      toCreate.forEach((index, position) => {
        const event = batch[index]?.event;
        if (!event) return;
        const refusal = refusals[position];
        if (refusal) {
          results[index] = refusal;
          refused.push(event);
        } else {
          results[index] = {
            eventId: event.eventId,
            receivedAt: event.receivedAt,
            replayed: false,
          };
        }
      });
      await removeRefused(tx, refused);
      return results.map((result) => result ?? new Error("event left without an outcome")) as (
        | WriteResult
        | ServiceError
      )[];
    });
  } catch (error) {
    for (const pending of batch) pending.reject(error);
    return;
  }
  batch.forEach((pending, i) => {
    const outcome = outcomes[i];
    if (outcome instanceof Error) pending.reject(outcome);
    else if (outcome) pending.resolve(outcome);
  });
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

/**
 * Takes back the events the quota refused after their insert: their rows, contexts and
 * idempotency claims (a refused request leaves its key free for a retry).
 */
async function removeRefused(tx: Queryable, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const ids = [
    events.map((event) => event.projectId),
    events.map((event) => event.environment),
    events.map((event) => event.eventId),
  ];
  await tx.query(
    `delete from event_contexts c
      using unnest($1::uuid[], $2::text[], $3::uuid[]) as w(project_id, environment, id)
      where c.project_id = w.project_id and c.environment = w.environment and c.event_id = w.id`,
    ids,
  );
  await tx.query(
    `delete from events e
      using unnest($1::uuid[], $2::text[], $3::uuid[]) as w(project_id, environment, id)
      where e.project_id = w.project_id and e.environment = w.environment and e.id = w.id`,
    ids,
  );
  const keyed = events.filter((event) => event.idempotency !== undefined);
  if (keyed.length === 0) return;
  await tx.query(
    `delete from idempotency_keys k
      using unnest($1::uuid[], $2::text[], $3::bytea[]) as w(project_id, environment, key_hash)
      where k.project_id = w.project_id and k.environment = w.environment
        and k.key_hash = w.key_hash and k.event_id = any($4::uuid[])`,
    [
      keyed.map((event) => event.projectId),
      keyed.map((event) => event.environment),
      keyed.map((event) => event.idempotency?.keyHash ?? Buffer.alloc(0)),
      keyed.map((event) => event.eventId),
    ],
  );
}

// Search tokens travel as one bytea per event (fixed-size HMACs end to end) and are
// split back into an array in SQL: arrays of arrays cannot be unnested row by row.
const SEARCH_TOKEN_BYTES = 16;

async function insertEvents(tx: Queryable, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.query(
    `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
       payload, actor_idx, entity_type_idx, entity_id_idx, action_idx, tenant_idx, search_idx)
     select e.project_id, e.environment, e.id, e.occurred_at, e.received_at, e.key_version,
            e.payload, e.actor_idx, e.entity_type_idx, e.entity_id_idx, e.action_idx,
            e.tenant_idx,
            array(select substring(e.search from i for ${SEARCH_TOKEN_BYTES})
                    from generate_series(1, length(e.search), ${SEARCH_TOKEN_BYTES}) as i)
       from unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[], $5::timestamptz[],
                   $6::int[], $7::bytea[], $8::bytea[], $9::bytea[], $10::bytea[],
                   $11::bytea[], $12::bytea[], $13::bytea[])
         as e(project_id, environment, id, occurred_at, received_at, key_version, payload,
              actor_idx, entity_type_idx, entity_id_idx, action_idx, tenant_idx, search)`,
    [
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
      events.map((e) => Buffer.concat(e.sealed.searchIdx)),
    ],
  );
  const withContext = events.filter((e) => e.sealed.context !== undefined);
  if (withContext.length === 0) return;
  await tx.query(
    `insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
     select * from unnest($1::uuid[], $2::text[], $3::uuid[], $4::int[], $5::bytea[])`,
    [
      withContext.map((e) => e.projectId),
      withContext.map((e) => e.environment),
      withContext.map((e) => e.eventId),
      withContext.map((e) => e.sealed.keyVersion),
      withContext.map((e) => e.sealed.context ?? null),
    ],
  );
}

function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined;
}
