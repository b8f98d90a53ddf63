/**
 * Shedding by queueing delay (issue 26, overload), beside the count of admission.ts.
 *
 * The count bounds what the service has taken on, but not what waits to be taken on: when
 * the process gets too little CPU even to read its requests, its slots never fill and the
 * excess waits in socket buffers and the accept queue, where no count sees it (measured:
 * docs/reliability.md, Overload). What that waiting does show is the event loop's delay: how
 * late a timer fires is how long anything ready (a request's bytes, a new connection) has
 * waited for its turn. So while the loop is behind, limited calls are refused with the
 * count's cheap answer (`overloaded()`: 503 and Retry-After: 1 on every protocol) until its
 * delay is back under the target; refusing costs far less CPU than serving, which is what
 * lets the loop catch up.
 *
 * The decision is CoDel's (Nichols and Jacobson, "Controlling Queue Delay", 2012): a delay
 * above the target is a problem only when it stands, so shedding starts once every sample
 * over a whole interval was at or above the target (their minimum stayed above it), and a
 * single long turn (a burst, a garbage collection, one slow synchronous call) sheds
 * nothing. It stops at the first sample under the target. Having just stopped, the queue
 * that comes back is the same overload, not a new burst: a sample at or above the target
 * within an interval of stopping sheds again at once (CoDel likewise resumes dropping at
 * its last rate when it re-enters soon after leaving).
 *
 * Invariants: the decision reads no clock (its time is the samples'), so it is tested with
 * made-up samples; shedding ends at the first sample under the target, and when the
 * sampler stops, so nothing waits on it for good.
 */
import { waitInLine } from "./wait-queue.js";

/** The bound on the loop's delay and how long it must be exceeded before shedding. */
export interface QueueDelayOptions {
  /** Delay of the event loop (ms) at or above which it is behind; 0 turns shedding off. */
  targetMs: number;
  /** How long (ms) the delay must stay at or above the target before shedding starts. */
  intervalMs: number;
}

/** What admission asks of the delay: whether to refuse now, and when that ends. */
export interface LoadShedder {
  /** True while calls of a limited class are to be refused. */
  readonly shedding: boolean;
  /**
   * Resolves once shedding has ended (at once when not shedding); rejects when `signal`
   * aborts first.
   */
  cleared(signal?: AbortSignal): Promise<void>;
}

/** The decision, fed with samples of the loop's delay. */
export interface DelayShedder extends LoadShedder {
  /** One sample: the loop was `delayMs` late at `nowMs` (any monotonic clock in ms). */
  observe(delayMs: number, nowMs: number): void;
}

/** Creates the decision: sheds once the delay stood at or above the target for an interval. */
export function createDelayShedder(options: QueueDelayOptions): DelayShedder {
  const { targetMs, intervalMs } = options;
  let shedding = false;
  // When the current run of samples at or above the target began; undefined when the
  // last sample was under it.
  let firstAboveAt: number | undefined;
  // When shedding last stopped; undefined before it ever started.
  let stoppedAt: number | undefined;
  const waiting: (() => void)[] = [];
  const stop = (nowMs: number) => {
    shedding = false;
    stoppedAt = nowMs;
    for (const resume of waiting.splice(0)) resume();
  };
  return {
    get shedding() {
      return shedding;
    },
    observe(delayMs, nowMs) {
      if (targetMs === 0) return;
      if (delayMs < targetMs) {
        firstAboveAt = undefined;
        if (shedding) stop(nowMs);
        return;
      }
      if (shedding) return;
      if (stoppedAt !== undefined && nowMs - stoppedAt < intervalMs) {
        shedding = true;
        return;
      }
      // The run starts at this sample, not at the delay it reports: one long turn is one
      // sample, and takes a second one an interval later to count as standing.
      firstAboveAt ??= nowMs;
      if (nowMs - firstAboveAt >= intervalMs) shedding = true;
    },
    cleared(signal) {
      if (!shedding) return Promise.resolve();
      return waitInLine(waiting, signal);
    },
  };
}

/** How often the loop's delay is sampled when it is not behind (ms). */
export const LOOP_DELAY_SAMPLE_MS = 50;

/** A running sampler of the loop's delay. */
export interface LoopDelaySampler {
  stop(): void;
}

/** What the sampler needs of its environment: a clock and a timer (real, or a test's). */
export interface SamplerClock {
  /** A monotonic time in ms. */
  now(): number;
  /** Calls `callback` once after `ms`, without keeping the process alive; returns its cancel. */
  after(ms: number, callback: () => void): () => void;
}

const REAL_CLOCK: SamplerClock = {
  now: () => performance.now(),
  after(ms, callback) {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * Measures the loop's delay with a timer that measures its own drift: every `periodMs` it
 * is due, and how late it fires is one sample. A turn that blocks the loop for a second
 * gives one sample of about a second when it ends, in the timers phase of the next turn,
 * before that turn reads any request.
 */
export function sampleLoopDelay(
  onSample: (delayMs: number, nowMs: number) => void,
  periodMs: number = LOOP_DELAY_SAMPLE_MS,
  clock: SamplerClock = REAL_CLOCK,
): LoopDelaySampler {
  let cancel = () => {};
  const schedule = () => {
    const due = clock.now() + periodMs;
    cancel = clock.after(periodMs, () => {
      const now = clock.now();
      onSample(Math.max(0, now - due), now);
      schedule();
    });
  };
  schedule();
  return { stop: () => cancel() };
}

/** Shedding fed by this process's event loop: what the composition root starts and stops. */
export interface LoopDelayShedding extends LoadShedder {
  /** Stops sampling; shedding ends, and whatever waited for it goes on. */
  stop(): void;
}

/**
 * Starts sampling the loop's delay into the decision; undefined when the target is 0
 * (shedding off: no timer at all).
 */
export function watchLoopDelay(
  options: QueueDelayOptions,
  clock: SamplerClock = REAL_CLOCK,
): LoopDelayShedding | undefined {
  if (options.targetMs === 0) return undefined;
  const shedder = createDelayShedder(options);
  const sampler = sampleLoopDelay(
    (delayMs, nowMs) => shedder.observe(delayMs, nowMs),
    LOOP_DELAY_SAMPLE_MS,
    clock,
  );
  return {
    get shedding() {
      return shedder.shedding;
    },
    cleared: (signal) => shedder.cleared(signal),
    stop() {
      sampler.stop();
      // A delay of 0 is under any target: shedding ends and its waiters are released.
      shedder.observe(0, clock.now());
    },
  };
}
