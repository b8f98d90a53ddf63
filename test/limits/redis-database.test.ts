/**
 * A REDIS_URL naming a database its server does not have (`/99` on a server of 16).
 * ioredis reports the failed SELECT as an error event and goes on in database 0, so the
 * limits used to be kept there without a word. Now a start that reaches Redis refuses it
 * (exit 78 from main.ts, as any configuration error), and a Redis reached only later
 * has its connection dropped: the limits fail open, /readyz says Redis is unavailable.
 * Needs REDIS_URL.
 */
import { type AddressInfo, createServer } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { Relay } from "../support/relay.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const redisUrl = process.env.REDIS_URL;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const REFUSAL =
  "Invalid configuration: REDIS_URL names a database this Redis server does not have (its databases are numbered from 0 to its `databases` setting - 1); the value is not shown, as it may hold a password";

/** Polls `check` every 100 ms until it holds or `ms` pass; returns whether it held. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) {
    if (await check()) return true;
  }
  return check();
}

describe.runIf(redisUrl)("a REDIS_URL naming a database its Redis does not have", () => {
  const target = new URL(redisUrl ?? "redis://127.0.0.1:6379");
  const servers: TestServer[] = [];
  const relay = new Relay(target.hostname, Number(target.port || 6379));
  afterAll(async () => {
    for (const server of servers) await server.close();
    await relay.cut();
  });

  it("is refused at start when the server answers, a database it has is not", async () => {
    const wrong = new URL(target);
    wrong.pathname = "/99";
    await expect(startTestServer({ REDIS_URL: wrong.toString() })).rejects.toThrow(REFUSAL);
    const right = new URL(target);
    right.pathname = "/1";
    const server = await startTestServer({ REDIS_URL: right.toString() });
    servers.push(server);
    const ready = await fetch(`${server.url}/readyz`);
    expect(await ready.json()).toMatchObject({ checks: { redis: "ok" } });
  });

  it("a Redis that accepts and never answers does not hold the start", async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      const server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${port}/1` });
      servers.push(server);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      silent.close();
    }
  });

  it("reached only after the start: the limits fail open instead of living in database 0", async () => {
    // A port where nothing answers yet: the start's check passes an unreachable Redis.
    await relay.open();
    await relay.cut();
    const server = await startTestServer({
      REDIS_URL: `redis://127.0.0.1:${relay.port}/99`,
      RATE_LIMIT_MAX: "2",
      RATE_LIMIT_WINDOW_SECONDS: "60",
    });
    servers.push(server);
    await relay.open();
    // ioredis reconnects with a back-off of at most 2 s; the service then drops the
    // connection once the SELECT fails, instead of going on in database 0.
    expect(await eventually(() => relay.accepted > 0, 10_000)).toBe(true);
    expect(await eventually(() => relay.connections() === 0, 5_000)).toBe(true);
    await sleep(500);
    expect(relay.connections()).toBe(0);

    const { secret } = await server.provision();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (await postEvent(server, validEvent(), { authorization: `Bearer ${secret}` })).status,
      );
    }
    expect(statuses).toEqual([201, 201, 201, 201]);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: "degraded",
      checks: { redis: "unavailable" },
    });
  });
});
