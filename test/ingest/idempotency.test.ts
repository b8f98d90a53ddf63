/**
 * Create Event idempotency (spec 4.3, DESIGN section 4 step 7): replay, canonical body,
 * conflict, scope per project and environment, expiry, concurrency, key length.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const CONFLICT = "Idempotency key conflict: same key used with different body";

type Reply = { status: number; body: Record<string, unknown> };

const newKey = () => `idem-${randomBytes(12).toString("hex")}`;
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** Asserts a 201 or 200 with exactly {eventId, receivedAt}; returns them. */
function result(res: Reply, status: 200 | 201): { eventId: string; receivedAt: string } {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(["eventId", "receivedAt"]);
  return { eventId: String(res.body.eventId), receivedAt: String(res.body.receivedAt) };
}

function countRows(server: TestServer, table: "events" | "idempotency_keys", projectId: string) {
  return server.app.db
    .query<{ n: number }>(`select count(*)::int as n from ${table} where project_id = $1`, [
      projectId,
    ])
    .then((rows) => rows[0]?.n ?? -1);
}

describe("Idempotency-Key", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("without the header, two identical requests create two events", async () => {
    const key = await server.provision();
    const first = result(await postEvent(server, validEvent(), bearer(key.secret)), 201);
    const second = result(await postEvent(server, validEvent(), bearer(key.secret)), 201);
    expect(second.eventId).not.toBe(first.eventId);
    expect(await countRows(server, "events", key.projectId)).toBe(2);
  });

  it("an empty header value gives no protection either", async () => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": "" };
    const first = result(await postEvent(server, validEvent(), headers), 201);
    const second = result(await postEvent(server, validEvent(), headers), 201);
    expect(second.eventId).not.toBe(first.eventId);
  });

  it("same key and body: 200 with the original eventId and receivedAt, no new event", async () => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": newKey() };
    const body = validEvent({ context: { orderId: 17 }, changes: [] });
    const original = result(await postEvent(server, body, headers), 201);
    const replay = result(await postEvent(server, body, headers), 200);
    const again = result(await postEvent(server, body, headers), 200);

    expect(replay).toEqual(original);
    expect(again).toEqual(original);
    expect(await countRows(server, "events", key.projectId)).toBe(1);
  });

  it("the replay is the same whichever header style carries the key", async () => {
    const key = await server.provision();
    const idem = newKey();
    const original = result(
      await postEvent(server, validEvent(), { ...bearer(key.secret), "idempotency-key": idem }),
      201,
    );
    const replay = result(
      await postEvent(server, validEvent(), {
        "x-project-key": key.secret,
        "idempotency-key": idem,
      }),
      200,
    );
    expect(replay).toEqual(original);
  });

  it("key order and white space in the body do not matter", async () => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": newKey() };
    const body = {
      actionKey: "doc.edit",
      entityType: "doc",
      entityId: "d1",
      actorId: "u1",
      context: { a: 1, b: { c: [1, 2], d: "x" } },
      changes: [{ op: "set", path: "/t", before: { x: 1, y: 2 }, after: null }],
    };
    const reordered = {
      changes: [{ after: null, before: { y: 2, x: 1 }, path: "/t", op: "set" }],
      context: { b: { d: "x", c: [1, 2] }, a: 1 },
      actorId: "u1",
      entityId: "d1",
      entityType: "doc",
      actionKey: "doc.edit",
    };
    const original = result(await postEvent(server, JSON.stringify(body), headers), 201);
    const pretty = result(await postEvent(server, JSON.stringify(body, null, 2), headers), 200);
    const shuffled = result(await postEvent(server, JSON.stringify(reordered), headers), 200);
    const spaced = result(
      await postEvent(server, ` \n\t${JSON.stringify(reordered, null, "\t")}\n `, headers),
      200,
    );
    expect(pretty).toEqual(original);
    expect(shuffled).toEqual(original);
    expect(spaced).toEqual(original);
    expect(await countRows(server, "events", key.projectId)).toBe(1);
  });

  it.each([
    ["another field value", validEvent({ entityId: "user_999" })],
    ["an extra field", validEvent({ actorDisplay: "Someone" })],
    ["an array in another order", validEvent({ context: { list: [2, 1] } })],
    ["another value type", validEvent({ context: { list: "1,2" } })],
  ])("same key, different body (%s): 409 with the exact message", async (_name, other) => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": newKey() };
    const first = validEvent({ context: { list: [1, 2] } });
    const original = result(await postEvent(server, first, headers), 201);

    const conflict = await postEvent(server, other, headers);
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ error: CONFLICT });
    expect(await countRows(server, "events", key.projectId)).toBe(1);

    // The conflict does not disturb the original: the first body still replays.
    expect(result(await postEvent(server, first, headers), 200)).toEqual(original);
  });

  it("a refused request (422) does not take the key", async () => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": newKey() };
    const invalid = await postEvent(server, validEvent({ actorType: "robot" }), headers);
    expect(invalid.status).toBe(422);
    result(await postEvent(server, validEvent(), headers), 201);
    expect(await countRows(server, "events", key.projectId)).toBe(1);
  });

  it("keys are scoped per project: the same key in two projects creates two events", async () => {
    const one = await server.provision();
    const two = await server.provision();
    const idem = newKey();
    const a = result(
      await postEvent(server, validEvent(), { ...bearer(one.secret), "idempotency-key": idem }),
      201,
    );
    const b = result(
      await postEvent(server, validEvent(), { ...bearer(two.secret), "idempotency-key": idem }),
      201,
    );
    expect(b.eventId).not.toBe(a.eventId);
    expect(await countRows(server, "events", one.projectId)).toBe(1);
    expect(await countRows(server, "events", two.projectId)).toBe(1);
  });

  it("keys are scoped per project: a different body under the key in another project is no conflict", async () => {
    const one = await server.provision();
    const two = await server.provision();
    const idem = newKey();
    result(
      await postEvent(server, validEvent({ entityId: "a" }), {
        ...bearer(one.secret),
        "idempotency-key": idem,
      }),
      201,
    );
    result(
      await postEvent(server, validEvent({ entityId: "b" }), {
        ...bearer(two.secret),
        "idempotency-key": idem,
      }),
      201,
    );
  });

  it("keys are scoped per environment: test and live keys of one project both get 201", async () => {
    const testKey = await server.provision({ environment: Environment.TEST });
    const live = await server.admin.createApiKey({
      projectId: testKey.projectId,
      environment: Environment.LIVE,
    });
    const idem = newKey();
    const a = result(
      await postEvent(server, validEvent(), { ...bearer(testKey.secret), "idempotency-key": idem }),
      201,
    );
    const b = result(
      await postEvent(server, validEvent(), { ...bearer(live.secret), "idempotency-key": idem }),
      201,
    );
    expect(b.eventId).not.toBe(a.eventId);
    const rows = await server.app.db.query<{ environment: string }>(
      "select environment from events where project_id = $1 order by environment",
      [testKey.projectId],
    );
    expect(rows.map((row) => row.environment)).toEqual(["live", "test"]);
  });

  it("two keys of the same project and environment share the scope (replay, not a new event)", async () => {
    const first = await server.provision();
    const second = await server.admin.createApiKey({
      projectId: first.projectId,
      environment: Environment.TEST,
    });
    const idem = newKey();
    const original = result(
      await postEvent(server, validEvent(), { ...bearer(first.secret), "idempotency-key": idem }),
      201,
    );
    const replay = result(
      await postEvent(server, validEvent(), { ...bearer(second.secret), "idempotency-key": idem }),
      200,
    );
    expect(replay).toEqual(original);
    expect(await countRows(server, "events", first.projectId)).toBe(1);
  });

  it("50 concurrent requests with one key and body create exactly one event", async () => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": newKey() };
    const body = validEvent({ context: { attempt: "concurrent" } });
    const replies = await Promise.all(
      Array.from({ length: 50 }, () => postEvent(server, body, headers)),
    );

    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status !== 200 && status !== 201)).toEqual([]);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    const results = replies.map((reply) => result(reply, reply.status === 201 ? 201 : 200));
    const [firstResult] = results;
    for (const each of results) expect(each).toEqual(firstResult);

    expect(await countRows(server, "events", key.projectId)).toBe(1);
    expect(await countRows(server, "idempotency_keys", key.projectId)).toBe(1);
    const contexts = await server.app.db.query<{ n: number }>(
      "select count(*)::int as n from event_contexts where project_id = $1",
      [key.projectId],
    );
    expect(contexts[0]?.n).toBe(1);
  });

  it("50 concurrent requests with distinct keys create 50 events", async () => {
    const key = await server.provision();
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        postEvent(server, validEvent(), { ...bearer(key.secret), "idempotency-key": newKey() }),
      ),
    );
    const ids = new Set(replies.map((reply) => result(reply, 201).eventId));
    expect(ids.size).toBe(50);
    expect(await countRows(server, "events", key.projectId)).toBe(50);
  });

  it("an Idempotency-Key of 255 characters is accepted", async () => {
    const key = await server.provision();
    const headers = { ...bearer(key.secret), "idempotency-key": "k".repeat(255) };
    const original = result(await postEvent(server, validEvent(), headers), 201);
    expect(result(await postEvent(server, validEvent(), headers), 200)).toEqual(original);
  });

  it("an Idempotency-Key longer than 255 characters: 400, no event", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), {
      ...bearer(key.secret),
      "idempotency-key": "k".repeat(256),
    });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual(["error"]);
    expect(res.body.error).toEqual(expect.stringMatching(/Idempotency-Key/i));
    expect(await countRows(server, "events", key.projectId)).toBe(0);
  });

  it("does not store the Idempotency-Key in plaintext", async () => {
    const key = await server.provision();
    const idem = `plain-idem-${randomBytes(8).toString("hex")}`;
    result(
      await postEvent(server, validEvent(), { ...bearer(key.secret), "idempotency-key": idem }),
      201,
    );
    const rows = await server.app.db.query<{ row: string }>(
      "select row_to_json(k)::text as row from idempotency_keys k where project_id = $1",
      [key.projectId],
    );
    expect(rows).toHaveLength(1);
    const text = rows[0]?.row ?? "";
    expect(text).not.toContain(idem);
    expect(text).not.toContain(Buffer.from(idem).toString("hex"));
  });
});

describe("Idempotency-Key expiry (IDEMPOTENCY_TTL_SECONDS=1)", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ IDEMPOTENCY_TTL_SECONDS: "1" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("replays within the lifetime; after it, the same key creates a new event (201)", async () => {
    const key = await server.provision();
    const sameBody = { ...bearer(key.secret), "idempotency-key": newKey() };
    const otherBody = { ...bearer(key.secret), "idempotency-key": newKey() };

    const original = result(await postEvent(server, validEvent(), sameBody), 201);
    const other = result(await postEvent(server, validEvent({ entityId: "x" }), otherBody), 201);
    expect(result(await postEvent(server, validEvent(), sameBody), 200)).toEqual(original);

    await new Promise((resolve) => setTimeout(resolve, 1_200));

    const fresh = result(await postEvent(server, validEvent(), sameBody), 201);
    expect(fresh.eventId).not.toBe(original.eventId);
    expect(Date.parse(fresh.receivedAt)).toBeGreaterThan(Date.parse(original.receivedAt));
    // After expiry a different body under the old key is a new event, not a conflict.
    const reused = result(await postEvent(server, validEvent({ entityId: "y" }), otherBody), 201);
    expect(reused.eventId).not.toBe(other.eventId);
    expect(await countRows(server, "events", key.projectId)).toBe(4);

    // The new claim replays in its turn.
    expect(result(await postEvent(server, validEvent(), sameBody), 200)).toEqual(fresh);
  });
});
