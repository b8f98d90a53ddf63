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
import { type RequestFacts, requestFacts, SINGLE_HEADERS } from "../api/request-facts.js";
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
          repeatedHeaders: repeatedHeaders(req.rawHeaders),
        },
        (name) => headerValue(req, name),
      );
      known.set(req, facts);
    }
    return facts;
  };
}

/** The SINGLE_HEADERS that `raw` (node's name, value, name, value...) holds more than once. */
function repeatedHeaders(raw: readonly string[]): ReadonlySet<string> {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (let at = 0; at < raw.length; at += 2) {
    const name = raw[at]?.toLowerCase();
    if (name === undefined || !SINGLE_HEADERS.has(name)) continue;
    if (seen.has(name)) repeated.add(name);
    seen.add(name);
  }
  return repeated;
}

/** True when an `X-Forwarded-Proto` value says the client used https (its first hop). */
export function forwardedHttps(value: string | undefined): boolean {
  return value?.split(",")[0]?.trim().toLowerCase() === "https";
}
