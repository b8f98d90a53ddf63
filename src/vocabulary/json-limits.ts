/**
 * Limits on JSON that every protocol applies alike: the REST edge checks a body's text
 * against them, the RPC edge and the validator the decoded values. A leaf module.
 */

/**
 * The deepest nesting of objects and arrays accepted, in a JSON field on every protocol
 * and in a whole REST body (checked as text before parsing goes further). JSON.parse
 * copes with any depth, but everything after it recurses (JSON.stringify for the size
 * limits, HTML encoding, canonical hashing): a 1 MB body of brackets would overflow
 * the stack.
 */
export const MAX_NESTING = 100;

/**
 * The most bytes of one event: a Create Event body (the spec's 1 MB), and each event of
 * a batch or a stream, measured as its JSON without white space.
 */
export const MAX_EVENT_BYTES = 1024 * 1024;

/** The message of a JSON number beyond the range of a double (`1e400`). */
export const NUMBER_OUT_OF_RANGE =
  "Number out of range: it must fit in a 64-bit floating-point number";

/**
 * The deepest nesting of `{` and `[` in JSON text, not counting those inside strings.
 * Each string is skipped with indexOf, not read character by character: in a batch of
 * events most of the text is strings, and the scan took twice as long (bench/bulk.ts
 * profiles: 6% of the process's CPU under a load of batches).
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22) {
      i = closingQuote(text, i);
    } else if (code === 0x7b || code === 0x5b) {
      if (++depth > deepest) deepest = depth;
    } else if (code === 0x7d || code === 0x5d) {
      depth--;
    }
  }
  return deepest;
}

/**
 * Where the string opened at `open` ends: the next quote not escaped, that is, preceded
 * by an even run of backslashes (each backslash is counted once: linear). The end of
 * the text when there is none.
 */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return text.length;
}
