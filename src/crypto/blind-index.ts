/**
 * Blind indexes: keyed pseudo-random values of values, so that the database can match
 * equal values and search words without ever holding the plaintext. Each project has
 * its own index key (never rotated, or old events would stop matching).
 *
 * The index of a value is AES-256 (the project's index key, one block, no chaining) of
 * the first 16 bytes of SHA-256(column NUL value): a keyed permutation of a collision-
 * resistant digest, so equal inputs give equal indexes and nothing can be computed
 * without the key. It costs one one-shot hash per value and one cipher call per batch
 * of values, where an HMAC per value cost several times as much with hundreds of search
 * tokens per event.
 */
import { createCipheriv, hash } from "node:crypto";

const INDEX_BYTES = 16;
/** Word prefixes from this length are searchable. */
export const MIN_PREFIX = 3;
/** Prefixes are indexed up to this length; longer search terms match whole words. */
export const MAX_PREFIX = 32;

/** The blind indexes of `values` in the named `column`, in order. */
export function blindIndexes(
  indexKey: Buffer,
  column: string,
  values: readonly string[],
): Buffer[] {
  if (values.length === 0) return [];
  const digests = Buffer.allocUnsafe(values.length * INDEX_BYTES);
  values.forEach((value, i) => {
    const digest = hash("sha256", `${column}\0${value}`, "buffer");
    digest.copy(digests, i * INDEX_BYTES, 0, INDEX_BYTES);
  });
  const cipher = createCipheriv("aes-256-ecb", indexKey, null).setAutoPadding(false);
  const indexes = Buffer.concat([cipher.update(digests), cipher.final()]);
  return values.map((_, i) => indexes.subarray(i * INDEX_BYTES, (i + 1) * INDEX_BYTES));
}

/** The blind index of `value` in the named `column`. */
export function blindIndex(indexKey: Buffer, column: string, value: string): Buffer {
  const [index] = blindIndexes(indexKey, column, [value]);
  if (!index) throw new Error("no index computed");
  return index;
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
