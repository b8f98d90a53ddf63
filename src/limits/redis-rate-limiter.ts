/**
 * The rolling-window limiter on Redis, shared by every instance. One Lua script does
 * the whole decision atomically on a sorted set of admission times per key. The time
 * comes from the Redis server (`TIME`), never from the instances, so instances whose
 * clocks disagree still count one window. Each key lives in its own hash slot
 * (`{...}` hash tag), so the limiter works on Redis Cluster.
 */
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { RateDecision, RateLimit, RateLimiter } from "./rate-limiter.js";

// KEYS[1]: the key's sorted set. ARGV: window (µs), max, a unique member suffix.
// Returns {1, 0} when admitted, {0, µs until the oldest counted request leaves} when not.
const TAKE = `
local key = KEYS[1]
local window = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < max then
  redis.call('ZADD', key, now, now .. ':' .. ARGV[3])
  redis.call('PEXPIRE', key, math.ceil(window / 1000) + 1000)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}
`;

/** Options of the Redis limiter. */
export interface RedisRateLimiterOptions extends RateLimit {
  redis: Redis;
  keyPrefix: string;
}

/** Creates the Redis limiter; errors (Redis unreachable) are thrown to the caller. */
export function createRedisRateLimiter(options: RedisRateLimiterOptions): RateLimiter {
  const { redis, keyPrefix, max } = options;
  const windowMicros = options.windowMs * 1000;
  // A per-process prefix plus a counter makes set members unique without randomness per call.
  const instance = randomBytes(6).toString("base64url");
  let sequence = 0;

  redis.defineCommand("auditRateTake", { numberOfKeys: 1, lua: TAKE });
  const take = (key: string, ...args: (string | number)[]) =>
    (redis as unknown as RateTakeCommand).auditRateTake(key, ...args);

  return {
    async take(key): Promise<RateDecision> {
      sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER;
      const [admitted, waitMicros] = await take(
        `${keyPrefix}{rl:${key}}`,
        windowMicros,
        max,
        `${instance}:${sequence}`,
      );
      return admitted === 1
        ? { allowed: true }
        : { allowed: false, retryAfterMs: waitMicros / 1000 };
    },
    async close() {
      // The connection belongs to the caller.
    },
  };
}

/** The command `defineCommand` adds to the client. */
interface RateTakeCommand {
  auditRateTake(key: string, ...args: (string | number)[]): Promise<[number, number]>;
}
