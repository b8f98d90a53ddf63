/**
 * The gRPC health service (grpc.health.v1.Health) on the Connect routes, for gRPC probes
 * (Kubernetes `grpc:` probes, grpc_health_probe) and load balancers. A service is SERVING
 * when the readiness checks of /readyz pass (the database answers), NOT_SERVING
 * otherwise: the same verdict as /readyz, in gRPC's terms.
 *
 * Invariants: "" (the whole server) and each listed service are known; Check answers
 * NOT_FOUND for any other name, and Watch SERVICE_UNKNOWN, as the protocol says; List
 * gives every known name with its status. Watch
 * sends the status at once and then each change, re-checked every few seconds, until the
 * client goes away.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import {
  Health,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";

/** How often Watch re-checks. */
const WATCH_INTERVAL_MS = 5000;
/** How long a check may take before it counts as failed (as /readyz's). */
const CHECK_TIMEOUT_MS = 2000;

/** Options of the health service. */
export interface HealthOptions {
  /** The services that can be asked about by name (besides "" for the server). */
  services: readonly string[];
  /** Resolves true when the service can serve (the readiness checks pass). */
  ready: () => Promise<boolean>;
  /** How often Watch re-checks (tests shorten it). */
  watchIntervalMs?: number;
}

/** Registers grpc.health.v1.Health. */
export function healthRoutes(options: HealthOptions): (router: ConnectRouter) => void {
  const known = new Set(["", ...options.services]);
  const status = async (service: string) => {
    if (!known.has(service)) return ServingStatus.SERVICE_UNKNOWN;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
    });
    const ready = await Promise.race([options.ready().catch(() => false), timeout]);
    clearTimeout(timer);
    return ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  };
  return (router) => {
    router.service(Health, {
      async check(request) {
        if (!known.has(request.service)) {
          throw new ConnectError(`unknown service ${request.service}`, Code.NotFound);
        }
        return create(HealthCheckResponseSchema, { status: await status(request.service) });
      },
      async list() {
        const ready = await status("");
        return create(HealthListResponseSchema, {
          statuses: Object.fromEntries([...known].map((name) => [name, { status: ready }])),
        });
      },
      async *watch(request, context) {
        let last: ServingStatus | undefined;
        while (!context.signal.aborted) {
          const current = await status(request.service);
          if (current !== last) {
            last = current;
            yield create(HealthCheckResponseSchema, { status: current });
          }
          await sleep(options.watchIntervalMs ?? WATCH_INTERVAL_MS, context.signal);
        }
      },
    });
  };
}

// Resolves after `ms`, or at once when `signal` aborts.
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
