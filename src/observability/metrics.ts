/**
 * Prometheus metrics: requests by route and status, latency histograms, events
 * ingested, and the fail-open count of the rate limiter. One registry per app, so
 * several apps in one process (tests) do not mix their figures.
 *
 * Invariant: no label value comes from the caller unbounded. Each label value is a new
 * series kept for the life of the process, and HTTP/2 accepts any `:method` token, so
 * methods are folded into a fixed set here, where labels are made; routes are the
 * service's own templates and statuses are the server's.
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** The service's metrics. */
export interface Metrics {
  registry: Registry;
  observeRequest(route: string, method: string, status: number, seconds: number): void;
  eventCreated(environment: string): void;
  rateLimiterFailedOpen(): void;
  /** A unary gRPC call answered by the lean path (transport/grpc-unary.ts). */
  grpcUnaryServed(): void;
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
  };
}
