/**
 * The two rate-limiter backends against one contract. The memory backend runs on a fake
 * clock; the Redis backend (when REDIS_URL is set) on Redis's own clock with a short window.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { retryAfterSeconds } from "../../src/limits/rate-limit-check.js";
import { createMemoryRateLimiter, type RateLimiter } from "../../src/limits/rate-limiter.js";
import { createRedisRateLimiter } from "../../src/limits/redis-rate-limiter.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function takeMany(limiter: RateLimiter, key: string, count: number) {
  const decisions = await Promise.all(Array.from({ length: count }, () => limiter.take(key)));
  return decisions.filter((decision) => decision.allowed).length;
}

describe("memory rate limiter", () => {
  it("admits max requests in the window and refuses the next with the wait until the oldest leaves", async () => {
    let now = 1_000_000;
    const limiter = createMemoryRateLimiter({ max: 100, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 100; i++) {
      expect(await limiter.take("k")).toEqual({ allowed: true });
      now += 100; // the 100 requests span 10 s
    }
    expect(await limiter.take("k")).toEqual({ allowed: false, retryAfterMs: 50_000 });
    await limiter.close();
  });

  it("is a rolling window: slots free one by one as old requests leave, not at a minute boundary", async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ max: 3, windowMs: 10_000, now: () => now });
    await limiter.take("k"); // t=0
    now = 4_000;
    await limiter.take("k"); // t=4
    await limiter.take("k"); // t=4
    now = 9_999;
    expect((await limiter.take("k")).allowed).toBe(false);
    now = 10_000; // the request of t=0 has left
    expect((await limiter.take("k")).allowed).toBe(true);
    expect(await limiter.take("k")).toEqual({ allowed: false, retryAfterMs: 4_000 });
    await limiter.close();
  });

  it("does not count refused requests", async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ max: 2, windowMs: 1_000, now: () => now });
    await limiter.take("k");
    await limiter.take("k");
    for (let i = 0; i < 50; i++) expect((await limiter.take("k")).allowed).toBe(false);
    now = 1_000;
    expect(await takeMany(limiter, "k", 5)).toBe(2);
    await limiter.close();
  });

  it("keeps one independent counter per key", async () => {
    const limiter = createMemoryRateLimiter({ max: 2, windowMs: 60_000 });
    expect(await takeMany(limiter, "a", 5)).toBe(2);
    expect(await takeMany(limiter, "b", 5)).toBe(2);
    await limiter.close();
  });
});

describe("Retry-After seconds", () => {
  it("rounds the wait up to whole seconds and never says 0", () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1_000)).toBe(1);
    expect(retryAfterSeconds(1_001)).toBe(2);
    expect(retryAfterSeconds(59_999.5)).toBe(60);
  });
});

const redisUrl = process.env.REDIS_URL;

describe.runIf(redisUrl)("redis rate limiter", () => {
  const redis = new Redis(redisUrl ?? "", { lazyConnect: false });
  const prefix = `audit-test-${randomBytes(6).toString("hex")}:`;
  const limiterFor = (max: number, windowMs: number) =>
    createRedisRateLimiter({ redis, keyPrefix: prefix, max, windowMs });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("admits exactly max of many concurrent requests", async () => {
    const limiter = limiterFor(100, 60_000);
    expect(await takeMany(limiter, "concurrent", 250)).toBe(100);
  });

  it("refuses with the wait until the oldest request leaves the window", async () => {
    const limiter = limiterFor(2, 3_000);
    await limiter.take("wait");
    await sleep(1_000);
    await limiter.take("wait");
    const refused = await limiter.take("wait");
    expect(refused.allowed).toBe(false);
    if (refused.allowed) return;
    expect(refused.retryAfterMs).toBeGreaterThan(1_500);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(2_000);
  });

  it("frees slots as the window rolls and does not count refused requests", async () => {
    const limiter = limiterFor(3, 1_000);
    expect(await takeMany(limiter, "roll", 10)).toBe(3);
    expect(await takeMany(limiter, "roll", 10)).toBe(0);
    await sleep(1_100);
    expect(await takeMany(limiter, "roll", 10)).toBe(3);
  });

  it("decides every key asked in one turn, admitting the first max of each in the order asked", async () => {
    const limiter = limiterFor(2, 60_000);
    const asked = Array.from({ length: 15 }, (_, i) => `turn-${i % 3}`);
    const decisions = await Promise.all(asked.map((key) => limiter.take(key)));
    const admittedOf = (key: string) =>
      decisions.map((decision, i) => (asked[i] === key ? decision.allowed : undefined));
    for (const key of ["turn-0", "turn-1", "turn-2"]) {
      const mine = admittedOf(key).filter((allowed) => allowed !== undefined);
      expect(mine).toEqual([true, true, false, false, false]);
    }
    for (const decision of decisions) {
      if (!decision.allowed) expect(decision.retryAfterMs).toBeGreaterThan(59_000);
    }
    // The next turn sees the counts of the last.
    expect(await takeMany(limiter, "turn-1", 3)).toBe(0);
  });

  it("keeps one independent counter per key", async () => {
    const limiter = limiterFor(2, 60_000);
    expect(await takeMany(limiter, "one", 5)).toBe(2);
    expect(await takeMany(limiter, "two", 5)).toBe(2);
    const keys = await redis.keys(`${prefix}*`);
    expect(keys).toContain(`${prefix}{rl:one}`);
    expect(keys).toContain(`${prefix}{rl:two}`);
  });

  it("keys expire once their window has passed", async () => {
    const limiter = limiterFor(2, 1_000);
    await limiter.take("expiring");
    const ttl = await redis.pttl(`${prefix}{rl:expiring}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(2_000);
  });
});
