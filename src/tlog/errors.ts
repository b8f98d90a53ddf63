/**
 * The one error type of the verifiable-log library. `code` says what kind of failure it
 * is, so callers (the verifier, the API layer) decide what to show without parsing text.
 */

/** What went wrong, in the library's terms. */
export type TlogErrorCode =
  /** Arguments outside the domain of the operation (index >= size, size < 1, ...). */
  | "invalid-input"
  /** A proof that does not prove what it was checked against. */
  | "proof-failed"
  /** Text or bytes that do not follow the format (note, key, checkpoint, leaf, JSON). */
  | "malformed"
  /** A signature by a known key that does not verify. */
  | "bad-signature"
  /** A note with no signature by any of the given keys. */
  | "unverified"
  /** A hash store that returned the wrong number of hashes or none. */
  | "storage";

/** A failure of a log operation or check. */
export class TlogError extends Error {
  override readonly name = "TlogError";
  constructor(
    readonly code: TlogErrorCode,
    message: string,
  ) {
    super(message);
  }
}
