/**
 * Blind indexes: keyed HMACs of values, so that the database can match equal values
 * and search words without ever holding the plaintext. Each project has its own index
 * key (never rotated, or old events would stop matching).
 */
import { createHmac } from "node:crypto";

const INDEX_BYTES = 16;
/** Word prefixes from this length are searchable. */
export const MIN_PREFIX = 3;
/** Prefixes are indexed up to this length; longer search terms match whole words. */
export const MAX_PREFIX = 32;

/** The blind index of `value` in the named `column`. */
export function blindIndex(indexKey: Buffer, column: string, value: string): Buffer {
  return createHmac("sha256", indexKey)
    .update(column)
    .update("\0")
    .update(value)
    .digest()
    .subarray(0, INDEX_BYTES);
}

/** Lower-cased words of a text: runs of letters and digits. */
export function words(text: string): string[] {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0);
}

/**
 * The search tokens of some texts: every whole word (`w:`), and every prefix of 3 to
 * 32 characters of every word (`p:`), deduplicated.
 */
export function searchTokens(texts: readonly string[]): string[] {
  const tokens = new Set<string>();
  for (const text of texts) {
    for (const word of words(text)) {
      tokens.add(`w:${word}`);
      const chars = Array.from(word);
      const longest = Math.min(chars.length, MAX_PREFIX);
      for (let length = MIN_PREFIX; length <= longest; length++) {
        tokens.add(`p:${chars.slice(0, length).join("")}`);
      }
    }
  }
  return [...tokens];
}

/** The token that a search term must match: a prefix token when it can be one. */
export function queryToken(term: string): string {
  const length = Array.from(term).length;
  return length >= MIN_PREFIX && length <= MAX_PREFIX ? `p:${term}` : `w:${term}`;
}
