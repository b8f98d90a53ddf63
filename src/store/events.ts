/**
 * The event repository. One transaction writes the idempotency claim, the event and its
 * context; the caller acknowledges the event only after `createEvent` resolves, which
 * is after COMMIT. Rows hold ciphertext and blind indexes only.
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
 * A check run inside the write transaction after the idempotency claim and before the
 * insert (the monthly quota goes here): it throws to refuse the event.
 */
export type InTransactionCheck = (tx: Queryable, event: NewEvent) => Promise<void>;

/** The event repository. */
export interface EventStore {
  createEvent(event: NewEvent, check?: InTransactionCheck): Promise<WriteResult>;
  /** Deletes idempotency keys that expired before `now`; returns how many. */
  deleteExpiredIdempotencyKeys(now: Date): Promise<number>;
}

interface ClaimRow {
  event_id: string;
  received_at: Date;
  body_hash: Uint8Array;
}

/** Creates the repository. */
export function createEventStore(db: Db): EventStore {
  const claim = async (tx: Queryable, event: NewEvent, idem: IdempotencyClaim) => {
    // Takes the key when it is new or expired. A concurrent transaction holding the same
    // key makes this wait until it commits or rolls back: exactly one event per key.
    const claimed = await tx.query(
      `insert into idempotency_keys
         (project_id, environment, key_hash, body_hash, event_id, received_at, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (project_id, environment, key_hash) do update
         set body_hash = excluded.body_hash, event_id = excluded.event_id,
             received_at = excluded.received_at, expires_at = excluded.expires_at
         where idempotency_keys.expires_at <= excluded.received_at
       returning event_id`,
      [
        event.projectId,
        event.environment,
        idem.keyHash,
        idem.bodyHash,
        event.eventId,
        event.receivedAt,
        idem.expiresAt,
      ],
    );
    if (claimed.length > 0) return undefined;
    const [existing] = await tx.query<ClaimRow>(
      `select event_id, received_at, body_hash from idempotency_keys
        where project_id = $1 and environment = $2 and key_hash = $3`,
      [event.projectId, event.environment, idem.keyHash],
    );
    if (!existing) throw new Error("idempotency key neither claimed nor found");
    if (!Buffer.from(existing.body_hash).equals(idem.bodyHash)) {
      throw new ServiceError("conflict", Messages.idempotencyConflict);
    }
    return { eventId: existing.event_id, receivedAt: existing.received_at, replayed: true };
  };

  return {
    createEvent(event, check) {
      return db.transaction(async (tx) => {
        if (event.idempotency) {
          const replay = await claim(tx, event, event.idempotency);
          if (replay) return replay;
        }
        if (check) await check(tx, event);
        const s = event.sealed;
        await tx.query(
          `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
             payload, actor_idx, entity_type_idx, entity_id_idx, action_idx, tenant_idx, search_idx)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::bytea[])`,
          [
            event.projectId,
            event.environment,
            event.eventId,
            event.occurredAt,
            event.receivedAt,
            s.keyVersion,
            s.payload,
            s.actorIdx,
            s.entityTypeIdx,
            s.entityIdIdx,
            s.actionIdx,
            s.tenantIdx ?? null,
            s.searchIdx,
          ],
        );
        if (s.context) {
          await tx.query(
            `insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
             values ($1, $2, $3, $4, $5)`,
            [event.projectId, event.environment, event.eventId, s.keyVersion, s.context],
          );
        }
        return { eventId: event.eventId, receivedAt: event.receivedAt, replayed: false };
      });
    },
    async deleteExpiredIdempotencyKeys(now) {
      const rows = await db.query(
        "delete from idempotency_keys where expires_at <= $1 returning 1",
        [now],
      );
      return rows.length;
    },
  };
}
