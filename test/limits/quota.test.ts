/**
 * Monthly quotas through real HTTP and Connect: per plan, per UTC month, per
 * environment, created events only, exact under concurrency, plan changes at once.
 * Most cases start the month's counter just below the limit (written directly into
 * usage_counters) so that they do not have to create a thousand events first; one case
 * fills a free plan through the API to prove the counting itself.
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { QuotaFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { utcMonth } from "../../src/limits/monthly-quota.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

describe("monthly quota of Create Event", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "100000" });
  });
  afterAll(async () => {
    await server?.close();
  });

  const send = (key: ProvisionedKey, body: unknown = validEvent(), headers = {}) =>
    postEvent(server, body, { authorization: `Bearer ${key.secret}`, ...headers });

  const setUsage = async (
    key: ProvisionedKey,
    count: number,
    environment = "test",
    at = new Date(),
  ) => {
    await server.app.db.query(
      `insert into usage_counters (project_id, environment, month, count) values ($1, $2, $3, $4)
       on conflict (project_id, environment, month) do update set count = excluded.count`,
      [key.projectId, environment, utcMonth(at), count],
    );
  };
  const eventCount = async (key: ProvisionedKey) => {
    const [row] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [key.projectId],
    );
    return row?.count ?? -1;
  };

  it("a free project creates exactly 1,000 events in a month, then gets 403 with the figures", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    for (let batch = 0; batch < 10; batch++) {
      const responses = await Promise.all(Array.from({ length: 100 }, () => send(key)));
      expect(responses.every((response) => response.status === 201)).toBe(true);
    }
    const refused = await send(key);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: expect.stringMatching(/limit.*upgrade/i),
      current: 1000,
      limit: 1000,
      plan: "free",
    });
    expect(await eventCount(key)).toBe(1000);
  });

  it.each([
    [Plan.START, "start", 25_000],
    [Plan.PRO, "pro", 150_000],
  ])(
    "plan %s allows %s events: the last one passes, the next is refused",
    async (plan, name, limit) => {
      const key = await server.provision({ plan });
      await setUsage(key, limit - 1);
      expect((await send(key)).status).toBe(201);
      const refused = await send(key);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ current: limit, limit, plan: name });
    },
  );

  it("N concurrent requests at limit - 1 create exactly one event", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 999);
    const responses = await Promise.all(Array.from({ length: 30 }, () => send(key)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 403)).toHaveLength(29);
    expect(await eventCount(key)).toBe(1);
  });

  it("the events refused at the limit leave no context and free their Idempotency-Key", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 995);
    const body = (i: number) => validEvent({ entityId: `e${i}`, context: { i } });
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send(key, body(i), { "idempotency-key": `k${i}` })),
    );
    const created = responses.filter((response) => response.status === 201);
    expect(created).toHaveLength(5);
    expect(responses.filter((response) => response.status === 403)).toHaveLength(15);
    const countOf = async (table: string) => {
      const [row] = await server.app.db.query<{ n: number }>(
        `select count(*)::int as n from ${table} where project_id = $1`,
        [key.projectId],
      );
      return row?.n;
    };
    expect(await eventCount(key)).toBe(5);
    expect(await countOf("event_contexts")).toBe(5);
    expect(await countOf("idempotency_keys")).toBe(5);
    // A refused key is free again: once the plan allows more, its retry creates the event.
    const refused = responses.findIndex((response) => response.status === 403);
    await server.admin.setProjectPlan({ projectId: key.projectId, plan: Plan.PRO });
    const retry = await send(key, body(refused), { "idempotency-key": `k${refused}` });
    expect(retry.status).toBe(201);
    expect(await eventCount(key)).toBe(6);
  });

  it("test and live keys are counted apart", async () => {
    const testKey = await server.provision({ plan: Plan.FREE });
    const live = await server.admin.createApiKey({
      projectId: testKey.projectId,
      environment: Environment.LIVE,
    });
    const liveKey = { ...testKey, secret: live.secret };
    await setUsage(testKey, 1000, "test");
    expect((await send(testKey)).status).toBe(403);
    expect((await send(liveKey)).status).toBe(201);
  });

  it("a full previous month does not count against this month", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    const lastMonth = new Date();
    lastMonth.setUTCDate(1);
    lastMonth.setUTCMonth(lastMonth.getUTCMonth() - 1);
    await setUsage(key, 1000, "test", lastMonth);
    expect((await send(key)).status).toBe(201);
  });

  it("idempotent replays and rejected requests are not counted", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 998);
    const first = await send(key, validEvent(), { "idempotency-key": "once" });
    expect(first.status).toBe(201);
    for (let i = 0; i < 3; i++) {
      const replay = await send(key, validEvent(), { "idempotency-key": "once" });
      expect(replay.status).toBe(200);
    }
    expect((await send(key, {})).status).toBe(422);
    expect((await send(key)).status).toBe(201); // the 1000th
    expect((await send(key)).status).toBe(403);
    // At the limit, a replay still answers with the original event.
    const replay = await send(key, validEvent(), { "idempotency-key": "once" });
    expect(replay.status).toBe(200);
    expect(replay.body.eventId).toBe(first.body.eventId);
  });

  it("SetProjectPlan takes effect on the next request", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 1000);
    expect((await send(key)).status).toBe(403);
    await server.admin.setProjectPlan({ projectId: key.projectId, plan: Plan.START });
    expect((await send(key)).status).toBe(201);
    await server.admin.setProjectPlan({ projectId: key.projectId, plan: Plan.FREE });
    const refused = await send(key);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ current: 1001, limit: 1000, plan: "free" });
  });

  it("gRPC and Connect callers get ResourceExhausted with the figures in a QuotaFailure detail", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 1000);
    const client = rpcClient(IngestService, server.url);
    const error = await rpcFailure(
      client.createEvent(validEvent(), { headers: { "x-project-key": key.secret } }),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    const [failure] = error?.findDetails(QuotaFailureSchema) ?? [];
    expect(failure?.violations[0]?.subject).toBe("plan:free");
    expect(failure?.violations[0]?.description).toContain("1000 of 1000");
  });
});
