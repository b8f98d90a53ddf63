/**
 * Group commit: events of concurrent requests are gathered on the next turn of the event
 * loop and written together by one statement (journal-append.ts), at most `concurrency`
 * batches at once and `maxBatch` events in each. Each caller's promise settles only
 * after its batch's statement has committed, so an event is acknowledged only once it is
 * durable, and a failed write fails every event in it (none is acknowledged), except
 * that a value the database refuses fails only its own event (each is then written
 * alone).
 *
 * Invariant: two requests with one Idempotency-Key (per project and environment) are
 * never in flight at once: the later one waits in the queue for a later batch, after
 * the earlier one's has committed, and then replays it rather than racing it.
 */

import type { ServiceError } from "../errors.js";
import type { Db } from "./db.js";
import type { EventStoreOptions, NewEvent, QuotaPolicy, WriteResult } from "./write-model.js";
import { idempotencyScope, unsettled, writeEvents } from "./write-outcomes.js";

interface Pending {
  event: NewEvent;
  resolve: (result: WriteResult) => void;
  reject: (error: unknown) => void;
}

/** The batching write queue of an event store. */
export interface GroupCommit {
  /** Queues one event; resolves after the batch that wrote it has committed. */
  submit(event: NewEvent): Promise<WriteResult>;
  /** Resolves when every accepted write has settled. */
  drain(): Promise<void>;
}

/** Creates the queue. */
export function createGroupCommit(db: Db, options: EventStoreOptions): GroupCommit {
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
      options.onWriting?.(batch.map(({ event }) => event));
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
    submit(event) {
      return new Promise<WriteResult>((resolve, reject) => {
        queue.push({ event, resolve, reject });
        schedule();
      });
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
export function isRefusedValue(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^2[23][0-9A-Z]{3}$/.test(code);
}
