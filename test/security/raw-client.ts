/**
 * What the security tests share: an HTTP/1.1 client over a raw socket (so a test can
 * send bytes no ordinary client would: control characters and unicode in headers,
 * invalid UTF-8, lying framing, slow trickles), the spec's error contract as one
 * assertion, and event rows counted in the database.
 */
import * as net from "node:net";
import { expect } from "vitest";
import type { TestServer } from "../support/test-server.js";

/** One request, as bytes on the wire. */
export interface RawRequest {
  method?: string;
  path?: string;
  /** Header lines in order; values are written as given (strings as UTF-8). */
  headers?: [name: string, value: string | Buffer][];
  body?: Buffer | string;
  /** Send the body with `Transfer-Encoding: chunked` (in chunks of `chunkSize`). */
  chunked?: boolean;
  chunkSize?: number;
}

/** A response read off the socket. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the first byte sent to the connection's close. */
  ms: number;
}

/** The request's bytes; adds Host, Connection: close and the body's framing. */
export function requestBytes(request: RawRequest): Buffer {
  const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : request.body;
  const lines: Buffer[] = [
    Buffer.from(`${request.method ?? "POST"} ${request.path ?? "/api/ingest/event"} HTTP/1.1\r\n`),
    Buffer.from("host: 127.0.0.1\r\nconnection: close\r\n"),
  ];
  for (const [name, value] of request.headers ?? []) {
    lines.push(Buffer.from(`${name}: `), Buffer.from(value), Buffer.from("\r\n"));
  }
  if (body === undefined) {
    lines.push(Buffer.from("\r\n"));
  } else if (request.chunked) {
    lines.push(Buffer.from("transfer-encoding: chunked\r\n\r\n"));
    const size = request.chunkSize ?? 64 * 1024;
    for (let at = 0; at < body.length; at += size) {
      const chunk = body.subarray(at, at + size);
      lines.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n"));
    }
    lines.push(Buffer.from("0\r\n\r\n"));
  } else {
    lines.push(Buffer.from(`content-length: ${body.length}\r\n\r\n`), body);
  }
  return Buffer.concat(lines);
}

/**
 * Sends `request` on a new connection and reads the response up to the server's close.
 * Rejects when no complete response came within `timeoutMs` (a hang).
 */
export function rawRequest(
  port: number,
  request: RawRequest | Buffer,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  const bytes = Buffer.isBuffer(request) ? request : requestBytes(request);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    // The server may answer (413) and close before the whole body is sent: EPIPE and
    // ECONNRESET on our side then are expected; what was read decides.
    socket.on("error", () => {});
    socket.once("close", () => {
      clearTimeout(timer);
      const parsed = parseResponse(Buffer.concat(chunks));
      if (parsed) resolve({ ...parsed, ms: performance.now() - started });
      else reject(new Error("the connection closed without a complete response"));
    });
    // No half-close: node's HTTP server drops the request of a client that sends FIN.
    socket.once("connect", () => socket.write(bytes));
  });
}

/**
 * Parses one HTTP/1.1 response (Content-Length framed, or up to the close), after any
 * interim 1xx responses (`Expect: 100-continue`).
 */
export function parseResponse(received: Buffer): Omit<RawResponse, "ms"> | undefined {
  let data = received;
  while (/^HTTP\/1\.[01] 1\d\d /.test(data.subarray(0, 13).toString("latin1"))) {
    const interimEnd = data.indexOf("\r\n\r\n");
    if (interimEnd === -1) return undefined;
    data = data.subarray(interimEnd + 4);
  }
  const end = data.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const [statusLine = "", ...lines] = data.subarray(0, end).toString("latin1").split("\r\n");
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  if (!status) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = data.subarray(end + 4);
  const length = headers["content-length"];
  if (length !== undefined) {
    if (body.length < Number(length)) return undefined;
    body = body.subarray(0, Number(length));
  }
  return { status: Number(status), headers, body: body.toString("utf8") };
}

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
