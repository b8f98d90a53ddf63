/**
 * Prometheus metrics: requests by route and status, latency histograms, events
 * ingested, the fail-open count of the rate limiter, and the logs' lag behind their
 * journals (docs/write-path.md). One registry per app, so
 * several apps in one process (tests) do not mix their figures.
 *
 * Invariant: no label value comes from the caller unbounded. Each label value is a new
 * series kept for the life of the process, and HTTP/2 accepts any `:method` token, so
 * methods are folded into a fixed set here, where labels are made; routes are the
 * service's own templates and statuses are the server's.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Where the logs stand, over every log of the database (store/log-integration.ts). */
export interface LogLag {
  /** Events acknowledged (journal rows). */
  head: number;
  /** Events the integrator has sequenced and indexed. */
  integrated: number;
  /** Age in seconds of the oldest acknowledged event not yet integrated; 0 when none. */
  oldestPendingSeconds: number;
}

/** The service's metrics. */
export interface Metrics {
  registry: Registry;
  observeRequest(route: string, method: string, status: number, seconds: number): void;
  eventCreated(environment: string): void;
  rateLimiterFailedOpen(): void;
  /** A unary gRPC call answered by the lean path (transport/grpc-unary.ts). */
  grpcUnaryServed(): void;
  /** A pass of this instance's integrator committed, sequencing `events`. */
  integrated(events: number): void;
  /** Reads, at each scrape, how many integrator passes were derived in the worker thread. */
  readWorkerPasses(source: () => number): void;
  /** A list waited `seconds` for the integrator (read-your-writes). */
  listWaited(seconds: number): void;
  /** A Create Event or batch waited `seconds` for its log's integrator (the pushback). */
  pushbackWaited(seconds: number): void;
  /** Reads the logs' lag at each scrape. */
  readLogLag(source: () => Promise<LogLag>): void;
  /**
   * A request refused with 503 by admission control (transport/admission.ts): its class
   * had too many in progress (`in_flight`) or the event loop was behind (`queue_delay`).
   */
  overloadRefused(admissionClass: string, reason: string): void;
  /** Reads the requests in progress per admission class at each scrape. */
  readInFlight(source: () => Record<string, number>): void;
}

/** The methods counted under their own name; any other is counted as `OTHER`. */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
  "CONNECT",
  "TRACE",
]);

/** The `method` label of a request method: itself when known, else `OTHER`. */
export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "OTHER";
}

/** Creates a registry with the service's metrics; process metrics when `withDefaults`. */
export function createMetrics(withDefaults = false): Metrics {
  const registry = new Registry();
  if (withDefaults) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "http_requests_total",
    help: "Requests served, by route, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from request to response, by route.",
    labelNames: ["route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const ingested = new Counter({
    name: "audit_events_ingested_total",
    help: "Events created (idempotent replays not counted), by environment.",
    labelNames: ["environment"] as const,
    registers: [registry],
  });
  const failOpen = new Counter({
    name: "audit_rate_limiter_fail_open_total",
    help: "Requests admitted without a rate-limit check because Redis was unreachable.",
    registers: [registry],
  });
  const grpcLean = new Counter({
    name: "audit_grpc_unary_lean_total",
    help: "Unary gRPC calls answered without the Connect adapter's streaming pipeline.",
    registers: [registry],
  });
  const integratedTotal = new Counter({
    name: "audit_integrator_events_total",
    help: "Events this instance's integrator sequenced and indexed.",
    registers: [registry],
  });
  let workerPassesSource: (() => number) | undefined;
  let workerPassesCounted = 0;
  new Counter({
    name: "audit_integrator_worker_passes_total",
    help: "Integrator passes whose events were derived in the worker thread (log/deriver.ts).",
    registers: [registry],
    collect() {
      const passes = workerPassesSource?.() ?? 0;
      if (passes > workerPassesCounted) this.inc(passes - workerPassesCounted);
      workerPassesCounted = passes;
    },
  });
  const listWaits = new Histogram({
    name: "audit_list_wait_seconds",
    help: "Time a list waited for the integrator to pass what was acknowledged before it.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const pushbackWaits = new Histogram({
    name: "audit_ingest_pushback_wait_seconds",
    help: "Time a Create Event or batch waited for its log's integrator to catch up before it was taken (the pushback; refusals are counted in audit_requests_overloaded_total).",
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const overloaded = new Counter({
    name: "audit_requests_overloaded_total",
    help: "Requests refused with 503 by admission control, by class and reason (in_flight: too many of their class in progress; queue_delay: the event loop was behind; index_lag: the pushback, the log's integrator behind).",
    labelNames: ["class", "reason"] as const,
    registers: [registry],
  });
  let inFlightSource: (() => Record<string, number>) | undefined;
  new Gauge({
    name: "audit_requests_in_flight",
    help: "Requests in progress, by admission class (ingest, read).",
    labelNames: ["class"] as const,
    registers: [registry],
    collect() {
      for (const [name, count] of Object.entries(inFlightSource?.() ?? {})) {
        this.set({ class: name }, count);
      }
    },
  });
  // The logs' figures are the database's, read at each scrape (the same on every
  // instance): no label, a handful of series whatever the number of logs.
  let lagSource: (() => Promise<LogLag>) | undefined;
  let lagRead: Promise<LogLag | undefined> | undefined;
  const lag = () => {
    // One read serves the four gauges of a scrape.
    lagRead ??= (lagSource?.() ?? Promise.resolve(undefined))
      .catch(() => undefined)
      .finally(() => {
        setImmediate(() => {
          lagRead = undefined;
        });
      });
    return lagRead;
  };
  const logGauge = (name: string, help: string, pick: (figures: LogLag) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const figures = await lag();
        // Unknown (the database cannot be read) is NaN, never 0 nor the last figure:
        // a lag of 0 would look healthy.
        this.set(figures ? pick(figures) : Number.NaN);
      },
    });
  logGauge(
    "audit_log_head_events",
    "Events acknowledged, over every log (the journals' length).",
    (f) => f.head,
  );
  logGauge(
    "audit_log_integrated_events",
    "Events sequenced and indexed by the integrator, over every log.",
    (f) => f.integrated,
  );
  logGauge(
    "audit_log_lag_events",
    "Events acknowledged but not yet listable (head minus integrated).",
    (f) => f.head - f.integrated,
  );
  logGauge(
    "audit_log_lag_seconds",
    "Age of the oldest acknowledged event not yet listable; 0 when none.",
    (f) => f.oldestPendingSeconds,
  );
  return {
    registry,
    observeRequest(route, method, status, seconds) {
      requests.inc({ route, method: methodLabel(method), status: String(status) });
      latency.observe({ route }, seconds);
    },
    eventCreated(environment) {
      ingested.inc({ environment });
    },
    rateLimiterFailedOpen() {
      failOpen.inc();
    },
    grpcUnaryServed() {
      grpcLean.inc();
    },
    integrated(events) {
      integratedTotal.inc(events);
    },
    readWorkerPasses(source) {
      workerPassesSource = source;
    },
    listWaited(seconds) {
      listWaits.observe(seconds);
    },
    pushbackWaited(seconds) {
      pushbackWaits.observe(seconds);
    },
    readLogLag(source) {
      lagSource = source;
    },
    overloadRefused(admissionClass, reason) {
      overloaded.inc({ class: admissionClass, reason });
    },
    readInFlight(source) {
      inFlightSource = source;
    },
  };
}
