/**
 * Pushback when the integrator falls behind under load (docs/write-path.md, "Pushback"):
 * a log whose oldest event not yet listable was received more than `maxLagMs` ago, while
 * passes still move it, takes no new events until it is back under the bound. Under a load
 * the integrator cannot keep up with, the lag then stays bounded instead of growing
 * without limit. Tessera's `ErrPushback` does the same for its integration backlog.
 *
 * Only load pushes back. A log that no pass has moved for `stalledAfterMs` (the integrator
 * stalled: a long transaction holding the horizon, a row that does not open, the database
 * away) takes events as before, because storing an acknowledged event matters more than
 * listing it soon; and so does every log when the lag could not be read for three
 * sampling intervals.
 *
 * Every `sampleEveryMs`, one query finds the logs over the bound (the database's clock,
 * one step of the journal's primary key per log). Create Event and a batch for such a log
 * are refused with 503 and `Retry-After` (Unavailable over RPC) before they are parsed:
 * nothing is stored, a retry is safe. An IngestEvents stream reads its next event only
 * once its log takes events again (flow control: it holds no slot meanwhile), and is
 * refused if the log stays behind for `streamWaitMs`.
 */
import type { KeyPrincipal } from "../auth/authenticator.js";
import { ServiceError } from "../errors.js";
import type { AdmissionCheck } from "../limits/admission.js";
import { createPeriodicTask, type PeriodicTaskLogger } from "../periodic-task.js";
import type { Queryable } from "../store/db.js";
import { readLaggingLogs } from "../store/log-integration.js";
import { INTEGRATION_BEHIND } from "./read-your-writes.js";

/** Options of the pushback. */
export interface IngestPushbackOptions {
  db: Queryable;
  logger: PeriodicTaskLogger;
  /** The bound on a log's lag (age of its oldest event not yet listable). */
  maxLagMs: number;
  /** A log no pass moved for this long is stalled, not loaded (default max(10 s, 3 × bound)). */
  stalledAfterMs?: number;
  /** How often the logs' lag is read (default 500 ms). */
  sampleEveryMs?: number;
  /** How long a stream waits for its log before it is refused (default 10 s). */
  streamWaitMs?: number;
  /** Called for each call refused. */
  onRefused?: () => void;
  /** A monotonic clock in milliseconds (tests). */
  now?: () => number;
}

/** The pushback: an admission check for single and batch calls, a wait for streams. */
export interface IngestPushback extends AdmissionCheck {
  /** Whether the principal's log takes events now. */
  accepting(principal: KeyPrincipal): boolean;
  /** Resolves once the principal's log takes events; rejects after `streamWaitMs`. */
  whenAccepting(principal: KeyPrincipal): Promise<void>;
  /** Reads the logs' lag now (tests, and once at start). */
  sample(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

const logKey = (projectId: string, environment: string) => `${projectId}\u0000${environment}`;

/** Creates the pushback; `start()` begins sampling. */
export function createIngestPushback(options: IngestPushbackOptions): IngestPushback {
  const now = options.now ?? (() => performance.now());
  const sampleEveryMs = options.sampleEveryMs ?? 500;
  const streamWaitMs = options.streamWaitMs ?? 10_000;
  const stalledAfterMs = options.stalledAfterMs ?? Math.max(10_000, 3 * options.maxLagMs);
  let lagging = new Set<string>();
  let sampledAt = Number.NEGATIVE_INFINITY;
  // Streams waiting for a sample that finds their log under the bound.
  let waiters: (() => void)[] = [];

  const refusal = () => {
    options.onRefused?.();
    return new ServiceError("unavailable", INTEGRATION_BEHIND, { retryAfterSeconds: 1 });
  };

  const wakeWaiters = () => {
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };

  const sample = async () => {
    const logs = await readLaggingLogs(options.db, options.maxLagMs / 1000, stalledAfterMs / 1000);
    lagging = new Set(logs.map((log) => logKey(log.projectId, log.environment)));
    sampledAt = now();
    wakeWaiters();
  };

  const task = createPeriodicTask(sample, {
    intervalMs: sampleEveryMs,
    logger: options.logger,
    what: "ingest pushback",
    runAtStart: true,
  });

  const accepting = (principal: KeyPrincipal) =>
    // A lag not read for three intervals is not known: take events (fail open).
    now() - sampledAt > 3 * sampleEveryMs ||
    !lagging.has(logKey(principal.projectId, principal.environment));

  return {
    accepting,
    async admit(principal) {
      if (!accepting(principal)) throw refusal();
    },
    async whenAccepting(principal) {
      const deadline = now() + streamWaitMs;
      while (!accepting(principal)) {
        if (now() >= deadline || task.stopped()) throw refusal();
        await new Promise<void>((resolve) => {
          // Woken by the next sample, or at the deadline.
          const timer = setTimeout(done, Math.max(0, deadline - now()));
          timer.unref();
          function done() {
            clearTimeout(timer);
            resolve();
          }
          waiters.push(done);
        });
      }
    },
    sample,
    start() {
      task.start();
    },
    async stop() {
      await task.stop();
      wakeWaiters();
    },
  };
}
