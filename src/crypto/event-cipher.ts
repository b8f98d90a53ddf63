/**
 * Sealing events for storage and opening them again. Every field of an event but its
 * ids and timestamps becomes ciphertext: the fields in one `payload`, the `context`
 * apart (it lives in its own table). Associated data binds each ciphertext to its
 * project, environment, event and column. Filters and search use blind indexes.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ChangeInput } from "../vocabulary/event-input.js";
import { open, seal } from "./aead.js";
import { blindIndex, blindIndexesOf, searchTokenIds, searchTokens } from "./blind-index.js";
import type { ProjectKeys } from "./keyring.js";

/** The fields of an event kept in its encrypted payload (strings already encoded). */
export interface EventPayload {
  actionKey?: string;
  action?: string;
  actionDescription?: string;
  entityType: string;
  entityId: string;
  actorType: string;
  actorId: string;
  actorDisplay?: string;
  tenantId?: string;
  source?: string;
  changes?: ChangeInput[];
}

/** Values the blind indexes are computed from: what the caller sent, before encoding. */
export interface IndexedValues {
  actorId: string;
  entityType: string;
  entityId: string;
  /** actionKey, or the legacy action. */
  action: string;
  /** The legacy action of an event that also has an actionKey: the filter matches both. */
  legacyAction: string | undefined;
  tenantId: string | undefined;
  /** Texts searched by `q`. */
  searchable: string[];
}

/** Where a ciphertext belongs. */
export interface EventAddress {
  projectId: string;
  environment: string;
  eventId: string;
}

/** An event ready to be written. */
export interface SealedEvent {
  keyVersion: number;
  payload: Buffer;
  context: Buffer | undefined;
  actorIdx: Buffer;
  entityTypeIdx: Buffer;
  entityIdIdx: Buffer;
  actionIdx: Buffer;
  tenantIdx: Buffer | undefined;
  legacyActionIdx: Buffer | undefined;
  /** The search tokens' ids (blind-index.ts `searchTokenIds`). */
  searchTokens: bigint[];
}

const aad = (at: EventAddress, column: string) =>
  `event:${at.projectId}:${at.environment}:${at.eventId}:${column}`;

// Only so much of each text feeds the search index; longer texts are still stored whole.
const SEARCH_TEXT_LIMIT = 1024;

/** The blind index of a filter value, as the list operation will query it. */
export function filterIndex(keys: ProjectKeys, column: string, value: string): Buffer {
  return blindIndex(keys.indexKey, column, value);
}

/** The id of a search token (blind-index.ts), as stored and as queried. */
export function searchTokenId(keys: ProjectKeys, token: string): bigint {
  const [id] = searchTokenIds(keys.indexKey, [token]);
  if (id === undefined) throw new Error("no search token id computed");
  return id;
}

/** Encrypts an event for storage. */
export async function sealEvent(
  keys: ProjectKeys,
  at: EventAddress,
  payload: EventPayload,
  context: JsonObject | undefined,
  indexed: IndexedValues,
): Promise<SealedEvent> {
  const dataKey = await keys.dataKey(keys.currentVersion);
  const texts = indexed.searchable.map((text) => text.slice(0, SEARCH_TEXT_LIMIT));
  const filters: [string, string][] = [
    ["actorId", indexed.actorId],
    ["entityType", indexed.entityType],
    ["entityId", indexed.entityId],
    ["action", indexed.action],
  ];
  if (indexed.tenantId !== undefined) filters.push(["tenantId", indexed.tenantId]);
  if (indexed.legacyAction !== undefined) filters.push(["action", indexed.legacyAction]);
  const [actorIdx, entityTypeIdx, entityIdIdx, actionIdx, ...rest] = blindIndexesOf(
    keys.indexKey,
    filters,
  );
  if (!actorIdx || !entityTypeIdx || !entityIdIdx || !actionIdx) {
    throw new Error("blind indexes missing");
  }
  const tenantIdx = indexed.tenantId === undefined ? undefined : rest.shift();
  const legacyActionIdx = indexed.legacyAction === undefined ? undefined : rest.shift();
  return {
    keyVersion: keys.currentVersion,
    payload: seal(dataKey, Buffer.from(JSON.stringify(payload), "utf8"), aad(at, "payload")),
    context:
      context === undefined
        ? undefined
        : seal(dataKey, Buffer.from(JSON.stringify(context), "utf8"), aad(at, "context")),
    actorIdx,
    entityTypeIdx,
    entityIdIdx,
    actionIdx,
    tenantIdx,
    legacyActionIdx,
    searchTokens: searchTokenIds(keys.indexKey, searchTokens(texts)),
  };
}

/** Decrypts an event's payload and context. */
export async function openEvent(
  keys: ProjectKeys,
  at: EventAddress,
  keyVersion: number,
  payload: Uint8Array,
  context: Uint8Array | null,
): Promise<{ payload: EventPayload; context: JsonObject | undefined }> {
  const dataKey = await keys.dataKey(keyVersion);
  const opened = JSON.parse(open(dataKey, payload, aad(at, "payload")).toString("utf8"));
  return {
    payload: opened as EventPayload,
    context:
      context === null
        ? undefined
        : (JSON.parse(open(dataKey, context, aad(at, "context")).toString("utf8")) as JsonObject),
  };
}
