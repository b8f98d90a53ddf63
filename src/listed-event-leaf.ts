/**
 * The leaf of an event as GET /api/events lists it, composed from the API's own renderer
 * (REST JSON of the StoredEvent message) and the tree stage's leaf: one definition for
 * the requests' thread (app.ts) and the derivation worker (derivation-worker.ts), so both
 * compute byte for byte what a verifier recomputes from the listed event.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { StoredEventSchema } from "../gen/audit/v1/event_pb.js";
import { storedEventMessage } from "./api/event-operations.js";
import type { ListedEvent } from "./events/reader-query.js";
import type { LogCrypto } from "./tlog/crypto.js";
import { createNodeLogCrypto } from "./tlog/node-crypto.js";
import { restJson } from "./transport/rest-rendering.js";
import { createListedEventLeaf } from "./verifiable-log/event-tree-stage.js";

/** An event's JSON object exactly as GET /api/events renders it. */
export function renderListedEvent(event: ListedEvent): Record<string, unknown> {
  return restJson(StoredEventSchema, storedEventMessage(event)) as Record<string, unknown>;
}

/** Whether a JSON value has an object member named `__proto__` (set as a prototype by `[]=`). */
function hasProtoKey(value: JsonValue | undefined): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return value.some(hasProtoKey);
  for (const key of Object.keys(value)) {
    if (key === "__proto__" || hasProtoKey(value[key])) return true;
  }
  return false;
}

/**
 * The members of an event's REST JSON that its leaf commits to (tlog/leaf.ts
 * COMMITTED_FIELDS), built straight from the event: what renderListedEvent gives for
 * them, without building the protobuf message and rendering it back (~100 µs of the
 * derivation's ~500 per event, profiled). As the renderer: proto3 optional fields only
 * when set, the other strings always (empty when unset), an empty `changes` left out,
 * the context's and the changes' values as they are. Undefined where it does not promise
 * the same (a member named `__proto__`, a change without a value): the renderer then
 * does it. `test/verifiable-log/committed-record.test.ts` checks the two agree.
 */
export function committedEventRecord(event: ListedEvent): Record<string, unknown> | undefined {
  const { payload, context } = event;
  if (hasProtoKey(context)) return undefined;
  const record: Record<string, unknown> = {
    eventId: event.eventId,
    receivedAt: event.receivedAt.toISOString(),
    occurredAt: event.occurredAt.toISOString(),
    entityType: payload.entityType ?? "",
    entityId: payload.entityId ?? "",
    actorType: payload.actorType ?? "",
    actorId: payload.actorId ?? "",
  };
  if (payload.actionKey !== undefined) record.actionKey = payload.actionKey;
  if (payload.action !== undefined) record.action = payload.action;
  if (payload.actionDescription !== undefined) {
    record.actionDescription = payload.actionDescription;
  }
  if (payload.actorDisplay !== undefined) record.actorDisplay = payload.actorDisplay;
  if (payload.tenantId !== undefined) record.tenantId = payload.tenantId;
  if (payload.source !== undefined) record.source = payload.source;
  if (context !== undefined) record.context = context as JsonObject;
  const changes = payload.changes ?? [];
  if (changes.length > 0) {
    const rendered: Record<string, unknown>[] = [];
    for (const change of changes) {
      const { before, after } = change;
      if (before === undefined || after === undefined) return undefined;
      if (hasProtoKey(before) || hasProtoKey(after)) return undefined;
      // Members in canonical order, so that canonicalizing does not copy the item again.
      const item: Record<string, unknown> = { after, before };
      if (change.op !== undefined) item.op = change.op;
      if (change.path !== undefined) item.path = change.path;
      if (change.redacted !== undefined) item.redacted = change.redacted;
      rendered.push(item);
    }
    record.changes = rendered;
  }
  return record;
}

/** The leaf of a listed event (docs/verifiable-log.md). */
export function listedEventLeaf(
  crypto: LogCrypto = createNodeLogCrypto(),
): (event: ListedEvent) => Promise<Uint8Array> {
  return createListedEventLeaf(
    crypto,
    (event) => committedEventRecord(event) ?? renderListedEvent(event),
  );
}
