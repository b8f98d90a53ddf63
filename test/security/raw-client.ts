/**
 * What the security tests share: an HTTP/1.1 client over a raw socket (so a test can
 * send bytes no ordinary client would: control characters and unicode in headers,
 * invalid UTF-8, lying framing, slow trickles), the spec's error contract as one
 * assertion, and event rows counted in the database.
 */
import { expect } from "vitest";
import type { TestServer } from "../support/test-server.js";

export {
  parseResponse,
  type RawRequest,
  type RawResponse,
  rawRequest,
  requestBytes,
} from "../support/raw-socket.js";

/** The statuses spec section 7 lists for Create Event refusals (500 aside). */
export const SPEC_ERROR_STATUSES = [400, 401, 403, 409, 413, 422, 429];

/**
 * Asserts the spec's error contract: a listed status and a JSON object body with an
 * `error` string (and, for 422, `details` of {path, message, code}). Returns the body.
 */
export function expectSpecError(response: { status: number; body: string }): {
  error: string;
  [field: string]: unknown;
} {
  expect(SPEC_ERROR_STATUSES, `status ${response.status}: ${response.body}`).toContain(
    response.status,
  );
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect(typeof body.error, response.body).toBe("string");
  if (response.status === 422) {
    expect(Array.isArray(body.details)).toBe(true);
    for (const issue of body.details as Record<string, unknown>[]) {
      expect(Array.isArray(issue.path)).toBe(true);
      expect(typeof issue.message).toBe("string");
      expect(typeof issue.code).toBe("string");
    }
  }
  return body as { error: string };
}

/** Event rows in the database, by `projectId/environment`. */
export async function countEvents(server: TestServer): Promise<Map<string, number>> {
  const rows = await server.app.db.query<{ scope: string; count: number }>(
    "select project_id::text || '/' || environment as scope, count(*)::int as count " +
      "from events group by 1",
  );
  return new Map(rows.map((row) => [row.scope, Number(row.count)]));
}

/** All event rows in the database. */
export async function totalEvents(server: TestServer): Promise<number> {
  let total = 0;
  for (const count of (await countEvents(server)).values()) total += count;
  return total;
}
