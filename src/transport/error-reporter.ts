/**
 * The one place where failures of requests are logged, for every protocol: the REST
 * edge, the Connect routes and the lean gRPC path all report here. A failure is logged
 * when the client was told nothing of its cause (an internal failure, the database
 * unreachable: `isUnexpected`), with the request id and peer, never with a request's
 * body or credential. Refusals the client was told about (4xx, a ConnectError of the
 * runtime such as a client's cancellation) are not logged.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { RequestFacts } from "../api/request-facts.js";
import { isUnexpected } from "../errors.js";

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

/** Creates the reporter that writes to `logger`. */
export function createErrorReporter(logger: Logger): ErrorReporter {
  return {
    report(error, facts, site = {}) {
      const unexpected =
        error instanceof ConnectError
          ? error.code === Code.Internal || error.code === Code.Unknown
          : isUnexpected(error);
      if (!unexpected) return;
      logger.error(
        { err: error, reqId: facts?.requestId, peer: facts?.peer, ...site },
        "request failed",
      );
    },
  };
}
