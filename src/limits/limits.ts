/**
 * Builds the limits of CreateEvent from configuration: the rate limiter on Redis when
 * REDIS_URL is set (shared by every instance), in memory otherwise; and the monthly
 * quota, which lives in the database transaction and needs no backend of its own.
 */
import { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Metrics } from "../observability/metrics.js";
import type { QuotaPolicy } from "../store/events.js";
import type { AdmissionCheck } from "./admission.js";
import { monthlyQuota } from "./monthly-quota.js";
import { createRateLimitCheck } from "./rate-limit-check.js";
import { createMemoryRateLimiter, type RateLimiter } from "./rate-limiter.js";
import { createRedisRateLimiter } from "./redis-rate-limiter.js";

/** The limits of CreateEvent and what they hold open. */
export interface Limits {
  /** Steps before the body is read: the rate limit. */
  admission: AdmissionCheck[];
  /** The monthly quota, applied by the event store as it writes. */
  quota: QuotaPolicy;
  /** Redis, when used: reported by /readyz without failing it (limits fail open). */
  redisPing: (() => Promise<void>) | undefined;
  close(): Promise<void>;
}

// A rate-limit check that waits longer than this on Redis fails open.
const REDIS_COMMAND_TIMEOUT_MS = 250;

/** Creates the limits for `config`. */
export function createLimits(config: Config, logger: Logger, metrics: Metrics): Limits {
  const limit = { max: config.RATE_LIMIT_MAX, windowMs: config.RATE_LIMIT_WINDOW_SECONDS * 1000 };
  let redis: Redis | undefined;
  let limiter: RateLimiter;
  if (config.REDIS_URL) {
    redis = new Redis(config.REDIS_URL, {
      // Fail fast while disconnected instead of queueing: the check then fails open.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
    });
    // Connection errors are expected while Redis is down; ioredis keeps reconnecting.
    redis.on("error", (error: Error) => logger.debug({ err: error }, "redis connection error"));
    limiter = createRedisRateLimiter({ ...limit, redis, keyPrefix: config.REDIS_KEY_PREFIX });
  } else {
    limiter = createMemoryRateLimiter(limit);
  }
  const client = redis;
  return {
    admission: [
      createRateLimitCheck({ limiter, logger, onFailOpen: () => metrics.rateLimiterFailedOpen() }),
    ],
    quota: monthlyQuota,
    redisPing: client
      ? async () => {
          await client.ping();
        }
      : undefined,
    async close() {
      await limiter.close();
      client?.disconnect();
    },
  };
}
