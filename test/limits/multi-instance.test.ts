/**
 * Two instances of one deployment (shared PostgreSQL and Redis) enforce one rate
 * limit and one quota. Needs PostgreSQL and Redis: PGlite and the in-memory limiter
 * serve one process by design, so this suite runs in the PostgreSQL + Redis pass.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Plan } from "../../gen/audit/v1/admin_pb.js";
import { utcMonth } from "../../src/limits/monthly-quota.js";
import {
  postEvent,
  startTestServer,
  type TestServer,
  usingPostgres,
  validEvent,
} from "../support/test-server.js";

const shared = usingPostgres && Boolean(process.env.REDIS_URL);

describe.runIf(shared)("two instances behind one load balancer", () => {
  let first: TestServer;
  let second: TestServer;
  beforeAll(async () => {
    first = await startTestServer({ RATE_LIMIT_MAX: "20", RATE_LIMIT_WINDOW_SECONDS: "60" });
    second = await startTestServer({}, { peerOf: first });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it("share one rate limit per key: 60 requests spread over both give exactly 20 successes", async () => {
    const { secret } = await first.provision();
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        postEvent(i % 2 === 0 ? first : second, validEvent(), {
          authorization: `Bearer ${secret}`,
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(40);
  });

  it("share one quota: concurrent requests at limit - 1 on both create exactly one event", async () => {
    const key = await first.provision({ plan: Plan.FREE });
    await first.app.db.query(
      "insert into usage_counters (project_id, environment, month, count) values ($1, 'test', $2, 999)",
      [key.projectId, utcMonth(new Date())],
    );
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        postEvent(i % 2 === 0 ? first : second, validEvent(), { "x-project-key": key.secret }),
      ),
    );
    expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
    expect(responses.filter((response) => response.status === 403)).toHaveLength(15);
  });

  it("share idempotency: one key and body sent to both create one event", async () => {
    const { secret, projectId } = await first.provision();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        postEvent(i % 2 === 0 ? first : second, validEvent(), {
          authorization: `Bearer ${secret}`,
          "idempotency-key": "shared-key",
        }),
      ),
    );
    const ids = new Set(responses.map((response) => response.body.eventId));
    expect(ids.size).toBe(1);
    expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
    const [row] = await first.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [projectId],
    );
    expect(row?.count).toBe(1);
  });

  it("a plan change through one instance applies on the other at once", async () => {
    const key = await first.provision({ plan: Plan.FREE });
    await first.app.db.query(
      "insert into usage_counters (project_id, environment, month, count) values ($1, 'test', $2, 1000)",
      [key.projectId, utcMonth(new Date())],
    );
    expect((await postEvent(second, validEvent(), { "x-project-key": key.secret })).status).toBe(
      403,
    );
    await first.admin.setProjectPlan({ projectId: key.projectId, plan: Plan.PRO });
    expect((await postEvent(second, validEvent(), { "x-project-key": key.secret })).status).toBe(
      201,
    );
  });
});
