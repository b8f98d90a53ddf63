/**
 * The event repository's write path, with group commit: the public entry of the modules
 * that make it up (importers outside src/store use this one).
 * - group-commit.ts: the queue that gathers concurrent events into batches and settles
 *   each caller once its batch has committed;
 * - journal-append.ts: the SQL that writes a batch in one statement (idempotency claims,
 *   the monthly quota, the journal append) and the functions that run it;
 * - write-outcomes.ts: what each event answers (written, replay, conflict, quota
 *   refusal, a lost key's count given back);
 * - write-model.ts: the shapes they share, and the quota's counting period.
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

import type { Db } from "./db.js";
import { createGroupCommit } from "./group-commit.js";
import type { EventStoreOptions, NewEvent, WriteResult } from "./write-model.js";

export type {
  EventStoreOptions,
  IdempotencyClaim,
  NewEvent,
  QuotaPolicy,
  QuotaRefusal,
  WriteResult,
} from "./write-model.js";
export { utcMonth } from "./write-model.js";

/** The event repository. */
export interface EventStore {
  /** Writes one event; resolves after its transaction has committed. */
  createEvent(event: NewEvent): Promise<WriteResult>;
  /** Deletes idempotency keys that expired before `now`; returns how many. */
  deleteExpiredIdempotencyKeys(now: Date): Promise<number>;
  /** Resolves when every accepted write has settled. */
  drain(): Promise<void>;
}

/** Creates the repository. */
export function createEventStore(db: Db, options: EventStoreOptions): EventStore {
  const writes = createGroupCommit(db, options);
  return {
    createEvent: (event) => writes.submit(event),
    async deleteExpiredIdempotencyKeys(now) {
      const rows = await db.query(
        "delete from idempotency_keys where expires_at <= $1 returning 1",
        [now],
      );
      return rows.length;
    },
    drain: () => writes.drain(),
  };
}
