/**
 * Rolling-window rate limiting (spec 1.6 and 8): at most `max` admitted requests per
 * key in any window of `windowMs`, one independent counter per key. Only admitted
 * requests are counted, so a refused request never uses up the budget. A refusal says
 * how long until the oldest counted request leaves the window, which is when a slot
 * frees. Two backends share this contract: in memory (one instance) and Redis (shared
 * by every instance).
 */

/** The outcome of one attempt. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

/** A rolling-window limiter. */
export interface RateLimiter {
  /** Counts one request for `key` if a slot is free; otherwise says when one frees. */
  take(key: string): Promise<RateDecision>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}

/** The limit of a limiter. */
export interface RateLimit {
  max: number;
  windowMs: number;
}

/** Options of the in-memory limiter. */
export interface MemoryRateLimiterOptions extends RateLimit {
  now?: () => number;
}

/**
 * The in-memory limiter: per key, the times of the admitted requests still in the
 * window, oldest first. Memory is bounded by `max` timestamps per active key; keys with
 * nothing left in the window are dropped by a periodic sweep.
 */
export function createMemoryRateLimiter(options: MemoryRateLimiterOptions): RateLimiter {
  const { max, windowMs } = options;
  const now = options.now ?? Date.now;
  const windows = new Map<string, TimeQueue>();

  const sweep = setInterval(
    () => {
      const horizon = now() - windowMs;
      for (const [key, queue] of windows) {
        queue.dropUntil(horizon);
        if (queue.size === 0) windows.delete(key);
      }
    },
    Math.max(windowMs, 1_000),
  );
  sweep.unref();

  return {
    async take(key) {
      const at = now();
      let queue = windows.get(key);
      if (!queue) {
        queue = new TimeQueue();
        windows.set(key, queue);
      }
      queue.dropUntil(at - windowMs);
      if (queue.size < max) {
        queue.push(at);
        return { allowed: true };
      }
      return { allowed: false, retryAfterMs: queue.oldest() + windowMs - at };
    },
    async close() {
      clearInterval(sweep);
      windows.clear();
    },
  };
}

/** A FIFO of timestamps with O(1) push and amortised O(1) removal from the front. */
class TimeQueue {
  private times: number[] = [];
  private head = 0;

  get size(): number {
    return this.times.length - this.head;
  }

  push(time: number): void {
    this.times.push(time);
  }

  /** The oldest time; only called when size > 0. */
  oldest(): number {
    return this.times[this.head] ?? Number.NaN;
  }

  /** Drops times at or before `horizon`: they have left the window. */
  dropUntil(horizon: number): void {
    while (this.head < this.times.length && (this.times[this.head] ?? Infinity) <= horizon) {
      this.head++;
    }
    if (this.head > 64 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }
}
