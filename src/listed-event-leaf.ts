/**
 * The leaf of an event as GET /api/events lists it, composed from the API's own renderer
 * (REST JSON of the StoredEvent message) and the tree stage's leaf: one definition for
 * the requests' thread (app.ts) and the derivation worker (derivation-worker.ts), so both
 * compute byte for byte what a verifier recomputes from the listed event.
 */
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

/** The leaf of a listed event (docs/verifiable-log.md). */
export function listedEventLeaf(
  crypto: LogCrypto = createNodeLogCrypto(),
): (event: ListedEvent) => Promise<Uint8Array> {
  return createListedEventLeaf(crypto, renderListedEvent);
}
