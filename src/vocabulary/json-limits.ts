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
