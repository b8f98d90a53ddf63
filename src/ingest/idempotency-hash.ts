/**
 * What "the same body" means for an Idempotency-Key: the same event once validated,
 * whatever protocol carried it. The hash is taken over a canonical form of the
 * validated event, never over the request's bytes, so that REST, Connect and gRPC (whose
 * JSON forms differ: protobuf drops an empty `changes`, REST keeps it) agree, and so
 * that a retry differing only in what the service ignores or would fill in itself
 * replays instead of answering 409 (which a client must not retry: it would mint a new
 * key and the event would be stored twice).
 *
 * The same: key order and white space; unknown fields (ignored); `actorType` absent or
 * `"user"` (the default); `changes` absent or `[]`; a change's `redacted` absent or
 * `false`; `occurredAt` spellings of one instant (`…T12:00:00Z`, `…T14:00:00.000+02:00`),
 * which are stored as the same UTC time. Different: any other value, an optional field
 * sent empty (`"tenantId": ""`, `"context": {}`) against absent, `action` against
 * `actionKey`, array order.
 */
import { hash } from "node:crypto";
import type { EventInput } from "../vocabulary/event-input.js";
import { canonicalJson } from "./canonical-json.js";

// Versions the canonical form, and keeps these hashes apart from the previous ones (the
// canonical JSON of the body as sent), which stored claims may still hold.
const DOMAIN = "audit.v1.Event idempotency v2\n";

/** The canonical form of a validated event (see the module comment). */
export function canonicalEvent(input: EventInput): Record<string, unknown> {
  const { changes, occurredAt, actorType, ...rest } = input;
  const form: Record<string, unknown> = { ...rest, actorType: actorType ?? "user" };
  if (occurredAt !== undefined) form.occurredAt = new Date(occurredAt).toISOString();
  if (changes !== undefined && changes.length > 0) {
    form.changes = changes.map(({ redacted, ...change }) =>
      redacted ? { ...change, redacted } : change,
    );
  }
  return form;
}

/** The body hash of an idempotency claim: SHA-256 of the versioned canonical form. */
export function eventBodyHash(input: EventInput): Buffer {
  return hash("sha256", DOMAIN + canonicalJson(canonicalEvent(input)), "buffer");
}
