/**
 * The rolling-window limiter on Redis, shared by every instance. One Lua script does
 * the whole decision atomically on a sorted set of admission times per key. The time
 * comes from the Redis server (`TIME`), never from the instances, so instances whose
 * clocks disagree still count one window.
 *
 * Requests are gathered per turn of the event loop, like the group commit of events:
 * one script call decides for every key asked in that turn, in the order asked, so the
 * cost of a round trip is shared by all of them. (A script over several keys needs a
 * single Redis, not Redis Cluster: REDIS_URL names one server.)
 */
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { RateDecision, RateLimit, RateLimiter } from "./rate-limiter.js";

// KEYS: the sorted sets of the keys asked. ARGV: window (µs), max, a member prefix
// unique to this call, then per key how many requests ask. Per key, admits as many as
// fit, in order, and returns {admitted, µs until the oldest counted request leaves}.
const TAKE = `
local window = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local prefix = ARGV[3]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local ttl = math.ceil(window / 1000) + 1000
local results = {}
for i, key in ipairs(KEYS) do
  local wanted = tonumber(ARGV[3 + i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local admitted = math.max(0, math.min(wanted, max - redis.call('ZCARD', key)))
  for j = 1, admitted do
    redis.call('ZADD', key, now, prefix .. ':' .. i .. ':' .. j)
  end
  if admitted > 0 then redis.call('PEXPIRE', key, ttl) end
  local wait = 0
  if admitted < wanted then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    wait = tonumber(oldest[2]) + window - now
  end
  results[2 * i - 1] = admitted
  results[2 * i] = wait
end
return results
`;

/** Options of the Redis limiter. */
export interface RedisRateLimiterOptions extends RateLimit {
  redis: Redis;
  keyPrefix: string;
}

interface Waiting {
  resolve: (decision: RateDecision) => void;
  reject: (error: unknown) => void;
}

/** Creates the Redis limiter; errors (Redis unreachable) are thrown to the caller. */
export function createRedisRateLimiter(options: RedisRateLimiterOptions): RateLimiter {
  const { redis, keyPrefix, max } = options;
  const windowMicros = options.windowMs * 1000;
  // A per-process prefix plus a counter makes set members unique without randomness per call.
  const instance = randomBytes(6).toString("base64url");
  let sequence = 0;
  // Requests of this turn, by key, in the order they asked.
  let asked = new Map<string, Waiting[]>();

  redis.defineCommand("auditRateTakeMany", { lua: TAKE });
  const takeMany = redis as unknown as RateTakeCommand;

  const flush = async () => {
    const batch = asked;
    asked = new Map();
    const keys = [...batch.keys()];
    sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER;
    let results: number[];
    try {
      results = await takeMany.auditRateTakeMany(
        keys.length,
        ...keys.map((key) => `${keyPrefix}{rl:${key}}`),
        windowMicros,
        max,
        `${instance}:${sequence}`,
        ...keys.map((key) => batch.get(key)?.length ?? 0),
      );
    } catch (error) {
      for (const waiting of batch.values()) for (const { reject } of waiting) reject(error);
      return;
    }
    keys.forEach((key, i) => {
      const admitted = results[2 * i] ?? 0;
      const retryAfterMs = (results[2 * i + 1] ?? 0) / 1000;
      batch.get(key)?.forEach(({ resolve }, position) => {
        resolve(position < admitted ? { allowed: true } : { allowed: false, retryAfterMs });
      });
    });
  };

  return {
    take(key): Promise<RateDecision> {
      return new Promise((resolve, reject) => {
        if (asked.size === 0) setImmediate(() => void flush());
        const waiting = asked.get(key);
        if (waiting) waiting.push({ resolve, reject });
        else asked.set(key, [{ resolve, reject }]);
      });
    },
    async close() {
      // The connection belongs to the caller.
    },
  };
}

/** The command `defineCommand` adds to the client (number of keys first). */
interface RateTakeCommand {
  auditRateTakeMany(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
}
