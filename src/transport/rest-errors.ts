/**
 * The one place where errors become REST responses, in the spec's shape: a JSON object
 * with an `error` string, and the extra fields of section 7. Anything that is not a
 * ServiceError is a 500 whose cause is never sent (the error reporter logs it).
 */
import { Messages, type ServiceError, toServiceError } from "../errors.js";

/** A REST error response. */
export interface RestError {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

const STATUS: Record<ServiceError["kind"], number> = {
  bad_request: 400,
  unauthenticated: 401,
  permission_denied: 403,
  quota_exceeded: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  validation: 422,
  rate_limited: 429,
  unavailable: 503,
};

/** The REST response for any error thrown while serving a request. */
export function toRestError(error: unknown): RestError {
  const known = toServiceError(error);
  if (!known) return { status: 500, body: { error: Messages.internal }, headers: {} };
  const body: Record<string, unknown> = { error: known.message };
  const headers: Record<string, string> = {};
  const { issues, quota, retryAfterSeconds } = known.facts;
  if (known.kind === "validation") body.details = issues ?? [];
  if (known.kind === "quota_exceeded" && quota) {
    body.current = quota.current;
    body.limit = quota.limit;
    body.plan = quota.plan;
  }
  if (known.kind === "rate_limited") headers["retry-after"] = String(retryAfterSeconds ?? 1);
  // A 503 that knows when to come back (a list waiting for the integrator) says so.
  if (known.kind === "unavailable" && retryAfterSeconds !== undefined) {
    headers["retry-after"] = String(retryAfterSeconds);
  }
  if (known.kind === "payload_too_large") headers.connection = "close";
  return { status: STATUS[known.kind], body, headers };
}
