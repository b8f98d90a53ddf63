/**
 * The generators of the fuzz suite, shared by the CI fuzz test (fuzz.test.ts, a thousand
 * cases) and the long run (scripts/fuzz-long.ts, a hundred thousand against a live
 * service): bodies that start from a complete valid event and are mutated (fields dropped
 * or replaced by random JSON, huge strings, deep nesting, prototype keys, too many
 * changes), random JSON, random bytes, truncated or corrupted text, bodies over 1 MB;
 * content types and charsets; credentials; Idempotency-Keys; extra headers; the query
 * strings and Connect bodies of List Events. And the contracts an answer must keep, as
 * functions that name what is wrong (no test framework: the long run uses them outside
 * vitest).
 */
import fc from "fast-check";
import { bearer } from "../events/events-client.js";
import { validEvent } from "../support/test-server.js";

/** One megabyte, the request size limit. */
export const MB = 1024 * 1024;

/** A JSON object being built or mutated. */
export type JsonObject = Record<string, unknown>;
/** A change to a valid event. */
export type Mutation = (event: JsonObject) => void;

/** Sets an own property, even `__proto__` (plain assignment would set the prototype). */
export function setKey(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** A complete valid event: every field of spec 2.1, with context and changes. */
export function fullEvent(): JsonObject {
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

export const FIELDS = [
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
export const CHANGE_FIELDS = ["op", "path", "before", "after", "redacted"];
export const PROTOTYPE_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
];
export const INJECTIONS = [
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

export const hugeString = fc
  .record({
    unit: fc.constantFrom("x", "😀", "e\u0301", "<&>\"'", "\u0000", "\ud800", "\\"),
    length: fc.constantFrom(0, 1, 63, 64, 65, 127, 128, 129, 255, 256, 257, 5_000, 10_241, 200_000),
  })
  .map(({ unit, length }) => unit.repeat(length));

export const deep = fc
  .record({
    depth: fc.constantFrom(2, 50, 97, 98, 99, 100, 101, 1_000, 20_000),
    kind: fc.constantFrom<"arr" | "obj">("arr", "obj"),
  })
  .map(({ depth, kind }) => deepMarker(depth, kind));

/** Any value a field might be replaced with. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
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

export const anyKey = fc.oneof(
  fc.constantFrom(...PROTOTYPE_KEYS),
  fc.string({ unit: "binary", maxLength: 20 }),
);

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
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
export const mutatedEvent = fc
  .tuple(fc.array(mutation, { maxLength: 4 }), fc.boolean())
  .map(([mutations, pretty]) => {
    const event = fullEvent();
    for (const mutate of mutations) mutate(event);
    const text = pretty ? JSON.stringify(event, null, 2) : JSON.stringify(event);
    return Buffer.from(
      text.replace(DEEP, (_all, depth: string, kind: string) => nestedText(Number(depth), kind)),
    );
  });

export const validText = JSON.stringify(fullEvent());

/** Every kind of body. */
export const anyBody: fc.Arbitrary<Buffer> = fc.oneof(
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

export const contentType = fc.oneof(
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
export const headerValue = (value: string) => value.replace(/[\r\n]/g, "");

/** The credentials the fuzzer mixes: keys of two projects, a revoked one, a frontend token. */
export interface Credentials {
  a: string;
  aLive: string;
  b: string;
  revoked: string;
  token: string;
}

export function credentialHeaders(keys: Credentials): fc.Arbitrary<[string, string][]> {
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

export const idempotencyKey = fc.oneof(
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

export const extraHeaders = fc.array(
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

/** A string of any code units, or one of the values that tripped parsers before. */
const anyText = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom(...INJECTIONS) },
  { weight: 1, arbitrary: hugeString },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "",
      " ",
      "0",
      "-1",
      "1e3",
      "101",
      "100",
      "1",
      "NaN",
      "2024-05-01T10:00:00Z",
      "2024-05-01",
      "0000-01-01T00:00:00Z",
      "9999-12-31T23:59:59.999Z",
      "10000-01-01T00:00:00Z",
      "2024-02-30T00:00:00Z",
      "user.login",
      "user",
      "true",
      "null",
      "%",
      "%zz",
      "%E0%A4%A",
      "%00",
      "%C0%AE",
      "eyJ2IjoxfQ",
      "AAAA",
    ),
  },
);

/** The parameters of List Events, by JSON and proto name, and some it does not know. */
const LIST_PARAMETERS = [
  "actorId",
  "actor_id",
  "entityType",
  "entity_type",
  "entityId",
  "entity_id",
  "action",
  "tenantId",
  "tenant_id",
  "q",
  "from",
  "to",
  "limit",
  "cursor",
  "__proto__",
  "constructor",
];

/**
 * A query string for GET /api/events: known and unknown parameters (some repeated), with
 * values percent-encoded or sent raw (invalid escapes included), at most about 8 KB.
 */
export const listQuery: fc.Arbitrary<string> = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...LIST_PARAMETERS) },
        { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
      ),
      anyText,
      fc.boolean(),
    ),
    { maxLength: 6 },
  )
  .map((pairs) =>
    pairs
      .map(([name, value, raw]) => {
        const text = value.slice(0, 1200);
        // Raw: what a careless client writes, minus what would end the request line.
        const encoded = raw ? text.replace(/[\s#]/g, "+") : percentEncode(text);
        return `${percentEncode(name)}=${encoded}`;
      })
      .join("&"),
  );

/** `text` percent-encoded as UTF-8 (a lone surrogate as U+FFFD, where encodeURIComponent throws). */
function percentEncode(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(char)
      ? char
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** A Connect JSON body of ListEvents: the request's fields with any values, or anything. */
export const connectListBody: fc.Arbitrary<Buffer> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .dictionary(
        fc.constantFrom(...LIST_PARAMETERS),
        fc.oneof(anyText, anyValue, fc.integer(), fc.double()),
        { maxKeys: 5 },
      )
      .map((fields) => {
        const body: JsonObject = {};
        for (const [name, value] of Object.entries(fields)) setKey(body, name, value);
        return Buffer.from(
          JSON.stringify(body).replace(DEEP, (_all, depth: string, kind: string) =>
            nestedText(Number(depth), kind),
          ),
        );
      }),
  },
  { weight: 1, arbitrary: fc.jsonValue().map((value) => Buffer.from(JSON.stringify(value))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)) },
);

/** The headers of a Connect unary call, sometimes with its protocol version or a timeout. */
export const connectHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    fc.constant<[string, string]>(["connect-protocol-version", "1"]),
    fc
      .constantFrom("0", "2", "", "x")
      .map((value): [string, string] => ["connect-protocol-version", value]),
    fc
      // No short deadline: its expiry is a 504 by the Connect protocol, not a fault.
      .constantFrom("15000", "-5", "99999999999", "x", "")
      .map((value): [string, string] => ["connect-timeout-ms", value]),
    fc
      .constantFrom("gzip", "br", "identity", "x")
      .map((value): [string, string] => ["content-encoding", value]),
  ),
  { maxLength: 2 },
);

/** The statuses spec section 7 lists for refusals (500 aside). */
export const SPEC_ERROR_STATUSES: readonly number[] = [400, 401, 403, 409, 413, 422, 429];

/**
 * What is wrong with a REST answer that is not a success, by the spec's contract (a
 * listed status and a JSON object with an `error` string; 422 with `details` of {path,
 * message, code}); undefined when nothing is.
 */
export function specErrorProblem(status: number, body: string): string | undefined {
  if (!SPEC_ERROR_STATUSES.includes(status)) return `status ${status} is not in spec section 7`;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return `status ${status} without a JSON body`;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return "the error body is not a JSON object";
  }
  const error = json as Record<string, unknown>;
  if (typeof error.error !== "string") return "the error body has no `error` string";
  if (status === 422) {
    if (!Array.isArray(error.details)) return "a 422 without `details`";
    for (const issue of error.details as Record<string, unknown>[]) {
      if (
        !Array.isArray(issue?.path) ||
        typeof issue.message !== "string" ||
        typeof issue.code !== "string"
      ) {
        return "a 422 detail is not {path, message, code}";
      }
    }
  }
  return undefined;
}

/** The HTTP status of each Connect error code (the Connect protocol's table). */
export const CONNECT_STATUS: Readonly<Record<string, number>> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/**
 * What is wrong with a failed Connect unary answer: a JSON object with a known `code`
 * whose status is the one answered, and a `message` string when present. A content type
 * the server does not speak is 415 with no body (the Connect protocol's rule). A request
 * that is not valid HTTP (a control character in a header) is refused by the HTTP layer
 * before any protocol is known, with the REST shape.
 */
export function connectErrorProblem(status: number, body: string): string | undefined {
  if (status === 415) return undefined;
  if (status === 400 && body === '{"error":"Malformed HTTP request"}') return undefined;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return `status ${status} without a JSON body`;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return "the error body is not a JSON object";
  }
  const error = json as Record<string, unknown>;
  if (typeof error.code !== "string" || !(error.code in CONNECT_STATUS)) {
    return `unknown Connect code ${String(error.code)}`;
  }
  if (CONNECT_STATUS[error.code] !== status) return `code ${error.code} with status ${status}`;
  if (error.message !== undefined && typeof error.message !== "string") {
    return "the `message` is not a string";
  }
  return undefined;
}
