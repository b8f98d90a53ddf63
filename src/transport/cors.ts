/**
 * CORS for the routes a browser calls (List Events, the export and follow streams, with a
 * frontend token; the verifiable log's reads): the REST routes and the same methods'
 * Connect and gRPC-Web procedures, unary and server-streaming, under one origin policy. It owns
 * the preflight answer and the headers of the actual response; routes not listed (event
 * ingestion above all) get neither, so a browser cannot call them cross-origin.
 *
 * Any origin (`*`) is the default: tokens travel in the Authorization header, never in
 * cookies, so the browser sends no ambient credential a foreign page could abuse, and
 * `Access-Control-Allow-Credentials` is never sent. With CORS_ORIGINS set, only those
 * origins are echoed back (with `Vary: Origin`).
 */
import { cors as connectCors } from "@connectrpc/connect";
import { EXPORT_RANGE_HEADERS } from "./export-range.js";
import { headerValue, type NodeRequest, type NodeResponse } from "./node-http.js";

/** The request headers a browser may send on a cross-origin call. */
export const CORS_ALLOWED_HEADERS = "authorization, content-type, x-request-id";
/**
 * The request headers of a Connect or gRPC-Web call from a browser: the credential and the
 * headers connect-es publishes for its protocols (`cors` of @connectrpc/connect).
 */
const RPC_ALLOWED_HEADERS = headerList([
  ...CORS_ALLOWED_HEADERS.split(", "),
  ...connectCors.allowedHeaders,
]);
/** The response headers such a call must read (gRPC-Web's status and its details). */
/**
 * The response headers every cross-origin answer exposes: the request id, and a 503's
 * Retry-After (the database, the integrator behind), which is not CORS-safelisted.
 */
const EXPOSED_ALWAYS = ["x-request-id", "retry-after"];
// ExportEvents' range, as REST's export exposes it (connect-stream-routes.ts).
const RPC_EXPOSED_HEADERS = headerList([
  ...EXPOSED_ALWAYS,
  ...connectCors.exposedHeaders,
  ...EXPORT_RANGE_HEADERS,
]);
/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** A REST path that answers cross-origin calls. */
export interface CorsRoute {
  /** The methods it allows. */
  methods: readonly string[];
  /** Request headers it reads beyond CORS_ALLOWED_HEADERS (`last-event-id`). */
  allowHeaders?: readonly string[];
  /** Response headers a page may read beyond `x-request-id` and `retry-after` (`content-disposition`). */
  exposeHeaders?: readonly string[];
}

/** Options of CORS. */
export interface CorsOptions {
  /** Allowed origins (`https://app.example.com`), or `["*"]` for any. */
  origins: readonly string[];
  /** The paths that answer cross-origin calls. */
  routes: Readonly<Record<string, CorsRoute>>;
  /** RPC procedures (`/audit.v1.EventService/ListEvents`) that answer them too (POST). */
  procedures?: readonly string[];
}

interface CorsRule {
  methods: readonly string[];
  allowHeaders: string;
  exposeHeaders: string;
}

/** CORS for the handler. */
export interface Cors {
  /**
   * Applies CORS to a request: answers a preflight (returns true: the request is done)
   * or sets the headers of the actual response (returns false). Paths not listed are
   * left alone.
   */
  handle(req: NodeRequest, res: NodeResponse, method: string, path: string): boolean;
  /** Whether OPTIONS is answered at `path` (a preflight), so that `Allow` lists it. */
  covers(path: string): boolean;
}

/**
 * The `Allow` header of a resource served with `methods`: HEAD beside GET (every GET
 * route answers it), and OPTIONS where CORS answers it, so that a 405 and an OPTIONS
 * answer list the same methods.
 */
export function allowHeader(methods: readonly string[], withOptions: boolean): string {
  const allowed = [...methods];
  if (allowed.includes("GET") && !allowed.includes("HEAD")) allowed.push("HEAD");
  if (withOptions && !allowed.includes("OPTIONS")) allowed.push("OPTIONS");
  return allowed.join(", ");
}

/** Header names, lower-cased, each once, as one header value. */
function headerList(names: readonly string[]): string {
  return [...new Set(names.map((name) => name.toLowerCase()))].join(", ");
}

/** Creates CORS for `routes`. */
export function createCors(options: CorsOptions): Cors {
  const anyOrigin = options.origins.includes("*");
  const allowed = new Set(options.origins.map((origin) => origin.toLowerCase()));
  const rules = new Map<string, CorsRule>();
  for (const [path, route] of Object.entries(options.routes)) {
    rules.set(path, {
      methods: route.methods,
      allowHeaders: headerList([
        ...CORS_ALLOWED_HEADERS.split(", "),
        ...(route.allowHeaders ?? []),
      ]),
      exposeHeaders: headerList([...EXPOSED_ALWAYS, ...(route.exposeHeaders ?? [])]),
    });
  }
  for (const path of options.procedures ?? []) {
    rules.set(path, {
      methods: ["POST"],
      allowHeaders: RPC_ALLOWED_HEADERS,
      exposeHeaders: RPC_EXPOSED_HEADERS,
    });
  }

  // The Access-Control-Allow-Origin for a request's Origin, or undefined when refused.
  const allowOrigin = (origin: string | undefined) => {
    if (anyOrigin) return "*";
    return origin !== undefined && allowed.has(origin.toLowerCase()) ? origin : undefined;
  };

  return {
    handle(req, res, method, path) {
      const rule = rules.get(path);
      if (!rule) return false;
      const { methods } = rule;
      const origin = headerValue(req, "origin");
      if (!anyOrigin) res.setHeader("vary", "Origin");
      const allowedOrigin = allowOrigin(origin);

      if (method === "OPTIONS") {
        res.statusCode = 204;
        res.setHeader("allow", allowHeader(methods, true));
        if (allowedOrigin !== undefined) {
          res.setHeader("access-control-allow-origin", allowedOrigin);
          res.setHeader("access-control-allow-methods", [...methods, "OPTIONS"].join(", "));
          res.setHeader("access-control-allow-headers", rule.allowHeaders);
          res.setHeader("access-control-max-age", String(PREFLIGHT_MAX_AGE));
        }
        res.setHeader("content-length", "0");
        res.end();
        return true;
      }
      if (allowedOrigin !== undefined) {
        res.setHeader("access-control-allow-origin", allowedOrigin);
        res.setHeader("access-control-expose-headers", rule.exposeHeaders);
      }
      return false;
    },
    covers: (path) => rules.has(path),
  };
}
