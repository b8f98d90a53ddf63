/**
 * The request handler behind the port, for HTTP/1.1 and HTTP/2 alike. It gives every
 * request an id, enforces HTTPS in production, answers the probes, metrics and CORS
 * preflights (transport/cors.ts), and sends each request to the REST transcoder or to
 * the Connect adapter. REST errors are rendered here, once.
 */
import { randomUUID } from "node:crypto";
import { Http2ServerRequest, constants as http2Constants } from "node:http2";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { Messages, ServiceError } from "../errors.js";
import type { Metrics } from "../observability/metrics.js";
import type { Cors } from "./cors.js";
import { isGrpcRequest, sendGrpcMessagesPlain } from "./grpc-message.js";
import { forwardedHttps } from "./https-required.js";
import { headerValue, type NodeRequest, type NodeResponse, sendJson } from "./node-http.js";
import { type RestRouter, serveRest } from "./rest.js";
import { toRestError } from "./rest-errors.js";
import { createStaticViewer } from "./static-viewer.js";

/** A readiness check: resolves when the dependency answers. */
export type ReadinessCheck = () => Promise<void>;

/** Dependencies of the handler. */
export interface HttpHandlerDeps {
  logger: Logger;
  metrics: Metrics;
  rest: RestRouter;
  /** The Connect adapter; it answers 404 itself for unknown paths. */
  connect: (req: NodeRequest, res: NodeResponse) => void;
  /** Unary gRPC calls it can take (grpc-unary.ts); the rest go to `connect`. */
  grpcUnary?: (req: NodeRequest, res: NodeResponse) => boolean;
  /** Paths of the RPC procedures, for metrics labels. */
  procedures: ReadonlySet<string>;
  readiness: Record<string, ReadinessCheck>;
  /**
   * Dependencies the service works without (Redis: rate limits fail open): reported by
   * /readyz as "degraded" but not failing it, so instances stay in rotation.
   */
  optionalReadiness?: Record<string, ReadinessCheck>;
  requireHttps: boolean;
  trustProxy: boolean;
  /** CORS for the routes browsers call; without it, no route answers cross-origin. */
  cors?: Cors;
}

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;
const READINESS_TIMEOUT_MS = 2000;
// How long the unread rest of an answered HTTP/2 request may take to arrive.
const DRAIN_MS = 5000;

/** Creates the handler. */
export function createHttpHandler(deps: HttpHandlerDeps) {
  const { logger, metrics, rest } = deps;
  // The browser viewer's files (static-viewer.ts), from viewer/dist.
  const viewer = createStaticViewer();

  const isSecure = (req: NodeRequest): boolean => {
    if ((req.socket as TLSSocket).encrypted) return true;
    return deps.trustProxy && forwardedHttps(headerValue(req, "x-forwarded-proto"));
  };

  const fail = (res: NodeResponse, error: unknown, requestId: string) => {
    const mapped = toRestError(error);
    if (mapped.unexpected) logger.error({ err: error, reqId: requestId }, "request failed");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendJson(res, mapped.status, mapped.body, mapped.headers);
  };

  const ready = async (res: NodeResponse) => {
    const checks: Record<string, string> = {};
    const optional = deps.optionalReadiness ?? {};
    await Promise.all(
      Object.entries({ ...deps.readiness, ...optional }).map(async ([name, check]) => {
        try {
          await withTimeout(check(), READINESS_TIMEOUT_MS);
          checks[name] = "ok";
        } catch {
          checks[name] = "unavailable";
        }
      }),
    );
    const ok = Object.keys(deps.readiness).every((name) => checks[name] === "ok");
    const degraded = Object.keys(optional).some((name) => checks[name] !== "ok");
    const status = ok ? (degraded ? "degraded" : "ok") : "unavailable";
    sendJson(res, ok ? 200 : 503, { status, checks });
  };

  return (req: NodeRequest, res: NodeResponse): void => {
    const started = performance.now();
    const given = req.headers["x-request-id"];
    const requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    // RPC handlers read the id from the request headers, like any header.
    req.headers["x-request-id"] = requestId;
    res.setHeader("x-request-id", requestId);

    // The absolute form (`POST http://host/api/...`), which HTTP/1.1 servers must accept
    // (RFC 9112 section 3.2.2), is routed by its path like the usual origin form.
    if (req.url && !req.url.startsWith("/")) req.url = originForm(req.url);
    const url = req.url ?? "/";
    const queryStart = url.indexOf("?");
    const path = queryStart === -1 ? url : url.slice(0, queryStart);
    const method = req.method ?? "GET";
    // HEAD is GET without the body, which node leaves out of the response itself.
    const readMethod = method === "HEAD" ? "GET" : method;
    let route = "unmatched";
    if (req instanceof Http2ServerRequest) {
      // An HTTP/2 request answered before its body was read (an RPC over the size limit)
      // would keep its stream open: the client waits for flow control to send the rest,
      // and shutdown waits for the stream. The rest is read and dropped, as REST does for
      // its 413, for a few seconds at most; then the stream is cancelled. (A reset with NO_ERROR, which RFC 9113 8.1 suggests, leaves
      // node's own clients hanging.)
      const { stream } = req;
      stream.once("finish", () => {
        if (req.complete || stream.destroyed) return;
        // (A request the adapter has destroyed cannot be read: only the timer ends it.
        // Not at once: the trailers of a gRPC answer are still to be sent.)
        if (!req.destroyed) req.resume();
        const timer = setTimeout(() => stream.close(http2Constants.NGHTTP2_CANCEL), DRAIN_MS);
        stream.once("close", () => clearTimeout(timer));
      });
    }
    res.once("finish", () => {
      const seconds = (performance.now() - started) / 1000;
      metrics.observeRequest(route, method, res.statusCode, seconds);
      logger.debug(
        { reqId: requestId, method, route, status: res.statusCode, ms: seconds * 1000 },
        "request",
      );
    });

    const secure = isSecure(req);
    if (secure) res.setHeader("strict-transport-security", "max-age=31536000; includeSubDomains");

    if (PROBES.has(path) && readMethod !== "GET") {
      route = path;
      sendJson(res, 405, { error: "Method not allowed" }, { allow: "GET, HEAD" });
      return;
    }
    if (readMethod === "GET" && path === "/healthz") {
      route = path;
      sendJson(res, 200, { status: "ok" });
      return;
    }
    if (readMethod === "GET" && path === "/readyz") {
      route = path;
      void ready(res);
      return;
    }
    if (readMethod === "GET" && path === "/metrics") {
      route = path;
      deps.metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": deps.metrics.registry.contentType });
          res.end(text);
        },
        (error: unknown) => fail(res, error, requestId),
      );
      return;
    }
    // Before the HTTPS check, so that a browser can read that refusal too.
    if (deps.cors?.handle(req, res, method, path)) {
      route = path;
      return;
    }
    // RPCs are refused by the adapter's interceptor instead, in their own protocol.
    const rpc = deps.procedures.has(path);
    if (deps.requireHttps && !secure && !rpc) {
      fail(res, new ServiceError("bad_request", Messages.httpsRequired), requestId);
      return;
    }
    if (viewer.handle(req, res, method, path)) {
      route = "/viewer";
      return;
    }

    const match = rest.match(readMethod, path);
    if (match && "allowedMethods" in match) {
      const allowed = match.allowedMethods;
      if (allowed.includes("GET")) allowed.push("HEAD");
      sendJson(res, 405, { error: "Method not allowed" }, { allow: allowed.join(", ") });
      return;
    }
    if (match) {
      route = match.route.template;
      const query = new URLSearchParams(queryStart === -1 ? "" : url.slice(queryStart + 1));
      serveRest(req, res, match, query).catch((error: unknown) => {
        if (error instanceof ServiceError && error.kind === "payload_too_large") {
          // Discard what is still arriving, so the client reads the 413 before the close.
          req.resume();
        }
        fail(res, error, requestId);
      });
      return;
    }
    if (rpc) route = path;
    if (isGrpcRequest(headerValue(req, "content-type"))) sendGrpcMessagesPlain(res);
    // The lean path runs no interceptors: a refused request goes to the adapter.
    const refused = deps.requireHttps && !secure;
    if (!refused && deps.grpcUnary?.(req, res)) return;
    try {
      deps.connect(req, res);
    } catch {
      // The adapter builds the request's URL from its authority and throws, synchronously
      // and out of this listener, on one that is not a URL's (`:authority: a:b`): an
      // uncaught exception that would end the process.
      fail(res, new ServiceError("bad_request", Messages.invalidAuthority), requestId);
    }
  };
}

/**
 * The path and query of an absolute-form request target, taken as text (not normalised,
 * exactly as the origin form would arrive); anything else unchanged.
 */
function originForm(target: string): string {
  const rest = target.replace(/^https?:\/\/[^/?#]*/i, "");
  if (rest === target) return target;
  return rest.startsWith("/") ? rest : `/${rest}`;
}

/** Paths answered by the service itself, to GET and HEAD only. */
const PROBES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/** The Connect adapter's fallback: unknown routes get a 404 JSON body. */
export function notFound(_req: NodeRequest, res: NodeResponse): void {
  sendJson(res, 404, { error: Messages.notFound });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timed out")), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
