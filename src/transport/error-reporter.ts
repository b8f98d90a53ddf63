/**
 * The one place where failures of requests are logged, for every protocol: the REST
 * edge, the Connect routes and the lean gRPC path all report here. A failure is logged
 * when the client was told nothing of its cause (an internal failure, the database
 * unreachable: `isUnexpected`), with the request id and peer, never with a request's
 * body or credential. Refusals the client was told about (4xx, a ConnectError of the
 * runtime such as a client's cancellation) are not logged.
 *
 * A database outage is logged once, not once per request: its first failure is one error
 * line with the cause and its stack ("database unreachable"), the requests refused after
 * it are only counted, and when the database answers again (the probe, every second) one
 * line says so with the outage's length and how many requests it failed. Without a probe,
 * an outage is taken as over after a few seconds without such a failure.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { RequestFacts } from "../api/request-facts.js";
import { isUnexpected, Messages, toServiceError } from "../errors.js";

/** Where in the service a request failed: its REST route or its RPC procedure. */
export interface FailureSite {
  route?: string;
  procedure?: string;
}

/** Reports the failures of requests. */
export interface ErrorReporter {
  /** Logs `error` when it is unexpected; `facts` when the edge computed them. */
  report(error: unknown, facts: RequestFacts | undefined, site?: FailureSite): void;
}

/** Options of the reporter. */
export interface ErrorReporterOptions {
  /** Resolves when the database answers (the readiness check): ends an outage. */
  databaseProbe?: () => Promise<void>;
  /** How often an outage's end is looked for; 1 s by default. */
  probeIntervalMs?: number;
}

/** The first line of an outage. */
export const OUTAGE_STARTED = "database unreachable: requests are answered 503 until it is back";
/** The last line of an outage. */
export const OUTAGE_ENDED = "database reachable again";

// Without a probe, this long without a database failure ends an outage.
const QUIET_MS = 5_000;

/** Creates the reporter that writes to `logger`. */
export function createErrorReporter(
  logger: Logger,
  options: ErrorReporterOptions = {},
): ErrorReporter {
  const interval = options.probeIntervalMs ?? 1_000;
  let outage: { since: number; lastFailure: number; failed: number } | undefined;

  const watch = () => {
    const timer = setTimeout(async () => {
      if (!outage) return;
      const over = options.databaseProbe
        ? await options.databaseProbe().then(
            () => true,
            () => false,
          )
        : Date.now() - outage.lastFailure >= QUIET_MS;
      if (!over) return watch();
      logger.info(
        { outageSeconds: (Date.now() - outage.since) / 1000, requestsFailed: outage.failed },
        OUTAGE_ENDED,
      );
      outage = undefined;
    }, interval);
    // An outage still open does not keep a stopping process alive.
    timer.unref();
  };

  return {
    report(error, facts, site = {}) {
      const unexpected =
        error instanceof ConnectError
          ? error.code === Code.Internal || error.code === Code.Unknown
          : isUnexpected(error);
      if (!unexpected) return;
      if (toServiceError(error)?.message === Messages.unavailable) {
        const now = Date.now();
        if (outage) {
          outage.failed++;
          outage.lastFailure = now;
          return;
        }
        outage = { since: now, lastFailure: now, failed: 1 };
        logger.error(
          { err: error, reqId: facts?.requestId, peer: facts?.peer, ...site },
          OUTAGE_STARTED,
        );
        watch();
        return;
      }
      logger.error(
        { err: error, reqId: facts?.requestId, peer: facts?.peer, ...site },
        "request failed",
      );
    },
  };
}
