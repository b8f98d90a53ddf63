/**
 * The leaf of an event in its log's Merkle tree, and the commitment to its content.
 * docs/verifiable-log.md specifies both byte for byte; this module is that specification
 * as code, used by the service when it appends and by every verifier.
 *
 * commitment = SHA-256(salt || UTF-8(JCS(committed record)))
 *   salt: the event's 32 random bytes (returned to readers with the event, base64);
 *   committed record: the event object as GET /api/events returns it, keeping only the
 *   members in COMMITTED_FIELDS (so `logIndex`, `salt` and any member added to the API
 *   later are not committed), canonicalized with RFC 8785.
 *
 * leaf (65 bytes, version 1):
 *   [0]      0x01 version
 *   [1..8]   logIndex, unsigned 64-bit big-endian
 *   [9..16]  receivedAt, milliseconds since 1970-01-01T00:00:00Z, signed 64-bit big-endian
 *   [17..32] eventId, the 16 bytes of the UUID
 *   [33..64] commitment
 *
 * Invariants: the leaf says nothing about content beyond the commitment, and the salt
 * keeps the commitment from being confirmed by guessing content; erasing content later
 * leaves the leaf, and every proof over it, unchanged.
 */
import { bytesEqual, fromBase64, toHex } from "./bytes.js";
import type { LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";
import { canonicalBytes } from "./jcs.js";
import { HASH_SIZE, type Hash } from "./tree.js";

/** The version byte of the leaf format defined here. */
export const LEAF_VERSION = 1;
/** Length of a version-1 leaf in bytes. */
export const LEAF_SIZE = 65;
/** Length of an event's salt in bytes. */
export const SALT_SIZE = 32;

/**
 * The members of a listed event that its commitment covers: every member the API returned
 * for an event when this leaf version was defined, except `logIndex` and `salt` (the leaf
 * binds the index itself, and the salt is the commitment's key). A member not listed
 * here, including any added to the API later, is not committed; committing a new member
 * takes a new leaf version.
 */
export const COMMITTED_FIELDS: readonly string[] = [
  "eventId",
  "receivedAt",
  "occurredAt",
  "actionKey",
  "action",
  "actionDescription",
  "entityType",
  "entityId",
  "actorType",
  "actorId",
  "actorDisplay",
  "tenantId",
  "source",
  "context",
  "changes",
];

/** What a leaf binds. */
export interface LeafFields {
  readonly logIndex: number;
  /** Milliseconds since the Unix epoch. */
  readonly receivedAtMs: number;
  /** Canonical (lower-case) UUID text. */
  readonly eventId: string;
  readonly commitment: Hash;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function malformed(why: string): TlogError {
  return new TlogError("malformed", why);
}

// The same names in canonical order: a record built in this order is canonicalized
// without being copied again (jcs.ts).
const COMMITTED_FIELDS_SORTED = [...COMMITTED_FIELDS].sort();

/** The committed record of a listed event: its COMMITTED_FIELDS members, nothing else. */
export function committedRecord(event: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const field of COMMITTED_FIELDS_SORTED) {
    if (Object.hasOwn(event, field) && event[field] !== undefined) record[field] = event[field];
  }
  return record;
}

/** The commitment to a listed event's content under its salt. */
export async function eventCommitment(
  crypto: LogCrypto,
  salt: Uint8Array,
  event: Readonly<Record<string, unknown>>,
): Promise<Hash> {
  if (salt.length !== SALT_SIZE) throw malformed(`a salt is ${SALT_SIZE} bytes`);
  return crypto.sha256(salt, canonicalBytes(committedRecord(event)));
}

/** Milliseconds of an ISO 8601 UTC date-time in the service's form (…T…:…:….mmmZ). */
export function parseReceivedAt(text: string): number {
  const ms = Date.parse(text);
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== text) {
    throw malformed(`receivedAt ${JSON.stringify(text)} is not a UTC date-time with milliseconds`);
  }
  return ms;
}

/** The value of a lower-case hexadecimal digit's character code. */
function hexDigit(code: number): number {
  return code <= 0x39 ? code - 0x30 : code - 0x57;
}

/** The 65 bytes of a version-1 leaf. */
export function encodeLeaf(fields: LeafFields): Uint8Array {
  const { logIndex, receivedAtMs, eventId, commitment } = fields;
  if (!Number.isSafeInteger(logIndex) || logIndex < 0) throw malformed("bad logIndex");
  if (!Number.isSafeInteger(receivedAtMs)) throw malformed("bad receivedAt");
  if (!UUID.test(eventId)) throw malformed(`eventId ${JSON.stringify(eventId)} is not a UUID`);
  if (commitment.length !== HASH_SIZE) throw malformed("a commitment is 32 bytes");
  const leaf = new Uint8Array(LEAF_SIZE);
  const view = new DataView(leaf.buffer);
  leaf[0] = LEAF_VERSION;
  view.setBigUint64(1, BigInt(logIndex));
  view.setBigInt64(9, BigInt(receivedAtMs));
  // The UUID's 16 bytes, its dashes skipped (every leaf of the log pays this loop).
  for (let i = 0, at = 17; i < eventId.length; i += 2) {
    if (eventId.charCodeAt(i) === 0x2d) i++;
    leaf[at++] = (hexDigit(eventId.charCodeAt(i)) << 4) | hexDigit(eventId.charCodeAt(i + 1));
  }
  leaf.set(commitment, 33);
  return leaf;
}

/** Reads a version-1 leaf. Throws TlogError "malformed" for anything else. */
export function decodeLeaf(leaf: Uint8Array): LeafFields {
  if (leaf.length !== LEAF_SIZE || leaf[0] !== LEAF_VERSION) {
    throw malformed(`not a version-${LEAF_VERSION} leaf of ${LEAF_SIZE} bytes`);
  }
  const view = new DataView(leaf.buffer, leaf.byteOffset, leaf.byteLength);
  const logIndex = view.getBigUint64(1);
  const receivedAtMs = view.getBigInt64(9);
  if (logIndex > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed("logIndex out of range");
  const hex = toHex(leaf.subarray(17, 33));
  return {
    logIndex: Number(logIndex),
    receivedAtMs: Number(receivedAtMs),
    eventId: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
    commitment: leaf.slice(33, 65),
  };
}

/** The leaf fields of an event as listed (with its `logIndex` and `salt`), checked. */
export interface ListedEventLeaf {
  readonly eventId: string;
  readonly logIndex: number;
  readonly leaf: Uint8Array;
}

/**
 * Recomputes the leaf of an event as GET /api/events lists it: the commitment from its
 * salt and committed members, then the leaf. Throws TlogError "malformed" when the event
 * lacks what the leaf needs (eventId, receivedAt, logIndex, a 32-byte base64 salt).
 */
export async function listedEventLeaf(
  crypto: LogCrypto,
  event: Readonly<Record<string, unknown>>,
): Promise<ListedEventLeaf> {
  const { eventId, receivedAt, logIndex, salt } = event;
  if (typeof eventId !== "string" || !UUID.test(eventId)) throw malformed("no valid eventId");
  if (typeof receivedAt !== "string") throw malformed("no receivedAt");
  if (typeof logIndex !== "number" || !Number.isSafeInteger(logIndex) || logIndex < 0) {
    throw malformed("no logIndex");
  }
  const saltBytes = typeof salt === "string" ? fromBase64(salt) : undefined;
  if (saltBytes === undefined || saltBytes.length !== SALT_SIZE) {
    throw malformed(`no salt of ${SALT_SIZE} bytes in base64`);
  }
  const commitment = await eventCommitment(crypto, saltBytes, event);
  const leaf = encodeLeaf({
    logIndex,
    receivedAtMs: parseReceivedAt(receivedAt),
    eventId,
    commitment,
  });
  return { eventId, logIndex, leaf };
}

/**
 * What differs between the leaf recomputed from an event and the leaf the service holds,
 * in words, for naming a failure; undefined when they are equal.
 */
export function describeLeafDifference(
  expected: Uint8Array,
  served: Uint8Array,
): string | undefined {
  if (bytesEqual(expected, served)) return undefined;
  let theirs: LeafFields;
  try {
    theirs = decodeLeaf(served);
  } catch {
    return "the service's leaf is not a valid leaf";
  }
  const ours = decodeLeaf(expected);
  const differences: string[] = [];
  if (ours.logIndex !== theirs.logIndex) differences.push(`logIndex ${theirs.logIndex}`);
  if (ours.eventId !== theirs.eventId) differences.push(`eventId ${theirs.eventId}`);
  if (ours.receivedAtMs !== theirs.receivedAtMs) {
    differences.push(`receivedAt ${new Date(theirs.receivedAtMs).toISOString()}`);
  }
  if (!bytesEqual(ours.commitment, theirs.commitment)) {
    differences.push("a commitment to other content");
  }
  return `the service's leaf has ${differences.join(", ")}`;
}

/** A fresh random salt (WebCrypto's getRandomValues exists in Node 20 and browsers). */
export function randomSalt(): Uint8Array {
  const salt = new Uint8Array(SALT_SIZE);
  globalThis.crypto.getRandomValues(salt);
  return salt;
}
