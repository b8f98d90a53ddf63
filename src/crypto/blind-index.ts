/**
 * Blind indexes: keyed pseudo-random values of values, so that the database can match
 * equal values and search words without ever holding the plaintext. Each project has
 * its own index key (never rotated, or old events would stop matching).
 *
 * The index of a value is AES-256 (the project's index key, one block, no chaining)
 * of an injective 16-byte encoding of (column, value): a keyed permutation, so equal
 * inputs give equal indexes, different inputs different ones, and nothing can be
 * computed without the key. Short values (most search tokens) are encoded directly as
 * [length, column code, UTF-8 bytes, zero padding]; longer ones as a marker byte and
 * 15 bytes of SHA-256(column NUL value). A value with a lone surrogate is written in
 * WTF-8 rather than UTF-8 (which would make it U+FFFD), so the encoding stays injective.
 * A few cipher calls cover all values of an event (its filters, then its search tokens),
 * where an HMAC per value cost several times as much.
 */
import { type Cipher, createCipheriv, hash } from "node:crypto";

const INDEX_BYTES = 16;
/** Word prefixes from this length are searchable. */
export const MIN_PREFIX = 3;
/** Search terms up to this length match word prefixes; longer ones match whole words. */
export const MAX_PREFIX = 32;

// Values up to this many UTF-8 bytes are encoded directly: [length, column, bytes...].
const DIRECT_BYTES = INDEX_BYTES - 2;
// First byte of a hashed encoding; direct encodings start with a length of 0..14.
const HASHED = 0xff;
const COLUMN_CODES: Readonly<Record<string, number>> = {
  search: 1,
  actorId: 2,
  entityType: 3,
  entityId: 4,
  action: 5,
  tenantId: 6,
};

/** The blind indexes of `values` in the named `column`, in order. */
export function blindIndexes(
  indexKey: Buffer,
  column: string,
  values: readonly string[],
): Buffer[] {
  return splitIndexes(blindIndexBlock(indexKey, column, values));
}

/**
 * The blind indexes of `values` in the named `column`, as one buffer of 16-byte
 * indexes in order, from one cipher call (an event's search tokens: `searchTokenIds`).
 */
export function blindIndexBlock(
  indexKey: Buffer,
  column: string,
  values: readonly string[],
): Buffer {
  const code = COLUMN_CODES[column];
  if (code === undefined) throw new Error(`no blind index column ${column}`);
  const blocks = Buffer.alloc(values.length * INDEX_BYTES);
  for (let i = 0; i < values.length; i++) {
    encodeBlock(blocks, i * INDEX_BYTES, code, column, values[i] as string);
  }
  return ecbCipherOf(indexKey).update(blocks);
}

/** The blind indexes of (column, value) pairs, in order, with one cipher call. */
export function blindIndexesOf(
  indexKey: Buffer,
  entries: readonly (readonly [column: string, value: string])[],
): Buffer[] {
  if (entries.length === 0) return [];
  const blocks = Buffer.alloc(entries.length * INDEX_BYTES);
  for (let i = 0; i < entries.length; i++) {
    const [column, value] = entries[i] as readonly [string, string];
    const code = COLUMN_CODES[column];
    if (code === undefined) throw new Error(`no blind index column ${column}`);
    encodeBlock(blocks, i * INDEX_BYTES, code, column, value);
  }
  return splitIndexes(ecbCipherOf(indexKey).update(blocks));
}

/**
 * The search token ids of `tokens`: the first 8 bytes of each token's blind index, read
 * as a signed 64-bit integer (a PostgreSQL bigint). A GIN index over bigint costs well
 * under half of one over 16-byte bytea per token (bench/store-write.ts), and 64 bits
 * keep accidental matches out of reach (2^-64 per pair of distinct tokens).
 */
export function searchTokenIds(indexKey: Buffer, tokens: readonly string[]): bigint[] {
  const indexes = blindIndexBlock(indexKey, "search", tokens);
  const ids = new Array<bigint>(tokens.length);
  for (let i = 0; i < ids.length; i++) ids[i] = indexes.readBigInt64BE(i * INDEX_BYTES);
  return ids;
}

/** The 16-byte indexes of a block of them, as views into it. */
function splitIndexes(indexes: Buffer): Buffer[] {
  const result = new Array<Buffer>(indexes.length / INDEX_BYTES);
  for (let i = 0; i < result.length; i++) {
    result[i] = indexes.subarray(i * INDEX_BYTES, (i + 1) * INDEX_BYTES);
  }
  return result;
}

/** Writes the 16-byte encoding of (column, value) at `at` of zero-filled `blocks`. */
function encodeBlock(blocks: Buffer, at: number, code: number, column: string, value: string) {
  // Most values are short ASCII: copied byte by byte, with no call into the encoder.
  if (value.length <= DIRECT_BYTES) {
    let i = 0;
    for (; i < value.length; i++) {
      const char = value.charCodeAt(i);
      if (char > 0x7f) break;
      blocks[at + 2 + i] = char;
    }
    if (i === value.length) {
      blocks[at] = value.length;
      blocks[at + 1] = code;
      return;
    }
  }
  // Bytes the loop above may have written are overwritten: UTF-8 is longer than them.
  // UTF-8 would write every lone surrogate as U+FFFD, so that "a\ud800", "a\udfff" and
  // "a\ufffd" matched one another; such a value is encoded in WTF-8 instead, which is
  // UTF-8 for every well-formed string (their indexes are unchanged) and keeps each
  // surrogate apart.
  const bytes = LONE_SURROGATE.test(value) ? wtf8(value) : undefined;
  const length = bytes ? bytes.length : Buffer.byteLength(value, "utf8");
  if (length <= DIRECT_BYTES) {
    blocks[at] = length;
    blocks[at + 1] = code;
    if (bytes) bytes.copy(blocks, at + 2);
    else blocks.write(value, at + 2, "utf8");
  } else {
    blocks[at] = HASHED;
    const hashed = bytes
      ? Buffer.concat([Buffer.from(`${column}\0`), bytes])
      : `${column}\0${value}`;
    hash("sha256", hashed, "buffer").copy(blocks, at + 1, 0, INDEX_BYTES - 1);
  }
}

// In a `u` expression a surrogate pair is one code point: only lone surrogates match.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * WTF-8: UTF-8 of a string's code points, where a lone surrogate is encoded as the
 * three bytes its code point would take (ED A0 80 for U+D800).
 */
function wtf8(value: string): Buffer {
  const bytes: number[] = [];
  for (const char of value) {
    const point = char.codePointAt(0) as number;
    if (point < 0x80) bytes.push(point);
    else if (point < 0x800) bytes.push(0xc0 | (point >> 6), 0x80 | (point & 0x3f));
    else if (point < 0x10000) {
      bytes.push(0xe0 | (point >> 12), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f));
    } else {
      bytes.push(
        0xf0 | (point >> 18),
        0x80 | ((point >> 12) & 0x3f),
        0x80 | ((point >> 6) & 0x3f),
        0x80 | (point & 0x3f),
      );
    }
  }
  return Buffer.from(bytes);
}

// ECB keeps no state between blocks, so one cipher per key serves every call: `update`
// of whole blocks returns them all at once, and creating a cipher costs more than using it.
const ecbCiphers = new WeakMap<Buffer, Cipher>();

function ecbCipherOf(indexKey: Buffer): Cipher {
  let cipher = ecbCiphers.get(indexKey);
  if (!cipher) {
    cipher = createCipheriv("aes-256-ecb", indexKey, null).setAutoPadding(false);
    ecbCiphers.set(indexKey, cipher);
  }
  return cipher;
}

/** The blind index of `value` in the named `column`. */
export function blindIndex(indexKey: Buffer, column: string, value: string): Buffer {
  const [index] = blindIndexes(indexKey, column, [value]);
  if (!index) throw new Error("no index computed");
  return index;
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** Lower-cased words of a text: runs of letters and digits. */
export function words(text: string): string[] {
  // For ASCII, NFKC changes nothing and letters and digits are [a-z0-9] once lower-cased.
  const parts = isAscii(text)
    ? text.toLowerCase().split(/[^a-z0-9]+/)
    : text
        .normalize("NFKC")
        .toLowerCase()
        .split(/[^\p{L}\p{N}]+/u);
  return parts.filter((word) => word.length > 0);
}

/**
 * The prefix lengths that are indexed. A search term of another length is looked up by
 * its longest indexed prefix and checked after decryption (`searchMatches`); every
 * length from 3 to 32 used to be indexed, so events stored then have these tokens too.
 */
export const INDEXED_PREFIXES: readonly number[] = [3, 4, 6, 8];

/**
 * The search tokens of some texts, deduplicated: the prefixes of every word at the
 * indexed lengths (`p:`, up to the word's length, which finds every word that starts
 * with them), and the whole word (`w:`) when it is shorter than the shortest.
 */
export function searchTokens(texts: readonly string[]): string[] {
  const tokens = new Set<string>();
  const seenWords = new Set<string>();
  for (const text of texts) {
    for (const word of words(text)) {
      if (seenWords.has(word)) continue;
      seenWords.add(word);
      // Characters, not UTF-16 units: a prefix never splits a character.
      const chars = isAscii(word) ? word : Array.from(word);
      if (chars.length < MIN_PREFIX) {
        tokens.add(`w:${word}`);
        continue;
      }
      for (const length of INDEXED_PREFIXES) {
        if (length > chars.length) break;
        tokens.add(
          `p:${typeof chars === "string" ? chars.slice(0, length) : chars.slice(0, length).join("")}`,
        );
      }
    }
  }
  return [...tokens];
}

/**
 * The token that a search term is looked up by: its longest indexed prefix, or the
 * whole word for a term shorter than the shortest. Every event the term matches
 * (`searchMatches`) has this token; an event that has it matches unless
 * `isExactSearchTerm` is false, when the term must be checked after decryption.
 */
export function queryToken(term: string): string {
  const chars = Array.from(term);
  if (chars.length < MIN_PREFIX) return `w:${term}`;
  let length = MIN_PREFIX;
  for (const indexed of INDEXED_PREFIXES) if (indexed <= chars.length) length = indexed;
  return `p:${chars.slice(0, length).join("")}`;
}

/** Whether an event having the term's `queryToken` is exactly an event the term matches. */
export function isExactSearchTerm(term: string): boolean {
  const length = Array.from(term).length;
  return length < MIN_PREFIX || INDEXED_PREFIXES.includes(length);
}

/**
 * Whether every one of `terms` (words of a query, as `words` gives them) matches a word
 * of `texts`: a term of 3 to 32 characters as a prefix of a word, a shorter or longer
 * term as a whole word. This is the definition of search; the tokens only narrow down
 * the events to check.
 */
export function searchMatches(texts: readonly string[], terms: readonly string[]): boolean {
  if (terms.length === 0) return true;
  const found = new Set<string>();
  for (const text of texts) for (const word of words(text)) found.add(word);
  return terms.every((term) => {
    const length = Array.from(term).length;
    if (length < MIN_PREFIX || length > MAX_PREFIX) return found.has(term);
    // A term is whole characters, so a prefix of a word in UTF-16 units is one in characters.
    for (const word of found) if (word.startsWith(term)) return true;
    return false;
  });
}
