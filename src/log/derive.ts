/**
 * What the integrator derives from an event's opened payload: its blind indexes (the
 * filters' values and the search tokens), exactly as they would have been computed
 * from the request. The payload holds the strings HTML-encoded (spec 4.1) and the
 * indexes are of the values as sent, so each string is decoded first; decoding is exact
 * (ingest/html-encoding.ts).
 */
import {
  type EventIndexes,
  type EventPayload,
  type IndexedValues,
  indexesOf,
} from "../crypto/event-cipher.js";
import type { ProjectKeys } from "../crypto/keyring.js";
import { decodeHtml } from "../ingest/html-encoding.js";

/** The values an event's indexes are computed from, as the caller sent them. */
export function indexedValuesOf(payload: EventPayload): IndexedValues {
  const sent = (text: string | undefined) => (text === undefined ? undefined : decodeHtml(text));
  const actionKey = sent(payload.actionKey);
  const action = sent(payload.action);
  // The texts `q` searches, in the order of the spec's list of fields.
  const searchable = [
    sent(payload.actorId),
    sent(payload.actorDisplay),
    sent(payload.entityType),
    sent(payload.entityId),
    actionKey,
    action,
    sent(payload.actionDescription),
    sent(payload.tenantId),
    sent(payload.source),
  ].filter((text): text is string => text !== undefined);
  return {
    actorId: decodeHtml(payload.actorId),
    entityType: decodeHtml(payload.entityType),
    entityId: decodeHtml(payload.entityId),
    action: actionKey ?? action ?? "",
    // The action filter matches either field of an event sent with both.
    legacyAction:
      actionKey !== undefined && action !== undefined && action !== actionKey ? action : undefined,
    tenantId: sent(payload.tenantId),
    searchable,
  };
}

/** An event's blind indexes, from its opened payload. */
export function deriveIndexes(keys: ProjectKeys, payload: EventPayload): EventIndexes {
  return indexesOf(keys, indexedValuesOf(payload));
}
