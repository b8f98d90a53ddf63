/**
 * Builds the limits of CreateEvent from configuration: the rate limiter on Redis when
 * REDIS_URL is set (shared by every instance), in memory otherwise; and the monthly
 * quota, which lives in the database transaction and needs no backend of its own.
 */
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { type Config, ConfigError } from "../config.js";
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
const REDIS_CONNECT_TIMEOUT_MS = 2_000;

/** Whether a Redis error is the server's answer to a SELECT of a database it does not have. */
function isNoSuchDatabase(error: Error): boolean {
  return /DB index is out of range/i.test(error.message);
}

const NO_SUCH_DATABASE =
  "REDIS_URL names a database this Redis server does not have (its databases are numbered from 0 to its `databases` setting - 1); the value is not shown, as it may hold a password";

/**
 * Creates the limits for `config`. With Redis, waits for its connection's first handshake
 * (at most 2 s as a whole) and refuses a REDIS_URL naming a database its server does not
 * have (`/99` on a server of 16): ioredis reports the failed SELECT as an error event and
 * goes on in database 0, where the limits would be kept without a word. A Redis that
 * cannot be reached, or does not answer in time, passes: the limits fail open until it
 * answers (docs/reliability.md).
 */
export async function openLimits(
  config: Config,
  logger: Logger,
  metrics: Metrics,
): Promise<Limits> {
  const limit = { max: config.RATE_LIMIT_MAX, windowMs: config.RATE_LIMIT_WINDOW_SECONDS * 1000 };
  let redis: Redis | undefined;
  let wrongDatabase = false;
  let limiter: RateLimiter;
  if (config.REDIS_URL) {
    redis = new Redis(config.REDIS_URL, {
      // Fail fast while disconnected instead of queueing: the check then fails open.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    });
    const connection = redis;
    // Connection errors are expected while Redis is down; ioredis keeps reconnecting. A
    // server reached later without the URL's database (unreachable at start) would have
    // the limits kept in database 0: the connection is dropped instead, so they fail
    // open, /readyz says why, and the error is logged.
    let starting = true;
    redis.on("error", (error: Error) => {
      if (!isNoSuchDatabase(error)) {
        logger.debug({ err: error }, "redis connection error");
        return;
      }
      wrongDatabase = true;
      connection.disconnect();
      if (!starting) logger.error(NO_SUCH_DATABASE);
    });
    await firstHandshake(redis, REDIS_CONNECT_TIMEOUT_MS);
    starting = false;
    if (wrongDatabase) throw new ConfigError(`Invalid configuration: ${NO_SUCH_DATABASE}`);
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
          if (wrongDatabase) throw new Error(NO_SUCH_DATABASE);
          await client.ping();
        }
      : undefined,
    async close() {
      await limiter.close();
      client?.disconnect();
    },
  };
}

/**
 * Resolves once a new connection is ready, has failed (the server's answer to its SELECT,
 * or no server), has ended, or `ms` have passed, whichever comes first: bounded as a
 * whole, since ioredis's connect timeout ends at the TCP handshake, and a server that
 * accepts and never answers (or is still loading its data) would hold the start.
 */
function firstHandshake(redis: Redis, ms: number): Promise<void> {
  const events = ["ready", "error", "end"];
  return new Promise<void>((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      for (const event of events) redis.off(event, settle);
      resolve();
    };
    const timer = setTimeout(settle, ms);
    for (const event of events) redis.on(event, settle);
  });
}
