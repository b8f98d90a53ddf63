/**
 * One timer loop for the background work every instance runs (the tree backfill, the
 * checkpoint publisher, resuming erasures, retention): a run at most at a time, the next one
 * `intervalMs` after the last ended, and a failing run logged at most once a minute, so that
 * a database outage writes one warning per task instead of one per tick.
 */

/** What a periodic task needs to log its failures. */
export interface PeriodicTaskLogger {
  warn(facts: object, message: string): void;
}

/** Options of createPeriodicTask. */
export interface PeriodicTaskOptions {
  /** Time from the end of one run to the start of the next. */
  intervalMs: number;
  logger: PeriodicTaskLogger;
  /** Names the task in its failure log line ("checkpoint publisher"). */
  what: string;
  /** Runs once at `start()` instead of waiting for the first interval. */
  runAtStart?: boolean;
}

/** A started-on-demand loop around `run`. */
export interface PeriodicTask<T> {
  /** Starts the loop (once; a stopped task stays stopped). */
  start(): void;
  /** Runs now, after the run in progress if any; rejects with the run's error. */
  runNow(): Promise<T>;
  /** Stops the loop; resolves when the run in progress has ended. */
  stop(): Promise<void>;
  /** True once `stop()` was called: long runs check it between their steps. */
  stopped(): boolean;
}

const FAILURE_LOG_INTERVAL_MS = 60_000;

/** Creates a periodic task around `run`; nothing runs before `start()` or `runNow()`. */
export function createPeriodicTask<T>(
  run: () => Promise<T>,
  options: PeriodicTaskOptions,
): PeriodicTask<T> {
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let stopped = false;
  let lastFailureLog = Number.NEGATIVE_INFINITY;
  // Runs are chained so that a `runNow` never overlaps a scheduled run.
  let running: Promise<unknown> = Promise.resolve();

  const runNow = (): Promise<T> => {
    const result = running.then(run, run);
    running = result.catch(() => undefined);
    return result;
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(tick, options.intervalMs);
    // The loop never keeps a process alive on its own: the server or a test does.
    timer.unref();
  };

  function tick() {
    timer = undefined;
    runNow()
      .catch((error: unknown) => {
        // Retried next tick; an outage is logged once a minute, not once a tick.
        if (Date.now() - lastFailureLog >= FAILURE_LOG_INTERVAL_MS) {
          lastFailureLog = Date.now();
          options.logger.warn({ err: error }, `${options.what} failed; retrying`);
        }
      })
      .finally(schedule);
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      if (options.runAtStart) tick();
      else schedule();
    },
    runNow,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
    stopped: () => stopped,
  };
}
