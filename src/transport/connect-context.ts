/**
 * How the facts the edge computed (api/request-facts.ts) reach the Connect routes and
 * interceptors: as a context value, which connect-node's adapter sets from the node
 * request (`contextValues`). A route or interceptor reached without them (a router
 * built without the edge) fails as an internal error rather than guess them.
 */
import { type ContextValues, createContextKey, createContextValues } from "@connectrpc/connect";
import type { RequestFacts } from "../api/request-facts.js";
import type { NodeRequest } from "./node-http.js";
import type { FactsReader } from "./request-facts.js";

/** The context key of the request's facts. */
export const requestFactsKey = createContextKey<RequestFacts | undefined>(undefined, {
  description: "the request's facts, computed at the edge",
});

/** The facts of an RPC, from its context values. */
export function factsOf(values: ContextValues): RequestFacts {
  const facts = values.get(requestFactsKey);
  if (facts === undefined) throw new Error("request facts missing: the edge sets them");
  return facts;
}

/** The adapter's `contextValues` option: the facts of the node request, as the edge read them. */
export function contextValuesFrom(readFacts: FactsReader): (req: NodeRequest) => ContextValues {
  return (req) => createContextValues().set(requestFactsKey, readFacts(req));
}
