/**
 * POST /api/ingest/events through real HTTP: per-item results in request order, 201,
 * 207 and 422, atomic mode, the 5 MB limit, the quota counted per event and refused
 * whole, the rate limit counted per request, an Idempotency-Key over the whole batch,
 * and stored events read back by List Events like single ones.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Plan } from "../../gen/audit/v1/admin_pb.js";
import { utcMonth } from "../../src/limits/monthly-quota.js";
import { bearer, listedEvents } from "../events/events-client.js";
import {
  type ProvisionedKey,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import { events, postBatch } from "./bulk.support.js";

describe("bulk ingestion over REST", () => {
  let server: TestServer;
  beforeAll(async () => {
    // Six requests per key and window: each case uses a key of its own.
    server = await startTestServer({ RATE_LIMIT_MAX: "6" });
  });
  afterAll(async () => {
    await server?.close();
  });

  const auth = (key: ProvisionedKey) => bearer(key.secret);
  const storedCount = async (key: ProvisionedKey) => {
    const [row] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [key.projectId],
    );
    return row?.count ?? -1;
  };
  const setUsage = async (key: ProvisionedKey, count: number) => {
    await server.app.db.query(
      `insert into usage_counters (project_id, environment, month, count) values ($1, 'test', $2, $3)
       on conflict (project_id, environment, month) do update set count = excluded.count`,
      [key.projectId, utcMonth(new Date()), count],
    );
  };
  const usage = async (key: ProvisionedKey) => {
    const [row] = await server.app.db.query<{ count: number }>(
      "select count from usage_counters where project_id = $1",
      [key.projectId],
    );
    return row?.count ?? 0;
  };

  it("stores every event of a valid batch: 201, one result per event in request order, each listed and searchable", async () => {
    const key = await server.provision();
    const batch = events(20, "order");
    const response = await postBatch(server, { events: batch }, auth(key));
    expect(response.status).toBe(201);
    const results = response.body.results as { eventId: string; receivedAt: string }[];
    expect(results).toHaveLength(20);
    for (const result of results) {
      expect(Object.keys(result).sort()).toEqual(["eventId", "receivedAt"]);
      expect(new Date(result.receivedAt).toISOString()).toBe(result.receivedAt);
    }
    expect(new Set(results.map((r) => r.eventId)).size).toBe(20);

    // Each event is found by its own filter, with the id its result gave.
    for (const i of [0, 7, 19]) {
      const listed = await listedEvents(server, auth(key), { entityId: `order-${i}` });
      expect(listed.map((event) => event.eventId)).toEqual([results[i]?.eventId]);
    }
    // The log keeps the request's order: index i holds event i.
    const indexed = await server.app.db.query<{ id: string }>(
      "select id from event_index where project_id = $1 order by log_index",
      [key.projectId],
    );
    expect(indexed.map((row) => row.id)).toEqual(results.map((r) => r.eventId));
    const found = await listedEvents(server, auth(key), { q: "login" });
    expect(found).toHaveLength(20);
  });

  it("stores the valid events and reports the invalid ones: 207, errors in the 422 detail shape with the index first", async () => {
    const key = await server.provision();
    const batch = [
      validEvent({ entityId: "a" }),
      validEvent({ actorId: undefined }),
      validEvent({ entityId: "c" }),
      { ...validEvent(), actionKey: "x".repeat(65) },
    ];
    const response = await postBatch(server, { events: batch }, auth(key));
    expect(response.status).toBe(207);
    const results = response.body.results as Record<string, unknown>[];
    expect(results[0]).toHaveProperty("eventId");
    expect(results[2]).toHaveProperty("eventId");
    expect(results[1]).toEqual({
      error: "Validation failed",
      details: [{ path: [1, "actorId"], message: "Required", code: "invalid_type" }],
    });
    expect(results[3]).toEqual({
      error: "Validation failed",
      details: [
        {
          path: [3, "actionKey"],
          message: "String must contain at most 64 character(s)",
          code: "too_big",
        },
      ],
    });
    expect(await storedCount(key)).toBe(2);
    expect(await usage(key)).toBe(2);
  });

  it("stores nothing when no event is valid: 422 with the details of every item", async () => {
    const key = await server.provision();
    const response = await postBatch(
      server,
      { events: [{ entityType: "user" }, validEvent({ action: undefined, actionKey: undefined })] },
      auth(key),
    );
    expect(response.status).toBe(422);
    expect(response.body.error).toBe("Validation failed");
    const details = response.body.details as { path: unknown[]; code: string }[];
    expect(details.map((d) => d.path)).toEqual([[0, "entityId"], [0, "actorId"], [0], [1]]);
    expect(await storedCount(key)).toBe(0);
  });

  it("atomic=true stores all or nothing: one invalid event refuses the batch with 422", async () => {
    const key = await server.provision();
    const refused = await postBatch(
      server,
      { events: [validEvent(), validEvent({ actorType: "robot" })] },
      auth(key),
      "?atomic=true",
    );
    expect(refused.status).toBe(422);
    expect(refused.body.details).toEqual([
      {
        path: [1, "actorType"],
        message: "Invalid enum value. Expected 'user' | 'service' | 'system', received 'robot'",
        code: "invalid_enum_value",
      },
    ]);
    expect(await storedCount(key)).toBe(0);
    expect(await usage(key)).toBe(0);

    const stored = await postBatch(server, { events: events(3) }, auth(key), "?atomic=true");
    expect(stored.status).toBe(201);
    expect(await storedCount(key)).toBe(3);
  });

  it("refuses a batch that is not 1 to 500 events, or whose atomic flag is not a boolean, with 422 on the events field", async () => {
    const key = await server.provision();
    const cases: [unknown, string, unknown[]][] = [
      [{}, "Required", ["events"]],
      [{ events: {} }, "Expected array, received object", ["events"]],
      [{ events: [] }, "Array must contain at least 1 element(s)", ["events"]],
      [{ events: events(501) }, "Array must contain at most 500 element(s)", ["events"]],
      [{ events: events(1), atomic: "yes" }, "Expected boolean, received string", ["atomic"]],
      [[validEvent()], "Expected object, received array", []],
    ];
    for (const [body, message, path] of cases) {
      const response = await postBatch(server, body, auth(key));
      expect(response.status, JSON.stringify(body).slice(0, 40)).toBe(422);
      expect((response.body.details as { message: string }[])[0]).toMatchObject({ message, path });
    }
    // Every failing member is listed, as Create Event lists every failing field.
    const both = await postBatch(server, { atomic: "x" }, auth(await server.provision()));
    expect(both.status).toBe(422);
    expect(both.body.details).toEqual([
      { path: ["atomic"], message: "Expected boolean, received string", code: "invalid_type" },
      { path: ["events"], message: "Required", code: "invalid_type" },
    ]);
    expect(await storedCount(key)).toBe(0);
  });

  it("refuses an atomic flag that says two things: given twice, the query against the body, a string in the body", async () => {
    const key = await server.provision();
    const mixed = { events: [validEvent(), validEvent({ actorType: "robot" })] };
    const cases: [unknown, string, string][] = [
      [mixed, "?atomic=false&atomic=true", "atomic is given 2 times in the query string"],
      [
        { ...mixed, atomic: true },
        "?atomic=false",
        "atomic is false in the query string and true in the body",
      ],
      [
        { ...mixed, atomic: false },
        "?atomic=true",
        "atomic is true in the query string and false in the body",
      ],
      [{ ...mixed, atomic: "true" }, "", "Expected boolean, received string"],
      [{ ...mixed, atomic: "false" }, "", "Expected boolean, received string"],
      [mixed, "?atomic=1", "Expected boolean, received string"],
    ];
    for (const [body, query, message] of cases) {
      // A key each: the file's rate limit is small.
      const response = await postBatch(server, body, auth(await server.provision()), query);
      expect(response.status, `${query} ${JSON.stringify(body).slice(-20)}`).toBe(422);
      expect(response.body.details).toEqual([
        { path: ["atomic"], message, code: expect.any(String) },
      ]);
    }
    // The same value in both places says one thing.
    const agreed = await postBatch(server, { ...mixed, atomic: true }, auth(key), "?atomic=true");
    expect(agreed.status).toBe(422);
    expect(agreed.body.details).toHaveLength(1);
    const partial = await postBatch(
      server,
      { ...mixed, atomic: false },
      auth(key),
      "?atomic=false",
    );
    expect(partial.status).toBe(207);
    expect(await storedCount(key)).toBe(1);
  });

  it("refuses malformed JSON and other content types with 400, and a body over 5 MB with 413; a 2 MB batch is accepted", async () => {
    const key = await server.provision();
    const malformed = await postBatch(server, '{"events": [', auth(key));
    expect(malformed).toMatchObject({
      status: 400,
      body: { error: "Request body is not valid JSON" },
    });
    const text = await postBatch(server, "{}", { ...auth(key), "content-type": "text/plain" });
    expect(text).toMatchObject({
      status: 400,
      body: { error: "Content-Type must be application/json" },
    });

    // ~4 KB per event: 500 of them are over 1 MB (2 MB) and within 5 MB.
    const large = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        validEvent({ entityId: `big-${i}`, context: { note: "n".repeat(4000) } }),
      );
    const accepted = await postBatch(server, { events: large(500) }, auth(key));
    expect(accepted.status).toBe(201);
    const tooLarge = await postBatch(
      server,
      {
        events: large(400).map((event) => ({ ...event, source: "s" })),
        pad: "p".repeat(5 * 1024 * 1024),
      },
      auth(key),
    );
    expect(tooLarge).toMatchObject({ status: 413, body: { error: "Request payload too large" } });
    expect(await storedCount(key)).toBe(500);
  });

  it("counts each stored event against the quota and refuses a batch that would cross the limit whole: 403 with the figures", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 990);
    const refused = await postBatch(server, { events: events(11) }, auth(key));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: expect.stringMatching(/upgrade/i),
      current: 990,
      limit: 1000,
      plan: "free",
    });
    expect(await storedCount(key)).toBe(0);
    expect(await usage(key)).toBe(990);

    const fits = await postBatch(server, { events: events(10) }, auth(key));
    expect(fits.status).toBe(201);
    expect(await usage(key)).toBe(1000);
    const full = await postBatch(server, { events: events(1) }, auth(key));
    expect(full.status).toBe(403);
    expect(full.body).toMatchObject({ current: 1000, limit: 1000, plan: "free" });
    expect(await storedCount(key)).toBe(10);
  });

  it("never passes the limit under concurrency: of six batches of 30 with room for 100, exactly three are stored", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 900);
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        postBatch(server, { events: events(30, `c${i}`) }, auth(key)),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 403, 403, 403]);
    expect(await storedCount(key)).toBe(90);
    expect(await usage(key)).toBe(990);
  });

  it("counts a batch once against the rate limit, whatever its size", async () => {
    const key = await server.provision();
    for (let i = 0; i < 6; i++) {
      const response = await postBatch(server, { events: events(100, `r${i}`) }, auth(key));
      expect(response.status).toBe(201);
    }
    const limited = await postBatch(server, { events: events(1) }, auth(key));
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: "Rate limit exceeded" });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await storedCount(key)).toBe(600);
  });

  it("replays a batch sent again with its Idempotency-Key: 200, the original results, nothing new stored", async () => {
    const key = await server.provision();
    const body = { events: [validEvent({ entityId: "k1" }), { entityType: "bad" }, validEvent()] };
    const headers = { ...auth(key), "idempotency-key": "batch-1" };
    const first = await postBatch(server, body, headers);
    expect(first.status).toBe(207);
    const again = await postBatch(server, body, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await storedCount(key)).toBe(2);
    expect(await usage(key)).toBe(2);

    // The same events in another order are another body.
    const conflict = await postBatch(server, { events: [...body.events].reverse() }, headers);
    expect(conflict).toMatchObject({
      status: 409,
      body: { error: "Idempotency key conflict: same key used with different body" },
    });
    // So is the same body in atomic mode.
    const atomic = await postBatch(server, body, headers, "?atomic=true");
    expect(atomic.status).toBe(422);
    expect(await storedCount(key)).toBe(2);
  });

  it("stores one batch when requests with the same Idempotency-Key race: every answer has the same ids", async () => {
    const key = await server.provision();
    const body = { events: events(25, "race") };
    const headers = { ...auth(key), "idempotency-key": "race-1" };
    const responses = await Promise.all(
      Array.from({ length: 5 }, () => postBatch(server, body, headers)),
    );
    expect(responses.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 201]);
    for (const response of responses)
      expect(response.body.results).toEqual(responses[0]?.body.results);
    expect(await storedCount(key)).toBe(25);
    expect(await usage(key)).toBe(25);
  });
});
