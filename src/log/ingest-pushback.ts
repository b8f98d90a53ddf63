/**
 * Pushback when the integrator falls behind (docs/write-path.md, "Pushback"): a log whose
 * oldest event not yet listable was acknowledged more than `maxLagMs` ago takes no new
 * events until it is back under the bound. Under a load the integrator cannot keep up
 * with, the lag then stays bounded instead of growing without limit, and lists (which
 * wait at most 5 s for the integrator, read-your-writes.ts) keep answering. Tessera's
 * `ErrPushback` does the same for its integration backlog.
 *
 * Every `sampleEveryMs`, one query finds the logs over the bound (one step of the
 * journal's primary key per log). Create Event and a batch for such a log are refused
 * with 503 and `Retry-After` (Unavailable over RPC) before their body is read: nothing is
 * stored, a retry is safe. An IngestEvents stream's next group waits instead (flow
 * control), and is refused only if its log stays over the bound for `streamWaitMs`.
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
  /** How often the logs' lag is read (default 500 ms). */
  sampleEveryMs?: number;
  /** How long a stream's group waits for its log before it is refused (default 10 s). */
  streamWaitMs?: number;
  /** Called for each call or group refused. */
  onRefused?: () => void;
  now?: () => number;
}

/** The pushback: an admission check for single and batch calls, a wait for streams. */
export interface IngestPushback extends AdmissionCheck {
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
  const now = options.now ?? Date.now;
  const streamWaitMs = options.streamWaitMs ?? 10_000;
  let lagging = new Set<string>();
  // Streams waiting for a sample that finds their log under the bound.
  let waiters: (() => void)[] = [];

  const refusal = () => {
    options.onRefused?.();
    return new ServiceError("unavailable", INTEGRATION_BEHIND, { retryAfterSeconds: 1 });
  };

  const sample = async () => {
    const logs = await readLaggingLogs(options.db, new Date(now() - options.maxLagMs));
    lagging = new Set(logs.map((log) => logKey(log.projectId, log.environment)));
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };

  const task = createPeriodicTask(sample, {
    intervalMs: options.sampleEveryMs ?? 500,
    logger: options.logger,
    what: "ingest pushback",
    runAtStart: true,
  });

  const isLagging = (principal: KeyPrincipal) =>
    lagging.has(logKey(principal.projectId, principal.environment));

  return {
    async admit(principal) {
      if (isLagging(principal)) throw refusal();
    },
    async whenAccepting(principal) {
      const deadline = now() + streamWaitMs;
      while (isLagging(principal)) {
        if (now() >= deadline || task.stopped()) throw refusal();
        await new Promise<void>((resolve) => {
          // Woken by the next sample; one that fails leaves the waiters: look again at the
          // deadline.
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
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    },
  };
}
