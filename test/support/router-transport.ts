/**
 * The second tier of tests: the Connect routes over connect's in-memory transport
 * (`createRouterTransport`), no sockets. The facts the edge would compute from the
 * socket and headers (request id, HTTPS, peer, credential) are set by an interceptor
 * from the call's headers, as the node adapter's context values set them in the service.
 */
import { createRouterTransport, type Interceptor, type Transport } from "@connectrpc/connect";
import { pino } from "pino";
import type { Operations } from "../../src/api/operation.js";
import { type RequestFacts, requestFacts } from "../../src/api/request-facts.js";
import { requestFactsKey } from "../../src/transport/connect-context.js";
import { connectRoutes, errorBoundary } from "../../src/transport/connect-routes.js";
import { createErrorReporter } from "../../src/transport/error-reporter.js";
import { createHttpsRule } from "../../src/transport/https-required.js";

/** A line the service's error reporter logged. */
export type Logged = Record<string, unknown> & { msg?: string; reqId?: string; procedure?: string };

/** Options of the in-memory transport. */
export interface RouterTransportOptions {
  /** Whether calls count as HTTPS (true by default). */
  secure?: boolean;
  /** Refuse calls that are not HTTPS, as production does (false by default). */
  requireHttps?: boolean;
  /** Leave the facts out, as a router built without the edge would. */
  withoutFacts?: boolean;
}

/**
 * Serves `operations` in memory with the service's interceptors and error reporter;
 * `logged` collects what the reporter logged.
 */
export function routerTransport(
  operations: Operations,
  options: RouterTransportOptions = {},
): { transport: Transport; logged: Logged[] } {
  const logged: Logged[] = [];
  const logger = pino(
    { level: "error" },
    {
      write: (line: string) => void logged.push(JSON.parse(line) as Logged),
    },
  );
  const reporter = createErrorReporter(logger);
  const setFacts: Interceptor = (next) => async (req) => {
    if (!options.withoutFacts) {
      const facts: RequestFacts = requestFacts(
        {
          requestId: req.header.get("x-request-id") ?? "in-memory",
          secure: options.secure ?? true,
          peer: undefined,
          // (fetch Headers join repeats: in memory nothing is counted as repeated.)
          repeatedHeaders: new Set(),
        },
        (name) => req.header.get(name) ?? undefined,
      );
      req.contextValues.set(requestFactsKey, facts);
    }
    return next(req);
  };
  const https = createHttpsRule(options.requireHttps ?? false);
  const transport = createRouterTransport(connectRoutes(operations), {
    router: { interceptors: [errorBoundary(reporter), setFacts, https.interceptor] },
  });
  return { transport, logged };
}
