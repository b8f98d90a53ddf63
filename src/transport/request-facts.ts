/**
 * The edge's reading of a request's facts (api/request-facts.ts), once per request:
 * the first reader computes them from the node request, every later one (the Connect
 * adapter's context values, the lean gRPC path) gets the same object back.
 *
 * Secure means TLS on the connection or, behind a proxy the service is told to trust
 * (TRUST_PROXY), an `X-Forwarded-Proto` whose first hop is https. A request id is the
 * client's X-Request-Id when it is short and plain, a new UUID otherwise.
 */
import { randomUUID } from "node:crypto";
import type { TLSSocket } from "node:tls";
import { type RequestFacts, requestFacts } from "../api/request-facts.js";
import { headerValue, type NodeRequest } from "./node-http.js";

/** Returns the facts of a request, computing them on its first call. */
export type FactsReader = (req: NodeRequest) => RequestFacts;

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** Creates the reader; `trustProxy` lets X-Forwarded-Proto say the request was https. */
export function createFactsReader(options: { trustProxy: boolean }): FactsReader {
  const known = new WeakMap<NodeRequest, RequestFacts>();
  return (req) => {
    let facts = known.get(req);
    if (facts === undefined) {
      const given = req.headers["x-request-id"];
      const secure =
        (req.socket as TLSSocket).encrypted === true ||
        (options.trustProxy && forwardedHttps(headerValue(req, "x-forwarded-proto")));
      facts = requestFacts(
        {
          requestId: typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID(),
          secure,
          peer: req.socket.remoteAddress,
        },
        (name) => headerValue(req, name),
      );
      known.set(req, facts);
    }
    return facts;
  };
}

/** True when an `X-Forwarded-Proto` value says the client used https (its first hop). */
export function forwardedHttps(value: string | undefined): boolean {
  return value?.split(",")[0]?.trim().toLowerCase() === "https";
}
