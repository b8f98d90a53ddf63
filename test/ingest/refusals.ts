/**
 * Shared by the refused-request tests of Create Event (create-event.*.error.test.ts):
 * the spec's exact messages, bodies of exact sizes, the assertions of the spec's error
 * bodies, and a server whose event count proves that a refused request stored nothing.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

/** Exact messages of spec section 7 (and src/errors.ts). */
export const MISSING_KEY = "Missing API key. Provide a Bearer token or X-Project-Key header";
export const INVALID_FORMAT = "Invalid API key format";
export const INVALID_KEY = "Invalid API key";
export const REVOKED = "API key has been revoked";
export const TOO_LARGE = "Request payload too large";
export const VALIDATION_FAILED = "Validation failed";

export const MB = 1024 * 1024;
export const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export type Path = (string | number)[];

export interface ExpectedIssue {
  path: Path;
  /** Any non-empty code when absent (the spec fixes only `invalid_type` and `custom`). */
  code?: string;
  message?: string;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** A well-formed key that no project has. */
export function unknownKey(environment: "test" | "live"): string {
  const random = [...randomBytes(40)].map((byte) => BASE62[byte % 62]).join("");
  return `pk_${environment}_${random}`;
}

/** A valid event body serialized to exactly `bytes` bytes (padded with an unknown field). */
export function bodyOfBytes(bytes: number): string {
  const base = JSON.stringify({ ...validEvent(), padding: "" });
  const text = JSON.stringify({
    ...validEvent(),
    padding: "x".repeat(bytes - Buffer.byteLength(base)),
  });
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

/** A context object whose compact JSON is exactly `bytes` bytes, filled with `fill`. */
export function contextOfBytes(bytes: number, fill = "x"): Record<string, string> {
  const overhead = Buffer.byteLength(JSON.stringify({ data: "" }));
  const fillBytes = Buffer.byteLength(fill);
  const room = bytes - overhead;
  const data = fill.repeat(Math.floor(room / fillBytes)) + "y".repeat(room % fillBytes);
  const context = { data };
  expect(Buffer.byteLength(JSON.stringify(context))).toBe(bytes);
  return context;
}

/** A JSON value (a string) whose compact JSON is exactly `bytes` bytes. */
export function valueOfBytes(bytes: number): string {
  const value = "v".repeat(bytes - 2);
  expect(Buffer.byteLength(JSON.stringify(value))).toBe(bytes);
  return value;
}

export function change(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { op: "set", path: "/status", before: "open", after: "closed", ...overrides };
}

export function changes(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, index) => change({ path: `/items/${index}` }));
}

/** An event body without `field`. */
export function without(field: string, body: Record<string, unknown> = validEvent()) {
  return Object.fromEntries(Object.entries(body).filter(([name]) => name !== field));
}

export const byPath = (a: { path?: unknown }, b: { path?: unknown }) =>
  JSON.stringify(a.path).localeCompare(JSON.stringify(b.path));

/** Asserts the spec's 422 body, listing exactly the `expected` issues (in any order). */
export function expectValidation(
  res: { status: number; body: Record<string, unknown> },
  expected: ExpectedIssue[],
): void {
  expect(res.status).toBe(422);
  expect(Object.keys(res.body).sort()).toEqual(["details", "error"]);
  expect(res.body.error).toBe(VALIDATION_FAILED);
  const details = res.body.details;
  expect(Array.isArray(details)).toBe(true);
  const list = details as Record<string, unknown>[];
  for (const detail of list) {
    expect(Object.keys(detail).sort()).toEqual(["code", "message", "path"]);
    expect(Array.isArray(detail.path)).toBe(true);
    expect(detail.message).toEqual(expect.stringMatching(/\S/));
    expect(detail.code).toEqual(expect.stringMatching(/\S/));
  }
  const want = expected.map((issue) => ({
    path: issue.path,
    code: issue.code ?? expect.stringMatching(/\S/),
    message: issue.message ?? expect.stringMatching(/\S/),
  }));
  expect([...list].sort(byPath)).toEqual([...want].sort(byPath));
}

/** Asserts a JSON error body that is exactly `{error: message}`. */
export function expectError(
  res: { status: number; body: Record<string, unknown> },
  status: number,
  message?: string,
): void {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(["error"]);
  if (message === undefined) expect(res.body.error).toEqual(expect.stringMatching(/\S/));
  else expect(res.body.error).toBe(message);
}

/** What a refused-request test needs from its server. */
export interface RefusalServer {
  /** The running server (once the suite's beforeAll has run). */
  readonly server: TestServer;
  /**
   * Runs `send`, then `check` on its answer, then asserts that no event was stored
   * meanwhile (the answer is checked first so that a failure names the status).
   */
  noNewEvent<T>(send: () => Promise<T>, check: (result: T) => void): Promise<void>;
  /** A request with full control over headers and body; the answer parsed as JSON. */
  send(init: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: Uint8Array;
  }): Promise<RawResponse & { body: Record<string, unknown> }>;
}

/** The `authorization` header of a Bearer secret. */
export const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** Starts a server for the enclosing suite (closed after it). */
export function useRefusalServer(): RefusalServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  const running = (): TestServer => {
    if (!server) throw new Error("the suite's server has not started");
    return server;
  };
  const countEvents = async (): Promise<number> => {
    const rows = await running().app.db.query<{ n: number }>(
      "select count(*)::int as n from events",
    );
    return rows[0]?.n ?? -1;
  };
  return {
    get server() {
      return running();
    },
    async noNewEvent(send, check) {
      const before = await countEvents();
      const result = await send();
      check(result);
      expect(await countEvents()).toBe(before);
    },
    async send(init) {
      const response = await fetch(`${running().url}${init.path ?? "/api/ingest/event"}`, {
        method: init.method ?? "POST",
        headers: init.headers ?? {},
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      const text = await response.text();
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      return {
        status: response.status,
        headers: response.headers,
        text,
        body: JSON.parse(text) as Record<string, unknown>,
      };
    },
  };
}
