/**
 * Text that PostgreSQL can store as sent. A `text` value holds no NUL character (the
 * server refuses it with 22021, which would surface as an internal error), and UTF-8
 * has no form for an unpaired UTF-16 surrogate (the driver would write U+FFFD in its
 * place, changing the value). Every caller string stored as SQL text is checked here
 * first; event fields never are (they are stored as ciphertext and blind indexes).
 * A leaf module.
 */

// With the u flag a surrogate pair is one code point: only an unpaired half matches.
const UNPAIRED_SURROGATE = /\p{Cs}/u;

/** True when `value` has no NUL and no unpaired surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes("\u0000") && !UNPAIRED_SURROGATE.test(value);
}
