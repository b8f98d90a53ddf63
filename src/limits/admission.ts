/**
 * The shape of a limit applied to a caller before its request body is read (the rate
 * limit): ingest/ runs the checks it is given, limits/ provides them.
 */
import type { KeyPrincipal } from "../auth/authenticator.js";

/** Rules applied to a principal before its body is read (the rate limit). */
export interface AdmissionCheck {
  /** Resolves to admit the call; throws a ServiceError to refuse it. */
  admit(principal: KeyPrincipal): Promise<void>;
}
