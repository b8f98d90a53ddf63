/**
 * The shapes of the event write path, shared by its modules (events.ts, group-commit.ts,
 * write-outcomes.ts, journal-append.ts, batch-append.ts), and the quota's counting
 * period. A leaf: it imports no other module of the write path, so they never import in
 * a circle. events.ts re-exports all of it: importers outside src/store use that.
 */

import type { SealedEvent } from "../crypto/event-cipher.js";
import type { ServiceError } from "../errors.js";

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
  /**
   * Called with a batch's events just before its statement runs, so that the
   * integrator's plaintext cache holds them before any can be read (log/plaintext-cache.ts).
   */
  onWriting?: WritingListener;
}

/** Told of the events a statement is about to write (written or not, in the end). */
export type WritingListener = (events: readonly { eventId: string; sealed: SealedEvent }[]) => void;

/** The first day of `at`'s UTC month, as a SQL date: the quota's counting period. */
export function utcMonth(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, "0")}-01`;
}
