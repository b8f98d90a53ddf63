/**
 * Redis stopped and started while the service runs: ingestion continues without the
 * rate limit (fail open, counted in a metric, /readyz "degraded"), and limiting resumes
 * when Redis is back. Redis is "stopped" by a TCP relay between the service and the
 * real Redis that the test closes and reopens, so the machine's Redis (shared with
 * other suites) is never touched. Needs REDIS_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Relay } from "../support/relay.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const redisUrl = process.env.REDIS_URL;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(redisUrl)("Redis stopped and restarted during ingestion", () => {
  const target = new URL(redisUrl ?? "redis://127.0.0.1:6379");
  const relay = new Relay(target.hostname, Number(target.port || 6379));
  let server: TestServer;
  beforeAll(async () => {
    await relay.open();
    server = await startTestServer({
      REDIS_URL: `redis://127.0.0.1:${relay.port}`,
      RATE_LIMIT_MAX: "3",
      RATE_LIMIT_WINDOW_SECONDS: "60",
    });
  });
  afterAll(async () => {
    await server?.close();
    await relay.cut();
  });

  it("fails open while Redis is down and limits again once it is back", async () => {
    const { secret } = await server.provision();
    const send = () => postEvent(server, validEvent(), { authorization: `Bearer ${secret}` });
    for (let i = 0; i < 3; i++) expect((await send()).status).toBe(201);
    expect((await send()).status).toBe(429);

    await relay.cut();
    await sleep(200);
    const duringOutage = [];
    for (let i = 0; i < 5; i++) duringOutage.push((await send()).status);
    expect(duringOutage).toEqual([201, 201, 201, 201, 201]);

    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: "degraded",
      checks: { redis: "unavailable" },
    });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const failOpen = /^audit_rate_limiter_fail_open_total (\d+)/m.exec(metrics);
    expect(Number(failOpen?.[1])).toBeGreaterThanOrEqual(5);

    await relay.open();
    // ioredis reconnects with a back-off; the limit resumes within a few seconds.
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 429; attempt++) {
      await sleep(200);
      status = (await send()).status;
    }
    expect(status).toBe(429);
    const back = await fetch(`${server.url}/readyz`);
    expect(await back.json()).toMatchObject({ status: "ok", checks: { redis: "ok" } });
  });
});
