/**
 * The OpenAPI document (gen/openapi/openapi.json, generated from the protos): it is valid
 * OpenAPI 3.1, served at GET /openapi.json, covers exactly the REST routes the service
 * routes, and every response of the running service below (each success, each error
 * body, the headers the document requires) conforms to it.
 */
import { getOption, hasOption } from "@bufbuild/protobuf";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { SERVICES } from "../../src/app.js";
import { Messages } from "../../src/errors.js";
import { utcMonth } from "../../src/limits/monthly-quota.js";
import { CSV_HEADER } from "../../src/transport/event-rendering.js";
import { EXPORT_PATH, STREAM_PATH } from "../../src/transport/rest-streams.js";
import { bearer, issueToken, listEvents, tokenFor } from "../events/events-client.js";
import { exportUrl, ndjson, openSse, type SseEvent } from "../events/log-streams-client.js";
import { postBatch } from "../ingest/bulk.support.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import { createContract, type ObservedResponse, readOpenApiDocument } from "./openapi-contract.js";

const RATE_LIMIT_MAX = 5;
const CREATE = ["POST", "/api/ingest/event"] as const;
const LIST = ["GET", "/api/events"] as const;
const TOKENS = ["POST", "/api/tokens/frontend"] as const;
const EXPORT = ["GET", EXPORT_PATH] as const;
const STREAM = ["GET", STREAM_PATH] as const;

/** The keywords of a schema this file reads. */
interface Schema {
  pattern?: string;
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
}

describe("the OpenAPI document", () => {
  const document = readOpenApiDocument();
  const contract = createContract(document);
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: String(RATE_LIMIT_MAX) });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Asserts the status, then that the response conforms to the document. */
  const expectConforms = (
    [method, path]: readonly [string, string],
    response: ObservedResponse,
    status: number,
  ) => {
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(contract.check(method, path, response)).toEqual([]);
  };
  const create = (key: ProvisionedKey, body: unknown = validEvent(), headers = {}) =>
    postEvent(server, body, { ...bearer(key.secret), ...headers });

  it("is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)", async () => {
    const validator = new Validator();
    const result = await validator.validate(
      structuredClone(document) as unknown as Parameters<Validator["validate"]>[0],
    );
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("describes a date-time as the service reads it, in the body and in the query alike", async () => {
    const schemas = (document as unknown as { components: { schemas: Record<string, Schema> } })
      .components.schemas;
    const occurredAt = schemas.Event?.properties?.occurredAt;
    const queryBounds = (
      document.paths["/api/events"] as unknown as {
        get: { parameters: { name: string; schema: Schema }[] };
      }
    ).get.parameters.filter((parameter) => parameter.name === "from" || parameter.name === "to");
    expect(queryBounds).toHaveLength(2);
    for (const schema of [occurredAt, ...queryBounds.map((parameter) => parameter.schema)]) {
      expect(schema?.pattern).toBe(occurredAt?.pattern);
      expect(schema?.format).toBeUndefined();
      expect(schema?.description).toContain("between years 0001 and 9999 in UTC");
    }
    // Forms the list takes (no seconds, an offset without a colon) match the pattern.
    const pattern = new RegExp(occurredAt?.pattern ?? "^$");
    const key = await server.provision();
    for (const from of ["2026-01-01T00:00Z", "2026-01-01T00:00:00+0100"]) {
      expect(pattern.test(from), from).toBe(true);
      expect((await listEvents(server, bearer(key.secret), { from })).status, from).toBe(200);
    }
  });

  it("has one operation per google.api.http route of the services the app serves, and the REST streams", () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((verb) => `${verb.toUpperCase()} ${path}`),
    );
    const routes = SERVICES.flatMap((service) => service.methods)
      .filter((method) => hasOption(method, httpRule))
      .map((method) => {
        const { pattern } = getOption(method, httpRule);
        return `${String(pattern.case).toUpperCase()} ${String(pattern.value)}`;
      });
    // The REST forms of the server streams (rest-streams.ts), which have no annotation.
    const streams = [`GET ${EXPORT_PATH}`, `GET ${STREAM_PATH}`];
    expect(operations.sort()).toEqual([...routes, ...streams].sort());
    expect(routes).toContain("POST /api/ingest/event");
    expect(routes).toContain("GET /api/events");
  });

  it("is served at GET /openapi.json as committed, readable from any origin, with HEAD and ETag", async () => {
    const response = await fetch(`${server.url}/openapi.json`, {
      headers: { origin: "https://tools.example" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(await response.json()).toEqual(document);

    const etag = response.headers.get("etag") ?? "";
    const again = await fetch(`${server.url}/openapi.json`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    const head = await fetch(`${server.url}/openapi.json`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const post = await fetch(`${server.url}/openapi.json`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  describe("Create Event responses conform", () => {
    it("201 for a full event, 200 with Idempotent-Replayed for its replay, 409 for another body", async () => {
      const key = await server.provision();
      const event = validEvent({
        actionDescription: "Plan changed",
        actorType: "service",
        actorDisplay: "Billing <bot>",
        tenantId: "tenant_1",
        occurredAt: "2026-01-02T03:04+01:00",
        source: "billing",
        context: { ip: "203.0.113.7", nested: { list: [1, "two", null] } },
        changes: [
          { op: "set", path: "plan", before: null, after: { name: "pro" }, redacted: true },
        ],
      });
      const headers = { "idempotency-key": "contract-1", "x-request-id": "req-contract-1" };
      const created = await create(key, event, headers);
      expectConforms(CREATE, created, 201);
      expect(created.headers.get("x-request-id")).toBe("req-contract-1");
      const replay = await create(key, event, headers);
      expectConforms(CREATE, replay, 200);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expectConforms(CREATE, await create(key, validEvent(), headers), 409);
    });

    it("a replay without the Idempotent-Replayed header would not conform", async () => {
      const key = await server.provision();
      const headers = { "idempotency-key": "contract-2" };
      await create(key, validEvent(), headers);
      const replay = await create(key, validEvent(), headers);
      const stripped = new Headers(replay.headers);
      stripped.delete("idempotent-replayed");
      expect(contract.check(...CREATE, { ...replay, headers: stripped })).toEqual([
        "header Idempotent-Replayed is missing",
      ]);
    });

    it("422 lists every failing field (missing, too long, bad enum, bad date, neither action)", async () => {
      const key = await server.provision();
      const response = await create(key, {
        entityType: "x".repeat(65),
        actorId: "u1",
        actorType: "robot",
        occurredAt: "yesterday",
        changes: [{ op: "set", path: "a" }],
      });
      expectConforms(CREATE, response, 422);
      expect((response.body.details as unknown[]).length).toBeGreaterThanOrEqual(6);
    });

    it("400 for a body that is not JSON, and for another content type", async () => {
      const key = await server.provision();
      expectConforms(CREATE, await create(key, "{not json"), 400);
      const text = await fetch(`${server.url}/api/ingest/event`, {
        method: "POST",
        headers: { ...bearer(key.secret), "content-type": "text/plain" },
        body: JSON.stringify(validEvent()),
      });
      expectConforms(
        CREATE,
        { status: text.status, headers: text.headers, body: await text.json() },
        400,
      );
    });

    it("401 for no key, a malformed key and an unknown key", async () => {
      expectConforms(CREATE, await postEvent(server, validEvent()), 401);
      expectConforms(CREATE, await postEvent(server, validEvent(), bearer("not-a-key")), 401);
      expectConforms(
        CREATE,
        await postEvent(server, validEvent(), { "x-project-key": `pk_test_${"a".repeat(32)}` }),
        401,
      );
    });

    it("403 for a revoked key, a frontend token and the monthly quota", async () => {
      const revoked = await server.provision();
      await server.admin.revokeApiKey({ id: revoked.keyId });
      expectConforms(CREATE, await create(revoked), 403);

      const reader = await server.provision();
      const token = await tokenFor(server, reader.secret);
      expectConforms(CREATE, await postEvent(server, validEvent(), bearer(token)), 403);

      const free = await server.provision({ plan: Plan.FREE });
      await server.app.db.query(
        `insert into usage_counters (project_id, environment, month, count) values ($1, 'test', $2, 1000)
         on conflict (project_id, environment, month) do update set count = excluded.count`,
        [free.projectId, utcMonth(new Date())],
      );
      const quota = await create(free);
      expectConforms(CREATE, quota, 403);
      expect(quota.body).toMatchObject({ current: 1000, limit: 1000, plan: "free" });
    });

    it("413 for a body over 1 MB", async () => {
      const key = await server.provision();
      const response = await create(key, JSON.stringify({ pad: "x".repeat(1_100_000) }));
      expectConforms(CREATE, response, 413);
    });

    it("429 with Retry-After once the rate limit is reached", async () => {
      const key = await server.provision();
      for (let i = 0; i < RATE_LIMIT_MAX; i++) expect((await create(key)).status).toBe(201);
      const limited = await create(key);
      expectConforms(CREATE, limited, 429);
      const stripped = new Headers(limited.headers);
      stripped.delete("retry-after");
      expect(contract.check(...CREATE, { ...limited, headers: stripped })).toEqual([
        "header Retry-After is missing",
      ]);
    });
  });

  describe("Create Events (batch) responses conform", () => {
    const BATCH = ["POST", "/api/ingest/events"] as const;
    it("201 all stored, 207 some stored with the others' details, 422 none valid", async () => {
      const key = await server.provision();
      const invalid = validEvent({ actorType: "robot", changes: [{ op: 1 }] });
      expectConforms(
        BATCH,
        await postBatch(server, { events: [validEvent()] }, bearer(key.secret)),
        201,
      );
      const partial = await postBatch(
        server,
        { events: [validEvent(), invalid] },
        bearer(key.secret),
      );
      expectConforms(BATCH, partial, 207);
      // The details' paths as REST writes them: arrays of keys and indexes.
      expect(JSON.stringify(partial.body)).toContain('"path":[1,"actorType"]');
      expectConforms(
        BATCH,
        await postBatch(server, { events: [invalid] }, bearer(key.secret)),
        422,
      );
    });
  });

  describe("List Events responses conform", () => {
    let key: ProvisionedKey;

    beforeAll(async () => {
      key = await server.provision();
      await create(key, validEvent({ entityId: "bare" }));
      await create(
        key,
        validEvent({
          entityId: "full",
          actorId: "alice",
          tenantId: "t1",
          actionDescription: "Logged in from a new device",
          actorDisplay: "Alice",
          source: "web",
          context: { device: "phone" },
          changes: [{ op: "unset", path: "mfa", before: true, after: null }],
        }),
      );
    });

    it("200 pages with and without nextCursor, events with and without optional fields", async () => {
      const first = await listEvents(server, bearer(key.secret), { limit: 1 });
      expectConforms(LIST, first, 200);
      expect(typeof first.body.nextCursor).toBe("string");
      const second = await listEvents(server, bearer(key.secret), {
        limit: 1,
        cursor: first.body.nextCursor as string,
      });
      expectConforms(LIST, second, 200);
      const all = await listEvents(server, bearer(key.secret));
      expectConforms(LIST, all, 200);
      expect(all.body.nextCursor).toBeNull();
      expect(all.body.events).toHaveLength(2);
    });

    it.each([
      ["actorId", "alice"],
      ["entityType", "user"],
      ["entityId", "full"],
      ["action", "user.login"],
      ["tenantId", "t1"],
      ["q", "new device"],
      ["from", "2000-01-01T00:00:00Z"],
      ["to", "2999-01-01T00:00:00Z"],
    ])("200 with the filter %s", async (name, value) => {
      const response = await listEvents(server, bearer(key.secret), { [name]: value });
      expectConforms(LIST, response, 200);
      expect((response.body.events as unknown[]).length).toBeGreaterThan(0);
    });

    it("200 with a frontend token, empty page included", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "nobody" });
      const response = await listEvents(server, bearer(token));
      expectConforms(LIST, response, 200);
      expect(response.body).toEqual({ events: [], nextCursor: null });
    });

    it.each([
      [{ limit: 0 }],
      [{ limit: "many" }],
      [{ cursor: "garbage" }],
      [{ actorId: "" }],
      [{ from: "yesterday" }],
      [{ q: "!!!" }],
    ])("400 for %j", async (params) => {
      expectConforms(LIST, await listEvents(server, bearer(key.secret), params), 400);
    });

    it("401 without a credential and with an invalid token; 403 with a revoked key", async () => {
      expectConforms(LIST, await listEvents(server, {}), 401);
      expectConforms(LIST, await listEvents(server, bearer("eyJhbGciOiJIUzI1NiJ9.e30.c2ln")), 401);
      const revoked = await server.provision();
      await server.admin.revokeApiKey({ id: revoked.keyId });
      expectConforms(LIST, await listEvents(server, bearer(revoked.secret)), 403);
    });
  });

  describe("Create Frontend Token responses conform", () => {
    it("200 with and without tenantId and lifetime", async () => {
      const key = await server.provision();
      expectConforms(TOKENS, await issueToken(server, bearer(key.secret)), 200);
      expectConforms(
        TOKENS,
        await issueToken(server, bearer(key.secret), { expiresInSeconds: 600, tenantId: "t1" }),
        200,
      );
    });

    it("400 for a lifetime out of range, 401 without a key, 403 with a token", async () => {
      const key = await server.provision();
      expectConforms(
        TOKENS,
        await issueToken(server, bearer(key.secret), { expiresInSeconds: 0 }),
        400,
      );
      expectConforms(TOKENS, await issueToken(server, {}), 401);
      const token = await tokenFor(server, key.secret);
      expectConforms(TOKENS, await issueToken(server, bearer(token)), 403);
    });
  });

  describe("Export and follow responses conform", () => {
    let key: ProvisionedKey;

    beforeAll(async () => {
      key = await server.provision();
      await create(key, validEvent({ entityId: "streamed-1", actorDisplay: "=cmd" }));
      await create(key, validEvent({ entityId: "streamed-2", context: { a: [1, "b"] } }));
    });

    /** GET of an export or stream URL; a JSON error body parsed, other bodies as text. */
    const get = async (url: string, headers: Record<string, string>) => {
      const response = await fetch(url, { headers });
      const text = await response.text();
      const json = (response.headers.get("content-type") ?? "").startsWith("application/json");
      return {
        status: response.status,
        headers: response.headers,
        text,
        body: json ? JSON.parse(text) : text,
      };
    };
    /** SSE events as the document models them: objects of their fields. */
    const sseItems = (events: readonly SseEvent[]) =>
      events.map((event) =>
        event.event === "message"
          ? { id: event.id, data: event.data }
          : { event: event.event, data: event.data },
      );

    it("200 NDJSON: each line an event with its logIndex, with the documented headers", async () => {
      const response = await get(exportUrl(server, {}), bearer(key.secret));
      const lines = ndjson(response.text);
      expectConforms(EXPORT, { ...response, body: lines }, 200);
      expect(lines.map((line) => line.logIndex)).toEqual([0, 1]);
      expect(response.headers.get("content-disposition")).toMatch(/\.ndjson"$/);
    });

    it("200 NDJSON with the tombstone of an erased event at its position", async () => {
      const erasedKey = await server.provision();
      const first = await create(erasedKey, validEvent({ entityId: "to-erase" }));
      await create(erasedKey, validEvent({ entityId: "kept" }));
      await server.admin.eraseEvents({
        projectId: erasedKey.projectId,
        environment: Environment.TEST,
        eventIds: [String(first.body.eventId)],
      });
      const response = await get(exportUrl(server, {}), bearer(erasedKey.secret));
      const lines = ndjson(response.text);
      expectConforms(EXPORT, { ...response, body: lines }, 200);
      expect(Object.keys(lines[0] ?? {}).sort()).toEqual([
        "erasedAt",
        "eventId",
        "logIndex",
        "receivedAt",
      ]);
    });

    it("200 CSV, with a frontend token, from a range", async () => {
      const token = await tokenFor(server, key.secret);
      const response = await get(exportUrl(server, { format: "csv", fromIndex: 1 }), bearer(token));
      expectConforms(EXPORT, response, 200);
      expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8; header=present");
      expect(response.text.startsWith(CSV_HEADER)).toBe(true);
      expect(response.headers.get("x-export-from-index")).toBe("1");
    });

    it.each([
      [{ format: "xml" }],
      [{ fromIndex: 5 }],
      [{ fromIndex: 1, toIndex: 0 }],
      [{ fromIndex: "first" }],
      [{ limit: 5 }],
      [{ actorId: "" }],
    ])("export: 400 for %j", async (params) => {
      expectConforms(EXPORT, await get(exportUrl(server, params), bearer(key.secret)), 400);
    });

    it("export: 401 without a credential and with an invalid token; 403 with a revoked key", async () => {
      expectConforms(EXPORT, await get(exportUrl(server), {}), 401);
      expectConforms(
        EXPORT,
        await get(exportUrl(server), bearer("eyJhbGciOiJIUzI1NiJ9.e30.c2ln")),
        401,
      );
      const revoked = await server.provision();
      await server.admin.revokeApiKey({ id: revoked.keyId });
      expectConforms(EXPORT, await get(exportUrl(server), bearer(revoked.secret)), 403);
    });

    it("200 Server-Sent Events: each event's id its logIndex, its data the event", async () => {
      const stream = await openSse(`${server.url}${STREAM_PATH}`, {
        ...bearer(key.secret),
        "last-event-id": "0",
      });
      try {
        const events = await stream.until((s) => s.events.length >= 1);
        expectConforms(STREAM, { ...stream, body: sseItems(events) }, 200);
        expect(events.map((event) => event.id)).toEqual(["1"]);
        for (const event of events) {
          expect(contract.checkSchema("LoggedEvent", JSON.parse(event.data))).toEqual([]);
        }
      } finally {
        stream.close();
      }
    });

    it("follow: 400 for a bad Last-Event-ID and a bad fromIndex, 401, 403", async () => {
      const url = `${server.url}${STREAM_PATH}`;
      expectConforms(STREAM, await get(url, { ...bearer(key.secret), "last-event-id": "x" }), 400);
      expectConforms(STREAM, await get(`${url}?fromIndex=-1`, bearer(key.secret)), 400);
      expectConforms(STREAM, await get(`${url}?cursor=abc`, bearer(key.secret)), 400);
      expectConforms(STREAM, await get(url, {}), 401);
      const revoked = await server.provision();
      await server.admin.revokeApiKey({ id: revoked.keyId });
      expectConforms(STREAM, await get(url, bearer(revoked.secret)), 403);
    });

    it("a streamed body that breaks the document is reported (the checks can fail)", () => {
      const ndjsonHeaders = new Headers({
        "content-type": "application/x-ndjson; charset=utf-8",
        "x-request-id": "r",
        "content-disposition": 'attachment; filename="audit-events-p-test-0-0.ndjson"',
        "x-export-from-index": "0",
        "x-export-end-index": "1",
        "cache-control": "no-store",
      });
      // A line without its logIndex.
      const event = { eventId: "x" };
      expect(
        contract.check(...EXPORT, { status: 200, headers: ndjsonHeaders, body: [event] }),
      ).toHaveLength(1);
      const jsonHeaders = new Headers(ndjsonHeaders);
      jsonHeaders.set("content-type", "application/json");
      expect(contract.check(...EXPORT, { status: 200, headers: jsonHeaders, body: [] })).toEqual([
        "content-type application/json is not one of application/x-ndjson, text/csv",
      ]);
      const noRange = new Headers(ndjsonHeaders);
      noRange.delete("x-export-end-index");
      expect(contract.check(...EXPORT, { status: 200, headers: noRange, body: [] })).toEqual([
        "header X-Export-End-Index is missing",
      ]);
      const sseHeaders = new Headers({
        "content-type": "text/event-stream; charset=utf-8",
        "x-request-id": "r",
        "cache-control": "no-store",
      });
      expect(
        contract.check(...STREAM, {
          status: 200,
          headers: sseHeaders,
          body: [{ id: "x", data: "{}" }],
        }),
      ).toHaveLength(1);
      expect(contract.checkSchema("LoggedEvent", { eventId: "x" })).toHaveLength(1);
    });
  });

  it("declares the admission control's 503 on every read it limits (READ_MAX_IN_FLIGHT), with Retry-After", () => {
    // The service's side is test/reliability/overload.test.ts; this is the document's.
    const headers = new Headers({
      "content-type": "application/json",
      "x-request-id": "r",
      "retry-after": "1",
    });
    const overloaded = { status: 503, headers, body: { error: Messages.overloaded } };
    for (const route of [
      LIST,
      TOKENS,
      ["GET", "/api/log/checkpoint"],
      ["GET", "/api/log/key"],
      ["GET", "/api/log/proof/inclusion"],
      ["GET", "/api/log/proof/consistency"],
    ] as const) {
      expect(contract.check(route[0], route[1], overloaded), route.join(" ")).toEqual([]);
    }
  });

  it("a body that breaks the document is reported (the checks can fail)", () => {
    const headers = new Headers({ "content-type": "application/json", "x-request-id": "r" });
    const { check } = contract;
    expect(check(...CREATE, { status: 201, headers, body: { eventId: "x" } })).toHaveLength(1);
    expect(check(...CREATE, { status: 418, headers, body: {} })).toEqual([
      "POST /api/ingest/event: status 418 is not documented",
    ]);
    expect(
      check(...LIST, { status: 200, headers, body: { events: [], nextCursor: null, extra: 1 } }),
    ).toHaveLength(1);
    expect(
      check(...CREATE, { status: 401, headers, body: { error: "Unauthorized" } }),
    ).toHaveLength(1);
  });
});
