/**
 * The one error vocabulary of the domain. Rules throw a ServiceError with a kind and
 * the facts a client needs; the transports map it once each: to the spec's REST
 * bodies (transport/rest-errors.ts) and to ConnectError (transport/connect-errors.ts).
 * `toServiceError` is the one conversion of anything thrown; what it cannot convert is
 * an internal failure: reported (transport/error-reporter.ts), never leaked.
 */

/** A failing field of a validation error, in the spec's 422 shape. */
export interface FieldIssue {
  path: (string | number)[];
  message: string;
  code: string;
}

/** The figures of a monthly quota refusal. */
export interface QuotaFacts {
  current: number;
  limit: number;
  plan: string;
}

export type ServiceErrorKind =
  | "bad_request"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "validation"
  | "quota_exceeded"
  | "rate_limited"
  | "unavailable";

/** Facts carried by some kinds of error. */
export interface ServiceErrorFacts {
  issues?: FieldIssue[];
  quota?: QuotaFacts;
  retryAfterSeconds?: number;
}

/** An expected failure of a request, with the message the client sees. */
export class ServiceError extends Error {
  override name = "ServiceError";

  constructor(
    readonly kind: ServiceErrorKind,
    message: string,
    readonly facts: ServiceErrorFacts = {},
  ) {
    super(message);
  }
}

/** Messages fixed by the specification (section 7). */
export const Messages = {
  missingKey: "Missing API key. Provide a Bearer token or X-Project-Key header",
  invalidKeyFormat: "Invalid API key format",
  invalidKey: "Invalid API key",
  revokedKey: "API key has been revoked",
  readOnlyToken: "Frontend tokens are read-only and cannot create events",
  idempotencyConflict: "Idempotency key conflict: same key used with different body",
  payloadTooLarge: "Request payload too large",
  validationFailed: "Validation failed",
  rateLimited: "Rate limit exceeded",
  httpsRequired: "HTTPS is required",
  internal: "Internal server error",
  unavailable: "Service temporarily unavailable: the database cannot be reached",
  shuttingDown: "Service temporarily unavailable: this instance is shutting down",
  overloaded: "Service temporarily unavailable: too many requests in progress",
  /** A list or an ingest refused while the log's integrator is behind (docs/write-path.md). */
  integrationBehind: "Service temporarily unavailable: recent events are still being indexed",
  diskFull: "Service temporarily unavailable: the database is out of disk space",
  notFound: "Not found",
  invalidAuthority: "Invalid Host or :authority header",
  twoCredentials:
    "Ambiguous credentials: Authorization and X-Project-Key present different credentials",
  twoAuthorizations: "Ambiguous credentials: more than one Authorization header",
  twoProjectKeys: "Ambiguous credentials: more than one X-Project-Key header",
  twoIdempotencyKeys: "Ambiguous request: more than one Idempotency-Key header",
} as const;

// Errors of the connection, not of a statement: the network's, the driver's, and the
// server's refusals of a connection (PostgreSQL SQLSTATE).
const CONNECTION_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);
const CONNECTION_SQLSTATES = new Set([
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, shutting down, in recovery)
  "53300", // too_many_connections
  "3D000", // invalid_catalog_name: the database is gone
  "28000", // invalid_authorization_specification: the role may no longer log in
  "28P01", // invalid_password: the password was changed
]);

/**
 * True when the database could not write for lack of disk space: PostgreSQL's disk_full
 * (53100), which the embedded database's own guard raises too, before PGlite reaches the
 * point where it hangs (store/pglite-driver.ts). Retryable once space returns.
 */
export function isDiskFull(error: unknown): boolean {
  return error instanceof Error && (error as { code?: unknown }).code === "53100";
}

/** True when the error means the database could not be reached (not a query bug). */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") return false;
  if (CONNECTION_ERRNOS.has(code) || CONNECTION_SQLSTATES.has(code)) return true;
  // Class 08: connection exception.
  if (code.startsWith("08")) return true;
  // 55000 is also a statement's error; as a refusal of connections, it says so.
  return code === "55000" && /not currently accepting connections/.test(error.message);
}

/**
 * The ServiceError an error is, or stands for (an unreachable database is a 503
 * `unavailable`); undefined for an internal failure.
 */
export function toServiceError(error: unknown): ServiceError | undefined {
  if (error instanceof ServiceError) return error;
  if (isConnectionFailure(error)) return new ServiceError("unavailable", Messages.unavailable);
  if (isDiskFull(error)) return new ServiceError("unavailable", Messages.diskFull);
  return undefined;
}

/**
 * True when the client is told nothing of the cause, so that it must be logged: an
 * internal failure, or the database unreachable (its cause tells the operator which).
 * A stream ended because this instance is shutting down, a request refused because too
 * many are in progress (transport/admission.ts), and one refused while its log's
 * integrator is behind (log/ingest-pushback.ts, log/read-your-writes.ts: the lag metrics
 * show it) are expected, and under load would otherwise write a line with a stack each.
 */
export function isUnexpected(error: unknown): boolean {
  const known = toServiceError(error);
  return (
    known === undefined ||
    (known.kind === "unavailable" &&
      known.message !== Messages.shuttingDown &&
      known.message !== Messages.overloaded &&
      known.message !== Messages.integrationBehind)
  );
}
