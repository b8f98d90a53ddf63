/**
 * Create Event, accepted requests (spec 2.1, 2.2, 2.3, 4.1, 5): the 201 body, both
 * header styles, every optional field, the defaults, unknown fields, the legacy
 * `action`, the content type with a charset, and X-Request-Id.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface EventRow {
  id: string;
  project_id: string;
  environment: string;
  occurred_at: Date | string;
  received_at: Date | string;
}

describe("POST /api/ingest/event: accepted requests", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

  const eventRows = (projectId: string) =>
    server.app.db.query<EventRow>(
      "select id, project_id, environment, occurred_at, received_at from events where project_id = $1",
      [projectId],
    );

  const eventRow = async (eventId: string): Promise<EventRow> => {
    const rows = await server.app.db.query<EventRow>(
      "select id, project_id, environment, occurred_at, received_at from events where id = $1",
      [eventId],
    );
    expect(rows).toHaveLength(1);
    const [row] = rows;
    if (!row) throw new Error(`no row for event ${eventId}`);
    return row;
  };

  const millis = (value: Date | string): number => new Date(value).getTime();

  /** Asserts the spec's 201 body: exactly {eventId, receivedAt}. */
  const expectCreated = (res: { status: number; body: Record<string, unknown> }): string => {
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(["eventId", "receivedAt"]);
    expect(res.body.eventId).toEqual(expect.stringMatching(UUID));
    expect(res.body.receivedAt).toEqual(expect.stringMatching(ISO_DATE_TIME));
    return String(res.body.eventId);
  };

  it("answers 201 with exactly {eventId, receivedAt} and stores one event", async () => {
    const key = await server.provision();
    const before = Date.now();
    const res = await postEvent(server, validEvent(), bearer(key.secret));
    const after = Date.now();

    const eventId = expectCreated(res);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const receivedAt = Date.parse(String(res.body.receivedAt));
    expect(receivedAt).toBeGreaterThanOrEqual(before - 5);
    expect(receivedAt).toBeLessThanOrEqual(after + 5);

    const rows = await eventRows(key.projectId);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row?.id).toBe(eventId);
    expect(row?.environment).toBe("test");
    expect(millis(row?.received_at ?? "")).toBe(receivedAt);
  });

  it("gives every event its own eventId", async () => {
    const key = await server.provision();
    const first = await postEvent(server, validEvent(), bearer(key.secret));
    const second = await postEvent(server, validEvent(), bearer(key.secret));
    expect(expectCreated(first)).not.toBe(expectCreated(second));
    expect(await eventRows(key.projectId)).toHaveLength(2);
  });

  it("accepts the key as Authorization: Bearer", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), { authorization: `Bearer ${key.secret}` });
    const eventId = expectCreated(res);
    expect((await eventRow(eventId)).project_id).toBe(key.projectId);
  });

  it("accepts the Bearer scheme name in any case (HTTP auth schemes are case-insensitive)", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), { authorization: `bearer ${key.secret}` });
    expectCreated(res);
  });

  it("accepts the key as X-Project-Key", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), { "x-project-key": key.secret });
    const eventId = expectCreated(res);
    expect((await eventRow(eventId)).project_id).toBe(key.projectId);
  });

  it("accepts a live key and stores the event in the live environment", async () => {
    const key = await server.provision({ environment: Environment.LIVE });
    expect(key.secret).toMatch(/^pk_live_/);
    const res = await postEvent(server, validEvent(), bearer(key.secret));
    const eventId = expectCreated(res);
    expect((await eventRow(eventId)).environment).toBe("live");
  });

  it("accepts an event with every optional field", async () => {
    const key = await server.provision();
    const body = validEvent({
      actionKey: "invoice.paid",
      actionDescription: "Invoice paid by card",
      entityType: "invoice",
      entityId: "inv_42",
      actorType: "service",
      actorId: "svc_billing",
      actorDisplay: "Billing service",
      tenantId: "tenant_7",
      occurredAt: "2024-05-01T12:34:56.789Z",
      source: "billing-api",
      context: { ip: "10.0.0.1", nested: { list: [1, "two", null, true] }, empty: {} },
      changes: [
        { op: "set", path: "/status", before: "open", after: "paid" },
        { op: "unset", path: "/dueDate", before: "2024-05-31", after: null },
        { op: "add", path: "/tags/0", before: null, after: { tag: "vip" }, redacted: false },
        { op: "remove", path: "/card", before: [1, 2, 3], after: null, redacted: true },
      ],
    });
    const res = await postEvent(server, body, bearer(key.secret));
    const eventId = expectCreated(res);
    const row = await eventRow(eventId);
    expect(new Date(row.occurred_at).toISOString()).toBe("2024-05-01T12:34:56.789Z");
    const contexts = await server.app.db.query<{ n: number }>(
      "select count(*)::int as n from event_contexts where event_id = $1",
      [eventId],
    );
    expect(contexts[0]?.n).toBe(1);
  });

  it("accepts an empty changes array and an empty context object", async () => {
    const key = await server.provision();
    const res = await postEvent(
      server,
      validEvent({ changes: [], context: {} }),
      bearer(key.secret),
    );
    expectCreated(res);
  });

  it("accepts JSON null for before and after, and any JSON value in them", async () => {
    const key = await server.provision();
    const values: unknown[] = [
      null,
      0,
      -1.5,
      "",
      "text",
      true,
      false,
      [],
      [null],
      {},
      { a: { b: 1 } },
    ];
    const changes = values.map((value, index) => ({
      op: "set",
      path: `/v${index}`,
      before: value,
      after: value,
    }));
    const res = await postEvent(server, validEvent({ changes }), bearer(key.secret));
    expectCreated(res);
  });

  it("accepts an event without actorType (it defaults to user)", async () => {
    const key = await server.provision();
    const body = validEvent();
    expect(body).not.toHaveProperty("actorType");
    expectCreated(await postEvent(server, body, bearer(key.secret)));
  });

  it.each(["user", "service", "system"])("accepts actorType %s", async (actorType) => {
    const key = await server.provision();
    expectCreated(await postEvent(server, validEvent({ actorType }), bearer(key.secret)));
  });

  it("defaults occurredAt to the time of receipt", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), bearer(key.secret));
    const eventId = expectCreated(res);
    const row = await eventRow(eventId);
    expect(millis(row.occurred_at)).toBe(Date.parse(String(res.body.receivedAt)));
  });

  it.each([
    ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000Z"],
    ["2024-01-02T03:04:05.123Z", "2024-01-02T03:04:05.123Z"],
    ["2024-01-02T05:04:05+02:00", "2024-01-02T03:04:05.000Z"],
    ["2024-01-01T22:04:05-05:00", "2024-01-02T03:04:05.000Z"],
  ])("stores the given occurredAt %s as the instant %s", async (occurredAt, instant) => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent({ occurredAt }), bearer(key.secret));
    const eventId = expectCreated(res);
    expect(new Date((await eventRow(eventId)).occurred_at).toISOString()).toBe(instant);
  });

  it("ignores unknown extra fields, at the top level and inside a change", async () => {
    const key = await server.provision();
    const body = validEvent({
      unknownField: "ignored",
      another: { deep: [1, 2, 3] },
      __proto__x: 1,
      changes: [{ op: "set", path: "/a", before: 1, after: 2, extra: "ignored" }],
    });
    expectCreated(await postEvent(server, body, bearer(key.secret)));
    expect(await eventRows(key.projectId)).toHaveLength(1);
  });

  it("accepts the legacy action field alone", async () => {
    const key = await server.provision();
    const body = { action: "user.login", entityType: "user", entityId: "u_1", actorId: "u_1" };
    expectCreated(await postEvent(server, body, bearer(key.secret)));
  });

  it("accepts actionKey and action together", async () => {
    const key = await server.provision();
    const body = validEvent({ actionKey: "user.login", action: "login" });
    expectCreated(await postEvent(server, body, bearer(key.secret)));
  });

  it.each([
    "application/json",
    "application/json; charset=utf-8",
    "application/json;charset=UTF-8",
    "Application/JSON",
  ])("accepts Content-Type %s", async (contentType) => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), {
      ...bearer(key.secret),
      "content-type": contentType,
    });
    expectCreated(res);
  });

  it("accepts a UTF-8 body with multibyte characters", async () => {
    const key = await server.provision();
    const body = validEvent({ actorDisplay: "Zoë 山田 😀", context: { note: "naïve café ✓" } });
    expectCreated(await postEvent(server, body, bearer(key.secret)));
  });

  it("echoes the caller's X-Request-Id", async () => {
    const key = await server.provision();
    const requestId = `req-${randomBytes(8).toString("hex")}`;
    const res = await postEvent(server, validEvent(), {
      ...bearer(key.secret),
      "x-request-id": requestId,
    });
    expectCreated(res);
    expect(res.headers.get("x-request-id")).toBe(requestId);
  });

  it("echoes X-Request-Id on an error response too", async () => {
    const requestId = `req-${randomBytes(8).toString("hex")}`;
    const res = await postEvent(server, validEvent(), { "x-request-id": requestId });
    expect(res.status).toBe(401);
    expect(res.headers.get("x-request-id")).toBe(requestId);
  });

  it("generates a distinct X-Request-Id when the caller sends none", async () => {
    const key = await server.provision();
    const first = await postEvent(server, validEvent(), bearer(key.secret));
    const second = await postEvent(server, validEvent(), bearer(key.secret));
    expectCreated(first);
    expectCreated(second);
    const firstId = first.headers.get("x-request-id");
    const secondId = second.headers.get("x-request-id");
    expect(firstId).toEqual(expect.stringMatching(/\S/));
    expect(secondId).toEqual(expect.stringMatching(/\S/));
    expect(firstId).not.toBe(secondId);
  });

  it("sends no rate-limit headers on success (spec 8: only Retry-After on 429)", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), bearer(key.secret));
    expectCreated(res);
    const names = [...res.headers.keys()];
    expect(names.filter((name) => /ratelimit|retry-after/i.test(name))).toEqual([]);
  });
});
