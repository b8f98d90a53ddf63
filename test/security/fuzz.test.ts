/**
 * Fuzzing Create Event (issue 7, hostile input) with fast-check. Each case is one request
 * on a raw socket: a body that starts from a complete valid event and is mutated
 * (fields dropped or replaced by random JSON, huge strings, deep nesting, prototype keys,
 * too many changes), or random JSON, random bytes, truncated or corrupted text, or over
 * 1 MB; random content types and charsets; valid, foreign, revoked, read-only and
 * malformed credentials; Idempotency-Key values with unicode and control characters;
 * sometimes chunked. Every answer must come within a bounded time, never be a 500, be
 * 201/200 or a status of spec section 7 with a JSON `error` body, and leave exactly one
 * new event row (for a 201, in the scope of a key the request carried) or none.
 *
 * Bounded: FUZZ_RUNS cases (1,000 by default; about 10 s on PGlite, 15 s on PostgreSQL
 * here) or FUZZ_TIME_LIMIT_MS (45 s), whichever comes first; the count run is logged.
 * A failure prints the seed; FUZZ_SEED=<seed> replays it.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { bearer, tokenFor } from "../events/events-client.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { countEvents, expectSpecError, type RawRequest, rawRequest } from "./raw-client.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1_000);
const TIME_LIMIT_MS = Number(process.env.FUZZ_TIME_LIMIT_MS ?? 45_000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
/** Longer than any honest answer takes, even for a 2 MB body on a busy machine. */
const REQUEST_TIMEOUT_MS = 15_000;
const MB = 1024 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type JsonObject = Record<string, unknown>;
type Mutation = (event: JsonObject) => void;

/** Sets an own property, even `__proto__` (plain assignment would set the prototype). */
function setKey(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** A complete valid event: every field of spec 2.1, with context and changes. */
function fullEvent(): JsonObject {
  return validEvent({
    action: "login",
    actionDescription: "User logged in",
    actorType: "user",
    actorDisplay: "Ada",
    tenantId: "tenant-1",
    occurredAt: "2024-05-01T10:00:00Z",
    source: "web",
    context: { ip: "203.0.113.9", tags: ["a", "b"], nested: { ok: true } },
    changes: [
      { op: "set", path: "email", before: "a@example.com", after: "b@example.com" },
      { op: "unset", path: "phone", before: null, after: null, redacted: true },
    ],
  });
}

const FIELDS = [
  "actionKey",
  "action",
  "actionDescription",
  "entityType",
  "entityId",
  "actorType",
  "actorId",
  "actorDisplay",
  "tenantId",
  "occurredAt",
  "source",
  "context",
  "changes",
];
const CHANGE_FIELDS = ["op", "path", "before", "after", "redacted"];
const PROTOTYPE_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty"];
const INJECTIONS = [
  "'; DROP TABLE events; --",
  '" OR 1=1 --',
  "<script>alert(1)</script>",
  "&amp;&lt;",
  "$" + "{jndi:ldap://x}",
  "{{7*7}}",
  "\u0000",
  "\ud800",
  "\udfff\ud800",
  "e\u0301",
  "\u202e",
];

/**
 * A nested value written into the JSON text after serialization: the test's own
 * JSON.stringify would overflow its stack at the depths sent.
 */
const DEEP = /"\\u0001deep:(\d+):(arr|obj)\\u0001"/g;
const deepMarker = (depth: number, kind: "arr" | "obj") => `\u0001deep:${depth}:${kind}\u0001`;
function nestedText(depth: number, kind: string): string {
  return kind === "arr"
    ? `${"[".repeat(depth)}1${"]".repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

const hugeString = fc
  .record({
    unit: fc.constantFrom("x", "😀", "e\u0301", "<&>\"'", "\u0000", "\ud800", "\\"),
    length: fc.constantFrom(0, 1, 63, 64, 65, 127, 128, 129, 255, 256, 257, 5_000, 10_241, 200_000),
  })
  .map(({ unit, length }) => unit.repeat(length));

const deep = fc
  .record({
    depth: fc.constantFrom(2, 50, 97, 98, 99, 100, 101, 1_000, 20_000),
    kind: fc.constantFrom<"arr" | "obj">("arr", "obj"),
  })
  .map(({ depth, kind }) => deepMarker(depth, kind));

/** Any value a field might be replaced with. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: hugeString },
  { weight: 1, arbitrary: deep },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 80 }) },
  { weight: 2, arbitrary: fc.constantFrom(...INJECTIONS) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(null, true, 0, -1, 1e308, "", [], {}, "user", "set"),
  },
);

const anyKey = fc.oneof(
  fc.constantFrom(...PROTOTYPE_KEYS),
  fc.string({ unit: "binary", maxLength: 20 }),
);

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.constantFrom(...FIELDS).map(
    (name): Mutation =>
      (event) =>
        delete event[name],
  ),
  fc.tuple(fc.constantFrom(...FIELDS), anyValue).map(
    ([name, value]): Mutation =>
      (event) =>
        setKey(event, name, value),
  ),
  fc.tuple(anyKey, anyValue).map(
    ([key, value]): Mutation =>
      (event) =>
        setKey(event, key, value),
  ),
  fc.tuple(anyKey, anyValue).map(
    ([key, value]): Mutation =>
      (event) => {
        const context =
          typeof event.context === "object" && event.context !== null
            ? { ...(event.context as JsonObject) }
            : {};
        setKey(context, key, value);
        event.context = context;
      },
  ),
  fc.tuple(fc.nat(2), fc.constantFrom(...CHANGE_FIELDS), fc.option(anyValue)).map(
    ([index, name, value]): Mutation =>
      (event) => {
        if (!Array.isArray(event.changes)) return;
        const changes = [...(event.changes as unknown[])];
        const change = changes[index];
        if (typeof change !== "object" || change === null) return;
        const copy = { ...(change as JsonObject) };
        if (value === null) delete copy[name];
        else setKey(copy, name, value);
        changes[index] = copy;
        event.changes = changes;
      },
  ),
  fc.constantFrom(0, 1, 100, 101).map(
    (count): Mutation =>
      (event) => {
        event.changes = Array.from({ length: count }, (_, i) => ({
          op: "add",
          path: `items.${i}`,
          before: null,
          after: i,
        }));
      },
  ),
);

/** A valid event, mutated, serialized (compact or pretty). */
const mutatedEvent = fc
  .tuple(fc.array(mutation, { maxLength: 4 }), fc.boolean())
  .map(([mutations, pretty]) => {
    const event = fullEvent();
    for (const mutate of mutations) mutate(event);
    const text = pretty ? JSON.stringify(event, null, 2) : JSON.stringify(event);
    return Buffer.from(
      text.replace(DEEP, (_all, depth: string, kind: string) => nestedText(Number(depth), kind)),
    );
  });

const validText = JSON.stringify(fullEvent());

/** Every kind of body. */
const anyBody: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 14, arbitrary: mutatedEvent },
  { weight: 1, arbitrary: fc.jsonValue().map((value) => Buffer.from(JSON.stringify(value))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)) },
  {
    weight: 1,
    arbitrary: fc
      .nat(validText.length - 1)
      .map((length) => Buffer.from(validText.slice(0, length))),
  },
  {
    // Random bytes (often invalid UTF-8) spliced into a valid event.
    weight: 1,
    arbitrary: fc
      .tuple(fc.nat(validText.length), fc.uint8Array({ minLength: 1, maxLength: 8 }))
      .map(([at, bytes]) => {
        const text = Buffer.from(validText);
        return Buffer.concat([text.subarray(0, at), Buffer.from(bytes), text.subarray(at)]);
      }),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        "",
        "null",
        "[]",
        "{}",
        `\ufeff${validText}`,
        `${validText}${validText}`,
        "{'actorId': 'x'}",
        "NaN",
        `{"actorId": 1e999}`,
        `{"actionKey":"a.b","entityType":"e","entityId":"e","actorId":"a","actorId":"b"}`,
      )
      .map((text) => Buffer.from(text)),
  },
  {
    // Over the 1 MB limit (rare: each costs a megabyte on the wire).
    weight: 1,
    arbitrary: fc.constantFrom(MB + 1, MB + 4096, 2 * MB).map((size) => {
      const base = JSON.stringify({ ...fullEvent(), padding: "" });
      return Buffer.from(
        JSON.stringify({ ...fullEvent(), padding: "p".repeat(size - Buffer.byteLength(base)) }),
      );
    }),
  },
);

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>("application/json") },
  {
    weight: 4,
    arbitrary: fc.constantFrom<string | undefined>(
      "application/json; charset=utf-8",
      'Application/JSON;Charset="UTF-8"',
      "application/json;charset=utf8",
      "application/json; charset=latin1",
      "application/json; charset=utf-16",
      "application/json;;",
      "application/json; boundary=x",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=zz",
      "application/jsonx",
      "application/problem+json",
      "",
      "*/*",
      " application/json ",
      undefined,
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
);

/** A header value as it goes on the wire: UTF-8, without CR or LF (which would end it). */
const headerValue = (value: string) => value.replace(/[\r\n]/g, "");

interface Credentials {
  a: string;
  aLive: string;
  b: string;
  revoked: string;
  token: string;
}

function credentialHeaders(keys: Credentials): fc.Arbitrary<[string, string][]> {
  const weird = fc.oneof(
    fc.string({ unit: "binary", maxLength: 100 }),
    fc.string({ unit: "grapheme", maxLength: 60 }).map((text) => `Bearer ${text}`),
    fc.constantFrom(
      "Bearer",
      "Bearer ",
      `bearer ${keys.a}`,
      `BEARER    ${keys.a}   `,
      "Basic dXNlcjpwYXNz",
      "Bearer pk_test_",
      "Bearer pk_prod_abcdef",
      `Bearer ${keys.a.slice(0, -1)}`,
      `Bearer ${keys.a}x`,
      `Bearer ${keys.a.replace("pk_test_", "pk_live_")}`,
      `Bearer ${keys.a}, Bearer ${keys.b}`,
      "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
      "Bearer eyJ.eyJ.sig",
      `Bearer ${keys.token}x`,
      `Bearer ${"k".repeat(7000)}`,
      `Bearer pk_test_${"é".repeat(40)}`,
    ),
  );
  return fc.oneof(
    {
      weight: 10,
      arbitrary: fc.constant<[string, string][]>([
        ["authorization", bearer(keys.a).authorization ?? ""],
      ]),
    },
    { weight: 2, arbitrary: fc.constant<[string, string][]>([["x-project-key", keys.a]]) },
    {
      weight: 1,
      arbitrary: fc.constant<[string, string][]>([["authorization", `Bearer ${keys.aLive}`]]),
    },
    {
      weight: 1,
      arbitrary: fc.constant<[string, string][]>([["authorization", `Bearer ${keys.b}`]]),
    },
    {
      weight: 1,
      arbitrary: fc.constant<[string, string][]>([["authorization", `Bearer ${keys.revoked}`]]),
    },
    {
      weight: 1,
      arbitrary: fc.constant<[string, string][]>([["authorization", `Bearer ${keys.token}`]]),
    },
    {
      weight: 1,
      arbitrary: fc.constant<[string, string][]>([
        ["authorization", `Bearer ${keys.b}`],
        ["x-project-key", keys.a],
      ]),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom("authorization", "x-project-key"), weird)
        .map(([name, value]): [string, string][] => [[name, headerValue(value)]]),
    },
    { weight: 1, arbitrary: fc.constant<[string, string][]>([]) },
  );
}

const idempotencyKey = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>(undefined) },
  // A small pool, so that keys repeat: replays (200) and conflicts (409).
  { weight: 3, arbitrary: fc.constantFrom<string | undefined>("replay-1", "replay-2") },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 300 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 100 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<string | undefined>(
      "",
      " ",
      "k".repeat(255),
      "k".repeat(256),
      "é".repeat(128),
      "\u0000",
      "a\u0007b",
      "tab\there",
      "\u202e",
      "😀",
      "\x7f",
    ),
  },
);

const extraHeaders = fc.array(
  fc.tuple(
    fc.constantFrom(
      "x-request-id",
      "accept",
      "accept-encoding",
      "content-encoding",
      "x-forwarded-proto",
      "x-forwarded-for",
      "origin",
      "expect",
      "x-custom",
    ),
    fc.oneof(
      fc.string({ unit: "binary", maxLength: 60 }),
      fc.constantFrom("100-continue", "gzip", "https", "../../etc/passwd", "%00"),
    ),
  ),
  { maxLength: 3 },
);

describe("fuzzing Create Event", () => {
  let server: TestServer;
  let keys: Credentials;
  /** Scope (`projectId/environment`) of each key that may create events. */
  let scopes: Map<string, string>;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    const a = await server.provision();
    const live = await server.admin.createApiKey({
      projectId: a.projectId,
      environment: Environment.LIVE,
    });
    const b = await server.provision();
    const revoked = await server.provision();
    await server.admin.revokeApiKey({ id: revoked.keyId });
    keys = {
      a: a.secret,
      aLive: live.secret,
      b: b.secret,
      revoked: revoked.secret,
      token: await tokenFor(server, a.secret, { expiresInSeconds: 3600 }),
    };
    scopes = new Map([
      [a.secret, `${a.projectId}/test`],
      [live.secret, `${a.projectId}/live`],
      [b.secret, `${b.projectId}/test`],
    ]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("random and mutated requests: never a 500 or a hang, always the spec's JSON error, no event from a refusal", async () => {
    const statuses = new Map<number, number>();
    let cases = 0;

    const property = fc.asyncProperty(
      anyBody,
      contentType,
      credentialHeaders(keys),
      idempotencyKey,
      extraHeaders,
      fc.boolean(),
      async (body, type, credentials, idempotency, extra, chunked) => {
        cases++;
        const headers: [string, string][] = [...credentials];
        if (type !== undefined) headers.push(["content-type", headerValue(type)]);
        if (idempotency !== undefined) headers.push(["idempotency-key", headerValue(idempotency)]);
        for (const [name, value] of extra) headers.push([name, headerValue(value)]);
        const request: RawRequest = { headers, body, chunked: chunked && body.length > 0 };

        const before = await countEvents(server);
        const response = await rawRequest(server.port, request, REQUEST_TIMEOUT_MS);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const after = await countEvents(server);
        const grown = [...after].filter(([scope, count]) => count !== (before.get(scope) ?? 0));

        expect(response.status, response.body).not.toBe(500);
        if (response.status === 201 || response.status === 200) {
          const json = JSON.parse(response.body) as Record<string, unknown>;
          expect(json.eventId).toMatch(UUID);
          expect(Number.isNaN(Date.parse(json.receivedAt as string))).toBe(false);
        } else {
          expectSpecError(response);
        }
        if (response.status === 200) {
          expect(idempotency, "a replay needs an Idempotency-Key").toBeDefined();
        }
        if (response.status === 201) {
          // Exactly one new row, in the scope of a key this request carried.
          expect(grown).toHaveLength(1);
          const [scope, count] = grown[0] ?? ["", 0];
          expect(count).toBe((before.get(scope) ?? 0) + 1);
          const carried = [...scopes]
            .filter(([secret]) => headers.some(([, value]) => value.includes(secret)))
            .map(([, keyScope]) => keyScope);
          expect(carried).toContain(scope);
        } else {
          expect(grown, `status ${response.status} left rows behind`).toEqual([]);
        }
      },
    );

    const details = await fc.check(property, {
      numRuns: RUNS,
      ...(SEED === undefined ? {} : { seed: SEED }),
      plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS)],
    });
    const histogram = Object.fromEntries([...statuses].sort(([x], [y]) => x - y));
    console.log(
      `fuzz: ${details.numRuns} cases run (${cases} requests with shrinking), seed ${details.seed}, ` +
        `statuses ${JSON.stringify(histogram)}`,
    );
    if (details.failed) throw new Error(fc.defaultReportMessage(details) ?? "property failed");
    expect(details.numRuns).toBeGreaterThanOrEqual(Math.min(RUNS, 100));
    // Both sides of the contract were exercised.
    expect(statuses.get(201) ?? 0).toBeGreaterThan(0);
    expect([...statuses.keys()].filter((status) => status >= 400).length).toBeGreaterThan(3);

    // The server is still well: no prototype polluted, and a valid event is created.
    expect(Object.keys(Object.prototype)).toEqual([]);
    const healthy = await postEvent(server, validEvent(), bearer(keys.a));
    expect(healthy.status).toBe(201);
  }, 120_000);
});
