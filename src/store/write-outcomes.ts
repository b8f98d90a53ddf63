/**
 * What each event of a written batch answers its caller: the event itself, a replay of
 * the original event when its Idempotency-Key was held with the same body, a conflict
 * (409) when the body differs, the quota's refusal when its month's count is full, and,
 * for an event whose key another batch won while both were in flight ("lost": counted,
 * not written), its count given back and the answer of the claim that won. An event
 * left without an outcome is answered 503 (unavailable); its retry replays or writes it.
 * The SQL is in journal-append.ts; the batching in group-commit.ts.
 */

import { Messages, ServiceError } from "../errors.js";
import type { Db } from "./db.js";
import {
  appendBatch,
  giveBackCounts,
  type HeldClaim,
  type Nullable,
  readClaims,
} from "./journal-append.js";
import { type NewEvent, type QuotaPolicy, utcMonth, type WriteResult } from "./write-model.js";

/** Writes a batch of events: per event, in order, its result or the error that refused it. */
export async function writeEvents(
  db: Db,
  events: NewEvent[],
  quota: QuotaPolicy,
): Promise<(WriteResult | ServiceError)[]> {
  const months = events.map((event) => utcMonth(event.receivedAt));
  const rows = await appendBatch(db, events, months, quota);
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
  await giveBackCounts(db, events, months);
  const claims = await readClaims(db, events);
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

/** An event's Idempotency-Key in its scope (project and environment), as a map key. */
export function idempotencyScope(
  event: { projectId: string; environment: string },
  keyHash: Uint8Array,
): string {
  return `${event.projectId}|${event.environment}|${Buffer.from(keyHash).toString("base64")}`;
}

/** The error of an event left without an outcome (503: its retry replays or writes it). */
export function unsettled(): ServiceError {
  return new ServiceError("unavailable", "event write left without an outcome");
}
