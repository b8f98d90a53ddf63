/**
 * HTTPS in production (spec section 1), one rule on one fact: a request whose facts say
 * it is not secure (transport/request-facts.ts decides that, once) is refused with
 * `HTTPS is required`. The HTTP edge applies it to everything but RPCs, with the REST
 * error; RPCs are refused by the interceptor here instead, so that gRPC and Connect
 * clients read the refusal in their own protocol (a REST 400 reaches a gRPC client as
 * "Internal").
 */
import type { Interceptor } from "@connectrpc/connect";
import type { RequestFacts } from "../api/request-facts.js";
import { Messages, ServiceError } from "../errors.js";
import { factsOf } from "./connect-context.js";

/** The HTTPS rule of one configuration. */
export interface HttpsRule {
  /** True when the request must be refused. */
  refuses(facts: RequestFacts): boolean;
  /** The 400 ServiceError of a refusal. */
  refusal(): ServiceError;
  /** The rule as an interceptor of the Connect routes. */
  readonly interceptor: Interceptor;
}

/**
 * Creates the rule; with `required` false, nothing is refused. RPCs of the `exempt`
 * services (the gRPC health service: a probe) are never refused.
 */
export function createHttpsRule(required: boolean, exempt: readonly string[] = []): HttpsRule {
  const exemptServices = new Set(exempt);
  const refuses = (facts: RequestFacts) => required && !facts.secure;
  const refusal = () => new ServiceError("bad_request", Messages.httpsRequired);
  return {
    refuses,
    refusal,
    interceptor: (next) => async (req) => {
      if (required && !exemptServices.has(req.service.typeName)) {
        if (refuses(factsOf(req.contextValues))) throw refusal();
      }
      return next(req);
    },
  };
}
