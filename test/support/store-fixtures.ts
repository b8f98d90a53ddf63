/**
 * What the store's own tests share (no HTTP, no encryption): events with random
 * ciphertext and an optional Idempotency-Key claim
 * valid for 24 h, and a database that records the statements it runs.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Db } from "../../src/store/db.js";
import type { NewEvent } from "../../src/store/events.js";

/** What a test may set of a stored event; the rest is random. */
export interface NewEventOptions {
  occurredAt?: Date;
  /** An Idempotency-Key claim with this key hash (and `bodyHash`, random by default). */
  keyHash?: Buffer | undefined;
  bodyHash?: Buffer;
}

/** A new event of `projectId`'s live environment, received now. */
export function newStoredEvent(projectId: string, options: NewEventOptions = {}): NewEvent {
  const receivedAt = new Date();
  const { keyHash, bodyHash = randomBytes(32) } = options;
  return {
    projectId,
    environment: "live",
    eventId: randomUUID(),
    occurredAt: options.occurredAt ?? receivedAt,
    receivedAt,
    sealed: {
      keyVersion: 1,
      payload: randomBytes(64),
      context: randomBytes(32),
    },
    idempotency: keyHash
      ? { keyHash, bodyHash, expiresAt: new Date(receivedAt.getTime() + 86_400_000) }
      : undefined,
  };
}

/** `db` that also records the text of each statement run outside a transaction. */
export function recordingStatements(db: Db, statements: string[]): Db {
  return {
    ...db,
    driver: db.driver,
    query: (sql, params) => {
      statements.push(sql);
      return db.query(sql, params);
    },
    transaction: (work) => db.transaction(work),
    ping: () => db.ping(),
    close: () => db.close(),
  };
}
