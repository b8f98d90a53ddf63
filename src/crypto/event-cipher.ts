/**
 * Sealing events for storage and opening them again. Every field of an event but its
 * ids and timestamps becomes ciphertext: the fields in one `payload`, the `context`
 * apart (it lives in its own table). Associated data binds each ciphertext to its
 * project, environment, event and column.
 *
 * The payload also holds the event's salt: 32 random bytes drawn when it is
 * acknowledged, which the verifiable log's leaf hashes together with the event, so that
 * a leaf hash never lets anyone test a guess of a low-entropy event. Being inside the
 * ciphertext, the salt goes wherever the event's content goes (erasure destroys both).
 * Events stored before salts existed have a salt derived from their data key and
 * address instead (`legacySalt`): as unguessable without the key, and stable.
 *
 * Filters and search use blind indexes (`indexesOf`), computed by the integrator from
 * the opened payload behind the acknowledgement (log/derive.ts), never on the request.
 */
import { createHmac } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { ChangeInput } from "../vocabulary/event-input.js";
import { open, seal } from "./aead.js";
import {
  blindIndex,
  blindIndexesOf,
  searchMatches,
  searchTokenIds,
  searchTokens,
} from "./blind-index.js";
import type { ProjectKeys } from "./keyring.js";
import { randomBytesFromPool } from "./random-pool.js";

/** Bytes of an event's salt. */
export const SALT_BYTES = 32;

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

/** An event ready to be appended to its log's journal. */
export interface SealedEvent {
  keyVersion: number;
  /** The fields and the salt, encrypted. */
  payload: Buffer;
  context: Buffer | undefined;
  /**
   * The JSON texts that were sealed, kept for this instance's integrator so that it need
   * not read the ciphertext back and open it (log/plaintext-cache.ts). Absent on values
   * sealed elsewhere.
   */
  plaintext?: EventPlaintext;
}

/** The JSON texts an event's payload (fields and salt) and context were sealed from. */
export interface EventPlaintext {
  payload: string;
  context: string | undefined;
}

/** An event's blind indexes: what its filters and search match. */
export interface EventIndexes {
  actorIdx: Buffer;
  entityTypeIdx: Buffer;
  entityIdIdx: Buffer;
  actionIdx: Buffer;
  tenantIdx: Buffer | undefined;
  legacyActionIdx: Buffer | undefined;
  /**
   * The search tokens' ids (blind-index.ts `searchTokenIds`) in decimal, joined by commas:
   * the text the index statement sends, made where the tokens are derived (the derivation
   * worker), since turning some 300,000 bigints of a pass into text, and passing them
   * between threads, blocked the requests' thread for tens of milliseconds.
   */
  searchTokenText: string;
  /** How many ids `searchTokenText` holds. */
  searchTokenCount: number;
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

/** Encrypts an event for its journal, with a new random salt. */
export async function sealEvent(
  keys: ProjectKeys,
  at: EventAddress,
  payload: EventPayload,
  context: JsonObject | undefined,
): Promise<SealedEvent> {
  const dataKey = await keys.dataKey(keys.currentVersion);
  const salt = randomBytesFromPool(SALT_BYTES).toString("base64");
  // Object.assign, not a spread: the same object, in half the time (a spread of the
  // payload's dozen fields cost 3 µs an event, bench/bulk-steps.ts).
  const salted: SaltedPayload = Object.assign({}, payload, { salt });
  const plaintext: EventPlaintext = {
    payload: JSON.stringify(salted),
    context: context === undefined ? undefined : JSON.stringify(context),
  };
  return {
    keyVersion: keys.currentVersion,
    payload: seal(dataKey, Buffer.from(plaintext.payload, "utf8"), aad(at, "payload")),
    context:
      plaintext.context === undefined
        ? undefined
        : seal(dataKey, Buffer.from(plaintext.context, "utf8"), aad(at, "context")),
    plaintext,
  };
}

/** The payload's plaintext: the fields and, since the journal, the salt (base64). */
interface SaltedPayload extends EventPayload {
  salt?: string;
}

/** The blind indexes of an event's values (as the caller sent them, before encoding). */
export function indexesOf(keys: ProjectKeys, indexed: IndexedValues): EventIndexes {
  const texts = searchedTexts(indexed);
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
  const tokenIds = searchTokenIds(keys.indexKey, searchTokens(texts));
  return {
    actorIdx,
    entityTypeIdx,
    entityIdIdx,
    actionIdx,
    tenantIdx,
    legacyActionIdx,
    searchTokenText: tokenIds.join(","),
    searchTokenCount: tokenIds.length,
  };
}

/** The part of each searchable text that the search tokens were derived from. */
function searchedTexts(indexed: IndexedValues): string[] {
  return indexed.searchable.map((text) => text.slice(0, SEARCH_TEXT_LIMIT));
}

/**
 * Whether an event's values match every word of a search (blind-index.ts
 * `searchMatches`), over the same texts its search tokens were derived from: the check
 * after decryption of a term whose token only narrows the events down.
 */
export function matchesSearch(indexed: IndexedValues, terms: readonly string[]): boolean {
  return searchMatches(searchedTexts(indexed), terms);
}

/** An opened payload: the event's fields and its salt. */
export interface OpenedPayload {
  payload: EventPayload;
  salt: Buffer;
}

/**
 * An event whose stored ciphertext does not open under its key: altered or damaged where
 * it is stored (AES-GCM authenticates every byte, and the event's address).
 */
export class UnreadableEventError extends Error {
  override readonly name = "UnreadableEventError";
  constructor(
    readonly eventId: string,
    part: "payload" | "context",
    cause: unknown,
  ) {
    super(
      `the stored ${part} of event ${eventId} does not decrypt: it was altered or damaged in storage`,
      { cause },
    );
  }
}

/** The JSON sealed in `sealed`; an UnreadableEventError when it does not open. */
function openJson(
  dataKey: Buffer,
  sealed: Uint8Array,
  at: EventAddress,
  part: "payload" | "context",
): unknown {
  try {
    return JSON.parse(open(dataKey, sealed, aad(at, part)).toString("utf8"));
  } catch (error) {
    throw new UnreadableEventError(at.eventId, part, error);
  }
}

/** Decrypts an event's payload (fields and salt). */
export async function openPayload(
  keys: ProjectKeys,
  at: EventAddress,
  keyVersion: number,
  payload: Uint8Array,
): Promise<OpenedPayload> {
  const dataKey = await keys.dataKey(keyVersion);
  const { salt, ...fields } = openJson(dataKey, payload, at, "payload") as SaltedPayload;
  return {
    payload: fields,
    salt: salt === undefined ? legacySalt(dataKey, at) : Buffer.from(salt, "base64"),
  };
}

/**
 * An event's payload as `openPayload` gives it, from the text it was sealed from
 * (`SealedEvent.plaintext`): the same fields and salt, without the decryption.
 */
export function payloadOfPlaintext(text: string): OpenedPayload {
  const { salt, ...fields } = JSON.parse(text) as SaltedPayload;
  // Every event sealed since salts exist has one; only those can have a plaintext.
  if (salt === undefined) throw new Error("a sealed plaintext without its salt");
  return { payload: fields, salt: Buffer.from(salt, "base64") };
}

/** An event's context as `openContext` gives it, from the text it was sealed from. */
export function contextOfPlaintext(text: string | undefined): JsonObject | undefined {
  return text === undefined ? undefined : (JSON.parse(text) as JsonObject);
}

/** Decrypts an event's payload and context. */
export async function openEvent(
  keys: ProjectKeys,
  at: EventAddress,
  keyVersion: number,
  payload: Uint8Array,
  context: Uint8Array | null,
): Promise<OpenedPayload & { context: JsonObject | undefined }> {
  const opened = await openPayload(keys, at, keyVersion, payload);
  return { ...opened, context: await openContext(keys, at, keyVersion, context) };
}

/** Decrypts an event's context (undefined for an event without one). */
export async function openContext(
  keys: ProjectKeys,
  at: EventAddress,
  keyVersion: number,
  context: Uint8Array | null,
): Promise<JsonObject | undefined> {
  if (context === null) return undefined;
  const dataKey = await keys.dataKey(keyVersion);
  return openJson(dataKey, context, at, "context") as JsonObject;
}

/**
 * The salt of an event sealed before salts were drawn: HMAC-SHA256 under its data key
 * of its payload's address. Nobody without the key can compute it, and it is the same
 * at every read.
 */
function legacySalt(dataKey: Buffer, at: EventAddress): Buffer {
  return createHmac("sha256", dataKey)
    .update(`salt:${aad(at, "payload")}`)
    .digest();
}
