/**
 * How the service counts the length of caller text, on every route and protocol: in
 * Unicode code points, so that an emoji is one character whatever its UTF-16 length (the
 * spec's limits are in "characters"; JSON Schema's maxLength, which the OpenAPI document
 * states them in, counts the same). A leaf module: every length limit counts here, the
 * event fields' `max_len`, a token's tenantId, List Events' `q` and a project's name.
 * (The Idempotency-Key, a header, is checked where it is read: over HTTP/1.1 its
 * characters are latin-1, one UTF-16 unit each.)
 */

/**
 * The longest `tenantId`, in code points: of an event (the `max_len` of event.proto's
 * `tenant_id`, which a test ties to this) and of a frontend token, so that every tenant
 * an event can name can also be given a token.
 */
export const MAX_TENANT_ID_CHARS = 64;

/**
 * True when `value` has more than `max` characters (code points). Strings within `max`
 * UTF-16 units are never longer, so most are answered without counting.
 */
export function longerThan(value: string, max: number): boolean {
  return value.length > max && codePointLength(value) > max;
}

/** The length of `value` in Unicode code points (a lone surrogate counts as one). */
export function codePointLength(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}
