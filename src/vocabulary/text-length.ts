/**
 * How the service counts the length of caller text, on every route and protocol: in
 * Unicode code points, so that an emoji is one character whatever its UTF-16 length.
 * A leaf module: the validator of event fields and the token service both count here.
 */

/**
 * The longest `tenantId`, in code points: of an event (the `max_len` of event.proto's
 * `tenant_id`, which a test ties to this) and of a frontend token, so that every tenant
 * an event can name can also be given a token.
 */
export const MAX_TENANT_ID_CHARS = 64;

/** The length of `value` in Unicode code points (a lone surrogate counts as one). */
export function codePointLength(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}
