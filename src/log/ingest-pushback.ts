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
 * Age alone lets the lag overshoot: by the time a log's oldest pending event is
 * `maxLagMs` old, the log holds everything acknowledged meanwhile at the unthrottled rate,
 * which takes the integrator longer than the bound to drain. So the backlog is bounded
 * too, in events, by what the integrators drain within the bound (`BacklogEstimate`): over
 * it, the logs holding more than their share of it are refused as well. Their rate is the
 * faster of what the database shows over 2 s of backlog (every instance's integrators) and
 * this instance's integrator's events over the time its passes took. Between samples the
 * backlog is estimated: this instance's appends are counted at once, and the integrators'
 * drain at their rate.
 *
 * Every `sampleEveryMs`, one query reads the logs' backlogs (the database's clock; per log
 * an index range of the journal's primary key, counted up to a cap) and the sum of their
 * sizes. Create Event and a batch for a log behind wait, before they are parsed, until
 * their log takes events again (looked at every `RECHECK_MS`: between samples the estimate
 * drains), for at most `requestWaitMs`: a client with a few connections is then slowed to
 * the integrator's rate instead of failed, as flow control slows a stream. A call still
 * behind after the wait, or beyond `maxWaiting` calls already waiting (each holds an
 * ingest slot, and a flooding log must not take every slot from the others), is refused
 * with 503 and `Retry-After` (Unavailable over RPC): nothing is stored, a retry is safe.
 * An IngestEvents stream reads its next event only once its log takes events again (it
 * holds no slot meanwhile), and is refused if the log stays behind for `streamWaitMs`.
 */
import type { KeyPrincipal } from "../auth/authenticator.js";
import { Messages, ServiceError } from "../errors.js";
import type { AdmissionCheck } from "../limits/admission.js";
import { createPeriodicTask, type PeriodicTaskLogger } from "../periodic-task.js";
import type { Queryable } from "../store/db.js";
import { type LogBacklog, readBacklogs } from "../store/log-integration.js";

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
  /** How long a call waits for its log before it is refused (default 2 s; 0: at once). */
  requestWaitMs?: number;
  /** Most calls waiting at once; beyond, a call for a log behind is refused at once (default 64). */
  maxWaiting?: number;
  /**
   * How long after its creation the pushback goes by age alone (default 10 s): the first
   * passes after a start run cold (compiling, the worker starting) and measure a rate the
   * integrator soon beats.
   */
  warmUpMs?: number;
  /** Called for each call refused. */
  onRefused?: () => void;
  /** Called for each call that waited for its log and was then taken, with the wait. */
  onWaited?: (seconds: number) => void;
  /** A monotonic clock in milliseconds (tests). */
  now?: () => number;
}

/** The pushback: an admission check for single and batch calls, a wait for streams. */
export interface IngestPushback extends AdmissionCheck {
  /** Whether the principal's log takes events now. */
  accepting(principal: KeyPrincipal): boolean;
  /** Counts an event appended to the principal's log (stored, not replayed). */
  appended(principal: KeyPrincipal): void;
  /** Records a pass of this instance's integrator: its events and how long it took. */
  passed(integrated: number, elapsedMs: number): void;
  /** Resolves once the principal's log takes events; rejects after `streamWaitMs`. */
  whenAccepting(principal: KeyPrincipal): Promise<void>;
  /** Reads the logs' lag now (tests, and once at start). */
  sample(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

/** Pending events counted per log at most. */
const COUNT_CAP = 100_000;
/** How often waiting calls and streams look at their log again between samples. */
const RECHECK_MS = 25;

const logKey = (projectId: string, environment: string) => `${projectId}\u0000${environment}`;

/** The smallest backlog budget: a backlog this small never pushes back by its size. */
export const MIN_BACKLOG_BUDGET = 1_000;

/** The events the integrators drain within the bound at `eventsPerSecond`. */
export function backlogBudget(eventsPerSecond: number, maxLagMs: number): number {
  return Math.max(MIN_BACKLOG_BUDGET, Math.floor((eventsPerSecond * maxLagMs) / 1_000));
}

/**
 * The logs' backlogs as the last sample found them, brought up to now: plus the events
 * this instance appended since, less what the integrators drained since at their measured
 * rate (the sample is 500 ms old at worst, and a flood appends thousands in that time). A
 * log is refused while its oldest pending event is older than the bound, or, once that
 * event is older than half the bound (the integrator visibly behind: a young backlog is
 * never refused for its size, whatever the rate's estimate), while the backlogs together
 * exceed what the integrators drain within the bound and it holds more than an equal
 * share of that: a flooding log is refused before a trickling one.
 */
export class BacklogEstimate {
  /** The age of each log's oldest pending event at the sample (ms). */
  readonly #ages = new Map<string, number>();
  readonly #pending = new Map<string, number>();
  #total = 0;

  constructor(
    backlogs: readonly LogBacklog[],
    private readonly maxLagMs: number,
    /** The integrators' rate in events/s; undefined while unmeasured: age alone decides. */
    private readonly eventsPerSecond: number | undefined,
    /** When the sample was read (ms, the pushback's clock). */
    private readonly sampledAt: number,
  ) {
    for (const log of backlogs) {
      const key = logKey(log.projectId, log.environment);
      this.#ages.set(key, log.oldestAgeSeconds * 1000);
      this.#pending.set(key, log.pending);
      this.#total += log.pending;
    }
  }

  /** Counts an event appended to a log since the sample. */
  appended(key: string): void {
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + 1);
    this.#total++;
  }

  /** Whether the log takes no events at `now`. */
  refuses(key: string, now: number): boolean {
    const age = this.#ages.get(key);
    if (age === undefined) return false;
    if (age > this.maxLagMs) return true;
    const rate = this.eventsPerSecond;
    if (rate === undefined || age + (now - this.sampledAt) <= this.maxLagMs / 2) return false;
    const budget = backlogBudget(rate, this.maxLagMs);
    const drained = (rate * Math.max(0, now - this.sampledAt)) / 1000;
    if (this.#total - drained <= budget) return false;
    // Each log with a backlog gets an equal share of the passes, and of the budget.
    const logs = this.#pending.size;
    return (this.#pending.get(key) ?? 0) - drained / logs > budget / logs;
  }
}

/** The span the integrators' rate is measured over: passes land in lumps. */
const RATE_WINDOW_MS = 2_000;
/** How long a measured rate, or a pass, counts. */
const RATE_MEMORY_MS = 10_000;

/**
 * The integrators' rate as the database shows it, in events per second: the growth of
 * the logs' sizes over the last `RATE_WINDOW_MS` during which every sample found a backlog
 * (busy all along: an idle integrator says nothing of its capacity). Every instance's
 * integrator counts; kept for `RATE_MEMORY_MS` after the last such span.
 */
export function createRateMeter(now: () => number) {
  let samples: { at: number; integrated: bigint }[] = [];
  let latest: { at: number; rate: number } | undefined;
  return {
    /** Records a sample; returns the rate, undefined while none was measured lately. */
    record(integrated: bigint, busy: boolean): number | undefined {
      const at = now();
      // A sample without a backlog ends a busy span; sizes that shrank (a log deleted) too.
      const last = samples.at(-1);
      if (!busy || (last !== undefined && integrated < last.integrated)) samples = [];
      if (busy) samples.push({ at, integrated });
      let start: { at: number; integrated: bigint } | undefined;
      for (const sample of samples) {
        if (at - sample.at >= RATE_WINDOW_MS) start = sample;
      }
      if (start !== undefined) {
        latest = { at, rate: (Number(integrated - start.integrated) * 1000) / (at - start.at) };
        samples = samples.filter((sample) => sample.at >= start.at);
      }
      if (latest !== undefined && at - latest.at > RATE_MEMORY_MS) latest = undefined;
      return latest?.rate;
    },
  };
}

/**
 * This instance's integrator's capacity, in events per second: the events of its passes
 * of the last `RATE_MEMORY_MS` over the time those passes took. Unlike the database's
 * rate, it does not fall to the arrival rate when the integrator keeps up, and passes'
 * lumps do not skew it.
 */
export function createPassMeter(now: () => number) {
  let passes: { at: number; integrated: number; elapsedMs: number }[] = [];
  return {
    passed(integrated: number, elapsedMs: number): void {
      if (integrated > 0 && elapsedMs > 0) passes.push({ at: now(), integrated, elapsedMs });
    },
    capacity(): number | undefined {
      const at = now();
      passes = passes.filter((pass) => at - pass.at <= RATE_MEMORY_MS);
      if (passes.length === 0) return undefined;
      let events = 0;
      let ms = 0;
      for (const pass of passes) {
        events += pass.integrated;
        ms += pass.elapsedMs;
      }
      return (events * 1000) / ms;
    },
  };
}

/** Creates the pushback; `start()` begins sampling. */
export function createIngestPushback(options: IngestPushbackOptions): IngestPushback {
  const now = options.now ?? (() => performance.now());
  const sampleEveryMs = options.sampleEveryMs ?? 500;
  const streamWaitMs = options.streamWaitMs ?? 10_000;
  const requestWaitMs = options.requestWaitMs ?? 2_000;
  const maxWaiting = options.maxWaiting ?? 64;
  const warmUntil = now() + (options.warmUpMs ?? 10_000);
  const stalledAfterMs = options.stalledAfterMs ?? Math.max(10_000, 3 * options.maxLagMs);
  let estimate = new BacklogEstimate([], options.maxLagMs, undefined, 0);
  let sampledAt = Number.NEGATIVE_INFINITY;
  // Calls and streams waiting for their log, woken by each sample and every RECHECK_MS.
  let waiters: (() => void)[] = [];
  let recheck: NodeJS.Timeout | undefined;
  let waitingCalls = 0;

  const refusal = () => {
    options.onRefused?.();
    return new ServiceError("unavailable", Messages.integrationBehind, { retryAfterSeconds: 1 });
  };

  const wakeWaiters = () => {
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
    if (waiters.length === 0 && recheck !== undefined) {
      clearInterval(recheck);
      recheck = undefined;
    }
  };

  const nextLook = () =>
    new Promise<void>((resolve) => {
      waiters.push(resolve);
      // The timer does not keep the process alive: a stop wakes every waiter anyway.
      recheck ??= setInterval(wakeWaiters, RECHECK_MS).unref();
    });

  const rate = createRateMeter(now);
  const passes = createPassMeter(now);
  const sample = async () => {
    const { backlogs, integrated } = await readBacklogs(
      options.db,
      // Counting past what any budget could allow tells nothing more.
      COUNT_CAP,
      stalledAfterMs / 1000,
    );
    // The faster of the two: under-estimating the drain would refuse events in time.
    const measured = [rate.record(integrated, backlogs.length > 0), passes.capacity()];
    const known = measured.filter((value) => value !== undefined);
    const eventsPerSecond =
      known.length === 0 || now() < warmUntil ? undefined : Math.max(...known);
    estimate = new BacklogEstimate(backlogs, options.maxLagMs, eventsPerSecond, now());
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
    !estimate.refuses(logKey(principal.projectId, principal.environment), now());

  /** Resolves once the principal's log takes events; false after `waitMs` or a stop. */
  const waitForLog = async (principal: KeyPrincipal, waitMs: number) => {
    const deadline = now() + waitMs;
    while (!accepting(principal)) {
      if (now() >= deadline || task.stopped()) return false;
      await nextLook();
    }
    return true;
  };

  return {
    accepting,
    appended(principal) {
      estimate.appended(logKey(principal.projectId, principal.environment));
    },
    passed(integrated, elapsedMs) {
      passes.passed(integrated, elapsedMs);
    },
    async admit(principal) {
      if (accepting(principal)) return;
      if (requestWaitMs === 0 || waitingCalls >= maxWaiting) throw refusal();
      const started = now();
      waitingCalls++;
      try {
        if (!(await waitForLog(principal, requestWaitMs))) throw refusal();
      } finally {
        waitingCalls--;
      }
      options.onWaited?.((now() - started) / 1000);
    },
    async whenAccepting(principal) {
      if (!(await waitForLog(principal, streamWaitMs))) throw refusal();
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
