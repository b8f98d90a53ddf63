/**
 * CORS for the routes a browser calls (List Events, with a frontend token). It owns the
 * preflight answer and the headers of the actual response; routes not listed (event
 * ingestion above all) get neither, so a browser cannot call them cross-origin.
 *
 * Any origin (`*`) is the default: tokens travel in the Authorization header, never in
 * cookies, so the browser sends no ambient credential a foreign page could abuse, and
 * `Access-Control-Allow-Credentials` is never sent. With CORS_ORIGINS set, only those
 * origins are echoed back (with `Vary: Origin`).
 */
import { headerValue, type NodeRequest, type NodeResponse } from "./node-http.js";

/** The request headers a browser may send on a cross-origin call. */
export const CORS_ALLOWED_HEADERS = "authorization, content-type, x-request-id";
/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** Options of CORS. */
export interface CorsOptions {
  /** Allowed origins (`https://app.example.com`), or `["*"]` for any. */
  origins: readonly string[];
  /** The paths that answer cross-origin calls, and the methods they allow. */
  routes: Readonly<Record<string, readonly string[]>>;
}

/** CORS for the handler. */
export interface Cors {
  /**
   * Applies CORS to a request: answers a preflight (returns true: the request is done)
   * or sets the headers of the actual response (returns false). Paths not listed are
   * left alone.
   */
  handle(req: NodeRequest, res: NodeResponse, method: string, path: string): boolean;
}

/** Creates CORS for `routes`. */
export function createCors(options: CorsOptions): Cors {
  const anyOrigin = options.origins.includes("*");
  const allowed = new Set(options.origins.map((origin) => origin.toLowerCase()));

  // The Access-Control-Allow-Origin for a request's Origin, or undefined when refused.
  const allowOrigin = (origin: string | undefined) => {
    if (anyOrigin) return "*";
    return origin !== undefined && allowed.has(origin.toLowerCase()) ? origin : undefined;
  };

  return {
    handle(req, res, method, path) {
      const methods = options.routes[path];
      if (!methods) return false;
      const origin = headerValue(req, "origin");
      if (!anyOrigin) res.setHeader("vary", "Origin");
      const allowedOrigin = allowOrigin(origin);

      if (method === "OPTIONS") {
        res.statusCode = 204;
        res.setHeader("allow", [...methods, "OPTIONS"].join(", "));
        if (allowedOrigin !== undefined) {
          res.setHeader("access-control-allow-origin", allowedOrigin);
          res.setHeader("access-control-allow-methods", [...methods, "OPTIONS"].join(", "));
          res.setHeader("access-control-allow-headers", CORS_ALLOWED_HEADERS);
          res.setHeader("access-control-max-age", String(PREFLIGHT_MAX_AGE));
        }
        res.setHeader("content-length", "0");
        res.end();
        return true;
      }
      if (allowedOrigin !== undefined) {
        res.setHeader("access-control-allow-origin", allowedOrigin);
        res.setHeader("access-control-expose-headers", "x-request-id");
      }
      return false;
    },
  };
}
