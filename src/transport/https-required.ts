/**
 * HTTPS in production (spec section 1): a request is secure when it arrived over TLS or,
 * behind a proxy the service is told to trust (TRUST_PROXY), when the proxy says the
 * client used https. The HTTP edge refuses everything else with the REST error; RPCs are
 * refused by the interceptor here instead, so that gRPC and Connect clients read the
 * refusal in their own protocol (a REST 400 reaches a gRPC client as "Internal").
 */
import type { Interceptor } from "@connectrpc/connect";
import { Messages, ServiceError } from "../errors.js";

/** True when an `X-Forwarded-Proto` value says the client used https (its first hop). */
export function forwardedHttps(value: string | null | undefined): boolean {
  return value?.split(",")[0]?.trim().toLowerCase() === "https";
}

/** Refuses RPCs that did not arrive over HTTPS with `HTTPS is required`. */
export function requireHttps(options: { trustProxy: boolean }): Interceptor {
  return (next) => async (req) => {
    // The adapter builds the URL's scheme from the connection: https when it is TLS.
    const secure =
      new URL(req.url).protocol === "https:" ||
      (options.trustProxy && forwardedHttps(req.header.get("x-forwarded-proto")));
    if (!secure) throw new ServiceError("bad_request", Messages.httpsRequired);
    return next(req);
  };
}
