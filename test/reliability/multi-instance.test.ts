/**
 * Three instances of one deployment (one PostgreSQL database, one Redis prefix, the same
 * secrets) behind a round-robin HTTP proxy: the rate limit, the monthly quota,
 * idempotency and frontend-token verification behave as if there were one service.
 * Needs PostgreSQL and Redis: PGlite and the in-memory limiter serve one process.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Plan } from "../../gen/audit/v1/admin_pb.js";
import { utcMonth } from "../../src/limits/monthly-quota.js";
import { bearer, issueToken, listAll, listEvents } from "../events/events-client.js";
import {
  postEvent,
  startTestServer,
  type TestServer,
  usingPostgres,
  validEvent,
} from "../support/test-server.js";
import { recordFigures } from "./harness.js";

const shared = usingPostgres && Boolean(process.env.REDIS_URL);
const RATE_LIMIT_MAX = 12;
const INSTANCES = 3;

/** An HTTP/1.1 proxy that sends each request to the next backend in turn. */
class RoundRobinProxy {
  private next = 0;
  private readonly server: http.Server;
  private readonly agent = new http.Agent({ keepAlive: true });
  /** Requests forwarded to each backend. */
  readonly counts: number[];
  url = "";

  constructor(private readonly backends: readonly { port: number }[]) {
    this.counts = backends.map(() => 0);
    this.server = http.createServer((req, res) => {
      const index = this.next++ % this.backends.length;
      this.counts[index] = (this.counts[index] ?? 0) + 1;
      const upstream = http.request(
        {
          host: "127.0.0.1",
          port: this.backends[index]?.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
          agent: this.agent,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      req.pipe(upstream);
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Requests per backend since the last call. */
  take(): number[] {
    const counts = [...this.counts];
    this.counts.fill(0);
    return counts;
  }

  async close(): Promise<void> {
    this.agent.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe.runIf(shared)(`${INSTANCES} instances behind a round-robin proxy`, () => {
  const instances: TestServer[] = [];
  let proxy: RoundRobinProxy;
  let first: TestServer;
  const figures: Record<string, unknown> = { instances: INSTANCES };

  beforeAll(async () => {
    first = await startTestServer({
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      RATE_LIMIT_WINDOW_SECONDS: "60",
    });
    instances.push(first);
    for (let i = 1; i < INSTANCES; i++) {
      instances.push(await startTestServer({}, { peerOf: first }));
    }
    proxy = new RoundRobinProxy(instances);
    await proxy.listen();
  });
  afterAll(async () => {
    recordFigures("multi-instance", figures);
    await proxy?.close();
    for (const instance of instances.slice(1).reverse()) await instance.close();
    await first?.close();
  });

  const eventCount = async (projectId: string) => {
    const [row] = await first.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [projectId],
    );
    return row?.count ?? -1;
  };

  it(`one rate limit: ${RATE_LIMIT_MAX * 3} concurrent requests through the proxy give exactly ${RATE_LIMIT_MAX} × 201`, async () => {
    const { secret, projectId } = await first.provision();
    proxy.take();
    const responses = await Promise.all(
      Array.from({ length: RATE_LIMIT_MAX * 3 }, () =>
        postEvent(proxy, validEvent(), bearer(secret)),
      ),
    );
    const perInstance = proxy.take();
    figures.rateLimit = { requests: responses.length, perInstance };
    expect(perInstance).toEqual([RATE_LIMIT_MAX, RATE_LIMIT_MAX, RATE_LIMIT_MAX]);
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(RATE_LIMIT_MAX);
    const refused = responses.filter((response) => response.status === 429);
    expect(refused).toHaveLength(RATE_LIMIT_MAX * 2);
    for (const response of refused) {
      expect(response.body).toEqual({ error: "Rate limit exceeded" });
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    expect(await eventCount(projectId)).toBe(RATE_LIMIT_MAX);
  });

  it("one monthly quota: at 995 of 1,000, 12 concurrent requests create exactly 5 events", async () => {
    const key = await first.provision({ plan: Plan.FREE });
    await first.app.db.query(
      "insert into usage_counters (project_id, environment, month, count) values ($1, 'test', $2, 995)",
      [key.projectId, utcMonth(new Date())],
    );
    proxy.take();
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => postEvent(proxy, validEvent(), bearer(key.secret))),
    );
    const perInstance = proxy.take();
    figures.quota = { requests: responses.length, perInstance };
    expect(perInstance).toEqual([4, 4, 4]);
    expect(responses.filter((response) => response.status === 201)).toHaveLength(5);
    const refused = responses.filter((response) => response.status === 403);
    expect(refused).toHaveLength(7);
    for (const response of refused) {
      expect(response.body).toMatchObject({ current: 1000, limit: 1000, plan: "free" });
    }
    expect(await eventCount(key.projectId)).toBe(5);
    const [counter] = await first.app.db.query<{ count: number }>(
      "select count from usage_counters where project_id = $1",
      [key.projectId],
    );
    expect(counter?.count).toBe(1000);
  });

  it("one idempotency: a key sent to every instance at once creates one event; another body is 409 everywhere", async () => {
    const { secret, projectId } = await first.provision();
    const body = validEvent({ entityId: "invoice_7" });
    const headers = { ...bearer(secret), "idempotency-key": "order-7" };
    proxy.take();
    // 9 + 3 requests: replays and conflicts count against the rate limit (12) too.
    const responses = await Promise.all(
      Array.from({ length: 9 }, () => postEvent(proxy, body, headers)),
    );
    const perInstance = proxy.take();
    figures.idempotency = { requests: responses.length + INSTANCES, perInstance };
    expect(perInstance).toEqual([3, 3, 3]);
    expect(new Set(responses.map((response) => response.body.eventId)).size).toBe(1);
    expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
    const replays = responses.filter((response) => response.status === 200);
    expect(replays).toHaveLength(8);
    for (const replay of replays) {
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
    }
    expect(await eventCount(projectId)).toBe(1);

    const other = validEvent({ entityId: "invoice_8" });
    for (const instance of instances) {
      const conflict = await postEvent(instance, other, headers);
      expect(conflict.status).toBe(409);
      expect(conflict.body).toEqual({
        error: "Idempotency key conflict: same key used with different body",
      });
    }
    expect(await eventCount(projectId)).toBe(1);
  });

  it("one token verification: a frontend token minted by any instance reads the same events on every instance", async () => {
    const { secret } = await first.provision();
    const tenants = ["acme", "globex", "acme", "initech", "acme", "globex"];
    for (const [i, tenantId] of tenants.entries()) {
      const created = await postEvent(
        proxy,
        validEvent({ entityId: `e${i}`, tenantId }),
        bearer(secret),
      );
      expect(created.status).toBe(201);
    }
    proxy.take();
    // Three tokens through the proxy: each minted by a different instance.
    const minted = await Promise.all(
      Array.from({ length: INSTANCES }, () => issueToken(proxy, bearer(secret))),
    );
    const acme = await issueToken(proxy, bearer(secret), { tenantId: "acme" });
    const mintedPerInstance = proxy.take();
    expect(mintedPerInstance.reduce((a, b) => a + b, 0)).toBe(INSTANCES + 1);
    expect(mintedPerInstance.every((count) => count >= 1)).toBe(true);
    const tokens = minted.map((response) => response.body.token as string);
    expect(tokens.every((token) => typeof token === "string")).toBe(true);

    let reads = 0;
    for (const token of tokens) {
      for (const instance of instances) {
        const { events } = await listAll(instance, bearer(token));
        reads++;
        expect(events.map((event) => event.entityId).sort()).toEqual(
          tenants.map((_, i) => `e${i}`).sort(),
        );
      }
    }
    for (const instance of instances) {
      const { events } = await listAll(instance, bearer(acme.body.token as string));
      reads++;
      expect(events.map((event) => event.tenantId)).toEqual(["acme", "acme", "acme"]);
    }
    // A token with its signature altered is refused by every instance.
    const token = tokens[0] ?? "";
    const forged = `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`;
    for (const instance of instances) {
      const refused = await listEvents(instance, bearer(forged));
      reads++;
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: "Invalid token" });
    }
    figures.tokens = {
      created: tenants.length,
      minted: INSTANCES + 1,
      mintedPerInstance,
      reads,
    };
  });

  it("read-your-writes: an event acknowledged by one instance is listed by every other at once, each at its log index", async () => {
    const { secret } = await first.provision();
    for (let i = 0; i < 12; i++) {
      const writer = instances[i % INSTANCES] as TestServer;
      const reader = instances[(i + 1) % INSTANCES] as TestServer;
      const created = await postEvent(writer, validEvent({ entityId: `ryw-${i}` }), bearer(secret));
      expect(created.status).toBe(201);
      const listed = await listEvents(reader, bearer(secret), { limit: 1 });
      expect(listed.status).toBe(200);
      expect(
        (listed.body.events as { eventId: string; logIndex: number }[]).map((event) => [
          event.eventId,
          event.logIndex,
        ]),
      ).toEqual([[created.body.eventId, i]]);
    }
  });
});
