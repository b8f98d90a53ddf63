/**
 * Create Event, refused requests: every row of spec section 7 that applies to ingest,
 * with exact bodies, the validation rules of spec 2.1 and 2.2 at their boundaries, the
 * pipeline order of DESIGN section 4, and unknown routes. No refused request may leave
 * an event behind.
 */
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

/** Exact messages of spec section 7 (and src/errors.ts). */
const MISSING_KEY = "Missing API key. Provide a Bearer token or X-Project-Key header";
const INVALID_FORMAT = "Invalid API key format";
const INVALID_KEY = "Invalid API key";
const REVOKED = "API key has been revoked";
const TOO_LARGE = "Request payload too large";
const VALIDATION_FAILED = "Validation failed";

const MB = 1024 * 1024;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

type Path = (string | number)[];

interface ExpectedIssue {
  path: Path;
  /** Any non-empty code when absent (the spec fixes only `invalid_type` and `custom`). */
  code?: string;
  message?: string;
}

interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** A well-formed key that no project has. */
function unknownKey(environment: "test" | "live"): string {
  const random = [...randomBytes(40)].map((byte) => BASE62[byte % 62]).join("");
  return `pk_${environment}_${random}`;
}

/** A valid event body serialized to exactly `bytes` bytes (padded with an unknown field). */
function bodyOfBytes(bytes: number): string {
  const base = JSON.stringify({ ...validEvent(), padding: "" });
  const text = JSON.stringify({
    ...validEvent(),
    padding: "x".repeat(bytes - Buffer.byteLength(base)),
  });
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

/** A context object whose compact JSON is exactly `bytes` bytes, filled with `fill`. */
function contextOfBytes(bytes: number, fill = "x"): Record<string, string> {
  const overhead = Buffer.byteLength(JSON.stringify({ data: "" }));
  const fillBytes = Buffer.byteLength(fill);
  const room = bytes - overhead;
  const data = fill.repeat(Math.floor(room / fillBytes)) + "y".repeat(room % fillBytes);
  const context = { data };
  expect(Buffer.byteLength(JSON.stringify(context))).toBe(bytes);
  return context;
}

/** A JSON value (a string) whose compact JSON is exactly `bytes` bytes. */
function valueOfBytes(bytes: number): string {
  const value = "v".repeat(bytes - 2);
  expect(Buffer.byteLength(JSON.stringify(value))).toBe(bytes);
  return value;
}

function change(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { op: "set", path: "/status", before: "open", after: "closed", ...overrides };
}

function changes(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, index) => change({ path: `/items/${index}` }));
}

/** An event body without `field`. */
function without(field: string, body: Record<string, unknown> = validEvent()) {
  return Object.fromEntries(Object.entries(body).filter(([name]) => name !== field));
}

const byPath = (a: { path?: unknown }, b: { path?: unknown }) =>
  JSON.stringify(a.path).localeCompare(JSON.stringify(b.path));

/** Asserts the spec's 422 body, listing exactly the `expected` issues (in any order). */
function expectValidation(
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
function expectError(
  res: { status: number; body: Record<string, unknown> },
  status: number,
  message?: string,
): void {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(["error"]);
  if (message === undefined) expect(res.body.error).toEqual(expect.stringMatching(/\S/));
  else expect(res.body.error).toBe(message);
}

describe("POST /api/ingest/event: refused requests", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const countEvents = async (): Promise<number> => {
    const rows = await server.app.db.query<{ n: number }>("select count(*)::int as n from events");
    return rows[0]?.n ?? -1;
  };

  /**
   * Runs `send`, then `check` on its answer, then asserts that no event was stored
   * meanwhile (the answer is checked first so that a failure names the status).
   */
  const noNewEvent = async <T>(send: () => Promise<T>, check: (result: T) => void) => {
    const before = await countEvents();
    const result = await send();
    check(result);
    expect(await countEvents()).toBe(before);
  };

  /** A request with full control over headers and body; the answer parsed as JSON. */
  const send = async (init: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: Uint8Array;
  }): Promise<RawResponse & { body: Record<string, unknown> }> => {
    const response = await fetch(`${server.url}${init.path ?? "/api/ingest/event"}`, {
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
  };

  const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

  describe("401 and 403: credentials (spec 5, 7)", () => {
    it("401 with the missing-key message when no key is sent", async () => {
      await noNewEvent(
        () => postEvent(server, validEvent()),
        (res) => expectError(res, 401, MISSING_KEY),
      );
    });

    it.each([
      ["Bearer", "pk_prod_abcdef123456"],
      ["Bearer", "sk_test_abcdef123456"],
      ["Bearer", "sk_live_abcdef123456"],
      ["Bearer", "pk_test_"],
      ["Bearer", "pk_test"],
      ["Bearer", "pk__abcdef123456"],
      ["Bearer", "PK_TEST_abcdef123456"],
      ["Bearer", "pk_Test_abcdef123456"],
      ["Bearer", "pk_test_abc!def"],
      ["Bearer", "pk_test_abc.def"],
      ["Bearer", "not-a-key"],
      ["X-Project-Key", "pk_prod_abcdef123456"],
      ["X-Project-Key", "sk_test_abcdef123456"],
      ["X-Project-Key", "pk_live_"],
      ["X-Project-Key", "garbage"],
    ])("401 Invalid API key format for %s %s", async (style, value) => {
      const headers =
        style === "Bearer" ? { authorization: `Bearer ${value}` } : { "x-project-key": value };
      await noNewEvent(
        () => postEvent(server, validEvent(), headers),
        (res) => expectError(res, 401, INVALID_FORMAT),
      );
    });

    it("401 missing key for a Bearer scheme with no value: no key was supplied", async () => {
      await noNewEvent(
        () => postEvent(server, validEvent(), { authorization: "Bearer " }),
        (res) => expectError(res, 401, MISSING_KEY),
      );
    });

    it("a non-Bearer Authorization scheme does not hide a valid X-Project-Key", async () => {
      const key = await server.provision();
      const res = await postEvent(server, validEvent(), {
        authorization: "Basic dXNlcjpwYXNz",
        "x-project-key": key.secret,
      });
      expect(res.status).toBe(201);
    });

    it("401 Invalid API key format for Bearer glued to the key (no space)", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, validEvent(), { authorization: `Bearer${key.secret}` }),
        (res) => expectError(res, 401, INVALID_FORMAT),
      );
    });

    it.each([
      ["a bare key", (secret: string) => secret],
      ["another scheme", (secret: string) => `Token ${secret}`],
    ])(
      "401 Invalid API key format for a real key in Authorization as %s (not Bearer <key>)",
      async (_, value) => {
        const key = await server.provision();
        await noNewEvent(
          () => postEvent(server, validEvent(), { authorization: value(key.secret) }),
          (res) => expectError(res, 401, INVALID_FORMAT),
        );
        const listed = await fetch(`${server.url}/api/events`, {
          headers: { authorization: value(key.secret) },
        });
        expect(listed.status).toBe(401);
        expect(await listed.json()).toEqual({ error: INVALID_FORMAT });
      },
    );

    it.each([
      ["Bearer", "test"],
      ["Bearer", "live"],
      ["X-Project-Key", "test"],
      ["X-Project-Key", "live"],
    ] as const)("401 Invalid API key for a well-formed unknown %s %s key", async (style, env) => {
      const value = unknownKey(env);
      const headers =
        style === "Bearer" ? { authorization: `Bearer ${value}` } : { "x-project-key": value };
      await noNewEvent(
        () => postEvent(server, validEvent(), headers),
        (res) => expectError(res, 401, INVALID_KEY),
      );
    });

    it("401 Invalid API key for a real key with one character changed", async () => {
      const key = await server.provision();
      const last = key.secret.slice(-1);
      const altered = `${key.secret.slice(0, -1)}${last === "a" ? "b" : "a"}`;
      await noNewEvent(
        () => postEvent(server, validEvent(), bearer(altered)),
        (res) => expectError(res, 401, INVALID_KEY),
      );
    });

    it("403 API key has been revoked for a revoked key, with either header", async () => {
      const key = await server.provision();
      expect((await postEvent(server, validEvent(), bearer(key.secret))).status).toBe(201);
      await server.admin.revokeApiKey({ id: key.keyId });

      await noNewEvent(
        () => postEvent(server, validEvent(), bearer(key.secret)),
        (viaBearer) => expectError(viaBearer, 403, REVOKED),
      );
      await noNewEvent(
        () => postEvent(server, validEvent(), { "x-project-key": key.secret }),
        (viaHeader) => expectError(viaHeader, 403, REVOKED),
      );
    });

    it("403 API key has been revoked for a retired key, with either header", async () => {
      const key = await server.provision();
      expect((await postEvent(server, validEvent(), bearer(key.secret))).status).toBe(201);
      await server.admin.retireApiKey({ id: key.keyId });

      await noNewEvent(
        () => postEvent(server, validEvent(), bearer(key.secret)),
        (viaBearer) => expectError(viaBearer, 403, REVOKED),
      );
      await noNewEvent(
        () => postEvent(server, validEvent(), { "x-project-key": key.secret }),
        (viaHeader) => expectError(viaHeader, 403, REVOKED),
      );
    });

    it("revoking one key leaves the project's other keys working", async () => {
      const key = await server.provision();
      const other = await server.admin.createApiKey({
        projectId: key.projectId,
        environment: Environment.TEST,
      });
      await server.admin.revokeApiKey({ id: key.keyId });
      expectError(await postEvent(server, validEvent(), bearer(key.secret)), 403, REVOKED);
      expect((await postEvent(server, validEvent(), bearer(other.secret))).status).toBe(201);
    });
  });

  describe("400: content type and JSON", () => {
    let key: ProvisionedKey;
    beforeEach(async () => {
      key = await server.provision();
    });

    const body = () => new TextEncoder().encode(JSON.stringify(validEvent()));

    it("400 when Content-Type is missing", async () => {
      await noNewEvent(
        () => send({ headers: bearer(key.secret), body: body() }),
        (res) => expectError(res, 400),
      );
    });

    it.each([
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonp",
      "application/xml",
    ])("400 when Content-Type is %s", async (contentType) => {
      await noNewEvent(
        () =>
          send({ headers: { ...bearer(key.secret), "content-type": contentType }, body: body() }),
        (res) => expectError(res, 400),
      );
    });

    it.each([
      ["a truncated object", '{"actionKey":"user.login",'],
      ["single quotes", "{'actionKey':'user.login'}"],
      ["a trailing comma", '{"actionKey":"user.login",}'],
      ["an empty body", ""],
      ["plain text", "hello"],
      ["two objects", "{}{}"],
    ])("400 for malformed JSON: %s", async (_name, text) => {
      await noNewEvent(
        () => postEvent(server, text, bearer(key.secret)),
        (res) => expectError(res, 400),
      );
    });

    it.each([
      ["an array", "[]"],
      ["an array of an event", JSON.stringify([validEvent()])],
      ["a string", '"user.login"'],
      ["null", "null"],
      ["a number", "42"],
      ["a boolean", "true"],
    ])(
      "422 with a whole-body detail (empty path) for JSON that is not an object: %s",
      async (_name, text) => {
        await noNewEvent(
          () => postEvent(server, text, bearer(key.secret)),
          (res) => {
            expect(res.status).toBe(422);
            expect(res.body).toEqual({
              error: "Validation failed",
              details: [
                {
                  path: [],
                  message: expect.stringMatching(/^Expected object, received /),
                  code: "invalid_type",
                },
              ],
            });
          },
        );
      },
    );
  });

  describe("413: request size (spec 7, 8)", () => {
    it("413 Request payload too large for 1 MB + 1 byte", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, bodyOfBytes(MB + 1), bearer(key.secret)),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("413 for a body far over 1 MB", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, bodyOfBytes(3 * MB), bearer(key.secret)),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("413 for a chunked body (no Content-Length) that grows past 1 MB", async () => {
      const key = await server.provision();
      const text = bodyOfBytes(MB + 64 * 1024);
      await noNewEvent(
        () =>
          new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
            let answered = false;
            const req = httpRequest(
              `${server.url}/api/ingest/event`,
              {
                method: "POST",
                headers: {
                  "content-type": "application/json",
                  "transfer-encoding": "chunked",
                  ...bearer(key.secret),
                },
              },
              (response) => {
                answered = true;
                const chunks: Buffer[] = [];
                response.on("data", (chunk: Buffer) => chunks.push(chunk));
                response.on("end", () =>
                  resolve({
                    status: response.statusCode ?? 0,
                    body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<
                      string,
                      unknown
                    >,
                  }),
                );
                response.on("error", reject);
              },
            );
            // After the answer, the server may close the socket while the upload is still
            // being written: that write error is expected and the answer already arrived.
            req.on("error", (error) => {
              if (!answered) reject(error);
            });
            const bytes = Buffer.from(text, "utf8");
            for (let offset = 0; offset < bytes.length; offset += 64 * 1024) {
              req.write(bytes.subarray(offset, offset + 64 * 1024));
            }
            req.end();
          }),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("accepts a valid body of exactly 1 MB", async () => {
      const key = await server.provision();
      const res = await postEvent(server, bodyOfBytes(MB), bearer(key.secret));
      expect(res.status).toBe(201);
    });

    it("accepts a valid body of 1 MB - 1 byte", async () => {
      const key = await server.provision();
      const res = await postEvent(server, bodyOfBytes(MB - 1), bearer(key.secret));
      expect(res.status).toBe(201);
    });
  });

  describe("422: validation (spec 2.1, 2.2, 7)", () => {
    let key: ProvisionedKey;
    beforeEach(async () => {
      key = await server.provision();
    });

    const post = (body: unknown) => postEvent(server, body, bearer(key.secret));
    const expectAccepted = async (body: unknown) => {
      const res = await post(body);
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(["eventId", "receivedAt"]);
    };
    const expectRejected = async (body: unknown, expected: ExpectedIssue[]) => {
      await noNewEvent(
        () => post(body),
        (res) => expectValidation(res, expected),
      );
    };

    describe("string lengths: max ok, max + 1 fails", () => {
      it.each([
        ["actionKey", 64],
        ["actionDescription", 255],
        ["entityType", 64],
        ["entityId", 128],
        ["actorId", 128],
        ["actorDisplay", 128],
        ["tenantId", 64],
        ["source", 64],
      ])("%s: %i characters ok, one more fails", async (field, max) => {
        await expectAccepted(validEvent({ [field]: "a".repeat(max) }));
        await expectRejected(validEvent({ [field]: "a".repeat(max + 1) }), [
          { path: [field], code: "too_big" },
        ]);
      });

      it("change path: 256 characters ok, 257 fails", async () => {
        await expectAccepted(validEvent({ changes: [change({ path: "p".repeat(256) })] }));
        await expectRejected(validEvent({ changes: [change({ path: "p".repeat(257) })] }), [
          { path: ["changes", 0, "path"], code: "too_big" },
        ]);
      });
    });

    describe("lengths count characters (Unicode code points), not bytes or UTF-16 units", () => {
      // src/ingest/validation.ts counts code points: an emoji outside the BMP is one
      // character (two UTF-16 units, four UTF-8 bytes); a combining mark is its own one.
      it.each([
        ["actionKey", 64],
        ["entityId", 128],
        ["actorDisplay", 128],
      ])("%s: %i emoji ok, one more fails", async (field, max) => {
        await expectAccepted(validEvent({ [field]: "😀".repeat(max) }));
        await expectRejected(validEvent({ [field]: "😀".repeat(max + 1) }), [
          { path: [field], code: "too_big" },
        ]);
      });

      it.each([
        ["é (2 UTF-8 bytes)", "é"],
        ["€ (3 UTF-8 bytes)", "€"],
        ["漢 (3 UTF-8 bytes)", "漢"],
      ])("actionKey: 64 × %s ok, 65 fails", async (_name, char) => {
        await expectAccepted(validEvent({ actionKey: char.repeat(64) }));
        await expectRejected(validEvent({ actionKey: char.repeat(65) }), [
          { path: ["actionKey"], code: "too_big" },
        ]);
      });

      it("actionKey: an e + combining accent counts as two characters", async () => {
        const decomposed = "e\u0301";
        await expectAccepted(validEvent({ actionKey: decomposed.repeat(32) }));
        await expectRejected(validEvent({ actionKey: `${decomposed.repeat(32)}x` }), [
          { path: ["actionKey"], code: "too_big" },
        ]);
      });

      it("change path: 256 emoji ok, 257 fails", async () => {
        await expectAccepted(validEvent({ changes: [change({ path: "🙂".repeat(256) })] }));
        await expectRejected(validEvent({ changes: [change({ path: "🙂".repeat(257) })] }), [
          { path: ["changes", 0, "path"], code: "too_big" },
        ]);
      });
    });

    describe("serialized sizes: bytes of the compact JSON", () => {
      it("context: 10240 bytes ok, 10241 fails", async () => {
        await expectAccepted(validEvent({ context: contextOfBytes(10240) }));
        await expectRejected(validEvent({ context: contextOfBytes(10241) }), [
          { path: ["context"], code: "too_big" },
        ]);
      });

      it("context: counted in UTF-8 bytes, 10240 ok, 10241 fails with multibyte text", async () => {
        await expectAccepted(validEvent({ context: contextOfBytes(10240, "é") }));
        await expectRejected(validEvent({ context: contextOfBytes(10241, "é") }), [
          { path: ["context"], code: "too_big" },
        ]);
      });

      it.each(["before", "after"])("%s: 5120 bytes ok, 5121 fails", async (field) => {
        await expectAccepted(validEvent({ changes: [change({ [field]: valueOfBytes(5120) })] }));
        await expectRejected(validEvent({ changes: [change({ [field]: valueOfBytes(5121) })] }), [
          { path: ["changes", 0, field], code: "too_big" },
        ]);
      });

      it("before and after: an object value of 5120 bytes ok, 5121 fails", async () => {
        const ok = contextOfBytes(5120);
        const tooBig = contextOfBytes(5121);
        await expectAccepted(validEvent({ changes: [change({ before: ok, after: ok })] }));
        await expectRejected(validEvent({ changes: [change({ before: tooBig, after: tooBig })] }), [
          { path: ["changes", 0, "before"], code: "too_big" },
          { path: ["changes", 0, "after"], code: "too_big" },
        ]);
      });

      it("before/after limits apply to each change on its own", async () => {
        const ok = valueOfBytes(5120);
        await expectAccepted(
          validEvent({
            changes: Array.from({ length: 5 }, () => change({ before: ok, after: ok })),
          }),
        );
      });
    });

    describe("changes count", () => {
      it("100 changes ok, 101 fail", async () => {
        await expectAccepted(validEvent({ changes: changes(100) }));
        await expectRejected(validEvent({ changes: changes(101) }), [
          { path: ["changes"], code: "too_big" },
        ]);
      });
    });

    describe("types", () => {
      it.each([
        ["actionKey", 123],
        ["actionDescription", 1],
        ["entityType", 5],
        ["entityId", 42],
        ["actorId", true],
        ["actorDisplay", ["a"]],
        ["tenantId", { id: "t" }],
        ["source", 1.5],
        ["occurredAt", 1_700_000_000_000],
        ["actorType", 1],
      ])("%s given %j: invalid_type", async (field, value) => {
        await expectRejected(validEvent({ [field]: value }), [
          { path: [field], code: "invalid_type" },
        ]);
      });

      it.each([
        ["a string", "not changes"],
        ["an object", { op: "set" }],
        ["a number", 3],
      ])("changes given %s: invalid_type", async (_name, value) => {
        await expectRejected(validEvent({ changes: value }), [
          { path: ["changes"], code: "invalid_type" },
        ]);
      });

      it.each([
        ["an array", [{ a: 1 }]],
        ["a string", "context"],
        ["a number", 7],
        ["null", null],
      ])("context given %s: invalid_type", async (_name, value) => {
        await expectRejected(validEvent({ context: value }), [
          { path: ["context"], code: "invalid_type" },
        ]);
      });

      it.each([
        ["op", 1],
        ["path", ["a"]],
        ["redacted", "yes"],
      ])("change %s given %j: invalid_type", async (field, value) => {
        await expectRejected(validEvent({ changes: [change({ [field]: value })] }), [
          { path: ["changes", 0, field], code: "invalid_type" },
        ]);
      });

      it.each([
        ["a string", "set"],
        ["null", null],
        ["an array", [change()]],
      ])("a change given as %s: invalid_type at its index", async (_name, value) => {
        await expectRejected(validEvent({ changes: [change(), value] }), [
          { path: ["changes", 1], code: "invalid_type" },
        ]);
      });
    });

    describe("enums", () => {
      it.each(["robot", "User", "USER", "", "admin"])(
        "actorType %j: invalid_enum_value",
        async (actorType) => {
          await expectRejected(validEvent({ actorType }), [
            { path: ["actorType"], code: "invalid_enum_value" },
          ]);
        },
      );

      it.each(["replace", "SET", "delete", ""])("change op %j: invalid_enum_value", async (op) => {
        await expectRejected(validEvent({ changes: [change({ op })] }), [
          { path: ["changes", 0, "op"], code: "invalid_enum_value" },
        ]);
      });
    });

    describe("occurredAt", () => {
      it.each([
        "yesterday",
        "",
        "2024-13-01T00:00:00Z",
        "2024-01-32T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T25:00:00Z",
        "2024-01-01T10:61:00Z",
        "2024-01-01",
        "01/02/2024 10:00",
        "Mon, 01 Jan 2024 10:00:00 GMT",
      ])("occurredAt %j is rejected", async (occurredAt) => {
        await expectRejected(validEvent({ occurredAt }), [{ path: ["occurredAt"] }]);
      });
    });

    describe("required fields", () => {
      it.each(["entityType", "entityId", "actorId"])(
        "missing %s: invalid_type, message Required",
        async (field) => {
          await expectRejected(without(field), [
            { path: [field], code: "invalid_type", message: "Required" },
          ]);
        },
      );

      it("neither actionKey nor action: one issue with an empty path and code custom", async () => {
        await expectRejected(without("actionKey"), [{ path: [], code: "custom" }]);
      });

      it.each([{ actionKey: "" }, { actionKey: "", action: "" }, { action: "" }])(
        "%j names no action: the same issue as neither",
        async (actions) => {
          await expectRejected({ ...without("actionKey"), ...actions }, [
            { path: [], code: "custom" },
          ]);
        },
      );

      it.each(["op", "path", "before", "after"])(
        "a change without %s: invalid_type, message Required",
        async (field) => {
          await expectRejected(validEvent({ changes: [without(field, change())] }), [
            { path: ["changes", 0, field], code: "invalid_type", message: "Required" },
          ]);
        },
      );

      it("reports the nested path of the failing change: [changes, 3, op]", async () => {
        const list = changes(5);
        list[3] = without("op", change());
        await expectRejected(validEvent({ changes: list }), [
          { path: ["changes", 3, "op"], code: "invalid_type", message: "Required" },
        ]);
      });

      it("an empty object lists every required field and the action rule", async () => {
        await expectRejected({}, [
          { path: ["entityType"], code: "invalid_type", message: "Required" },
          { path: ["entityId"], code: "invalid_type", message: "Required" },
          { path: ["actorId"], code: "invalid_type", message: "Required" },
          { path: [], code: "custom" },
        ]);
      });
    });

    it("lists every failing field of one body", async () => {
      await expectRejected(
        {
          actionKey: "k".repeat(65),
          actionDescription: "d".repeat(256),
          entityType: 7,
          actorType: "robot",
          actorDisplay: "n".repeat(129),
          tenantId: "t".repeat(65),
          occurredAt: "not a date",
          source: "s".repeat(65),
          context: contextOfBytes(10241),
          changes: [
            change(),
            change({ op: "replace" }),
            without("path", change()),
            change({ before: valueOfBytes(5121), redacted: "no" }),
            without("op", change()),
          ],
        },
        [
          { path: ["actionKey"], code: "too_big" },
          { path: ["actionDescription"], code: "too_big" },
          { path: ["entityType"], code: "invalid_type" },
          { path: ["entityId"], code: "invalid_type", message: "Required" },
          { path: ["actorType"], code: "invalid_enum_value" },
          { path: ["actorId"], code: "invalid_type", message: "Required" },
          { path: ["actorDisplay"], code: "too_big" },
          { path: ["tenantId"], code: "too_big" },
          { path: ["occurredAt"] },
          { path: ["source"], code: "too_big" },
          { path: ["context"], code: "too_big" },
          { path: ["changes", 1, "op"], code: "invalid_enum_value" },
          { path: ["changes", 2, "path"], code: "invalid_type", message: "Required" },
          { path: ["changes", 3, "before"], code: "too_big" },
          { path: ["changes", 3, "redacted"], code: "invalid_type" },
          { path: ["changes", 4, "op"], code: "invalid_type", message: "Required" },
        ],
      );
    });
  });

  describe("pipeline order (DESIGN section 4)", () => {
    it("size before credentials: over 1 MB without a key is 413", async () => {
      await noNewEvent(
        () => postEvent(server, bodyOfBytes(MB + 1)),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("credentials before content type: wrong Content-Type without a key is 401", async () => {
      await noNewEvent(
        () =>
          send({
            headers: { "content-type": "text/plain" },
            body: new TextEncoder().encode(JSON.stringify(validEvent())),
          }),
        (res) => expectError(res, 401, MISSING_KEY),
      );
    });

    it("credentials before JSON: malformed JSON with an unknown key is 401", async () => {
      await noNewEvent(
        () => postEvent(server, "{", bearer(unknownKey("test"))),
        (res) => expectError(res, 401, INVALID_KEY),
      );
    });

    it("credentials before validation: an invalid body with a revoked key is 403", async () => {
      const key = await server.provision();
      await server.admin.revokeApiKey({ id: key.keyId });
      await noNewEvent(
        () => postEvent(server, {}, bearer(key.secret)),
        (res) => expectError(res, 403, REVOKED),
      );
    });

    it("JSON before validation: malformed JSON is 400, not 422", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, '{"entityType":', bearer(key.secret)),
        (res) => expectError(res, 400),
      );
    });
  });

  describe("other routes", () => {
    it.each([
      ["GET", "/api/unknown"],
      ["POST", "/api/ingest/events"],
      ["POST", "/api/ingest"],
      ["GET", "/"],
    ])("%s %s: 404 with a JSON error", async (method, path) => {
      await noNewEvent(
        () =>
          send({
            method,
            path,
            headers: { "content-type": "application/json" },
            ...(method === "POST"
              ? { body: new TextEncoder().encode(JSON.stringify(validEvent())) }
              : {}),
          }),
        (res) => expectError(res, 404),
      );
    });

    it.each(["GET", "PUT", "DELETE", "PATCH"])(
      "%s /api/ingest/event: 405 or 404 with a JSON error",
      async (method) => {
        const key = await server.provision();
        await noNewEvent(
          () =>
            send({
              method,
              headers: { ...bearer(key.secret), "content-type": "application/json" },
              ...(method === "GET" ? {} : { body: new TextEncoder().encode("{}") }),
            }),
          (res) => {
            expect([404, 405]).toContain(res.status);
            expectError(res, res.status);
          },
        );
      },
    );
  });
});
