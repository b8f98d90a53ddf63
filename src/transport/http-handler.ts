/**
 * The request handler behind the port, for HTTP/1.1 and HTTP/2 alike. It reads each
 * request's facts once (transport/request-facts.ts: id, HTTPS, peer, credential), then
 * hands the request to the first step that takes it: the probes and metrics, CORS
 * preflights (transport/cors.ts), the HTTPS refusal, the viewer, the OpenAPI document,
 * the REST transcoder,
 * and last the RPC paths (the lean gRPC path, then the Connect adapter). REST errors are
 * rendered here, once; failures go to the one error reporter.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Http2ServerRequest, constants as http2Constants } from "node:http2";
import type { Logger } from "pino";
import type { RequestFacts } from "../api/request-facts.js";
import { Messages, ServiceError } from "../errors.js";
import type { Metrics } from "../observability/metrics.js";
import { overloaded } from "./admission.js";
import { bodyLimitForUrl } from "./body-limits.js";
import { allowHeader, type Cors } from "./cors.js";
import type { ErrorReporter } from "./error-reporter.js";
import { isGrpcRequest, sendGrpcMessagesPlain } from "./grpc-message.js";
import type { HttpsRule } from "./https-required.js";
import {
  headerValue,
  jsonHeaders,
  type NodeRequest,
  type NodeResponse,
  sendJson,
} from "./node-http.js";
import { createOpenApiRoute } from "./openapi-route.js";
import type { FactsReader } from "./request-facts.js";
import { type RestRouter, serveRest } from "./rest.js";
import { type RestError, toRestError } from "./rest-errors.js";
import type { RestStreams } from "./rest-streams.js";
import { createStaticViewer } from "./static-viewer.js";
import type { StrictJsonGate } from "./strict-json-gate.js";

/** A readiness check: resolves when the dependency answers. */
export type ReadinessCheck = () => Promise<void>;

/** Dependencies of the handler. */
export interface HttpHandlerDeps {
  logger: Logger;
  metrics: Metrics;
  reporter: ErrorReporter;
  /** Reads a request's facts once; the adapter's context values read the same. */
  readFacts: FactsReader;
  https: HttpsRule;
  rest: RestRouter;
  /** The REST export and follow streams (rest-streams.ts). */
  restStreams?: RestStreams;
  /** The Connect adapter; it answers 404 itself for unknown paths. */
  connect: (req: NodeRequest, res: NodeResponse) => void;
  /** Reads and checks the requests it takes before they go to `connect` (strict-json-gate.ts). */
  strictJson?: StrictJsonGate;
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
  /** CORS for the routes browsers call; without it, no route answers cross-origin. */
  cors?: Cors;
  /** When set, /metrics answers only `Authorization: Bearer <metricsToken>`. */
  metricsToken?: string;
  /**
   * Refuses a REST ingest path at once while ingestion is overloaded (admission.ts
   * `refusesNow`); false: the request goes on. Without it, only the operation refuses.
   */
  ingestRefusedNow?: (path: string) => boolean;
}

/** One request on its way through the steps. */
interface Exchange {
  req: NodeRequest;
  res: NodeResponse;
  facts: RequestFacts;
  method: string;
  /** The method that decides the route: HEAD is GET without the body (node drops it). */
  readMethod: string;
  path: string;
  /** The query string, without its `?`. */
  query: string;
  /** The metrics label, set by the step that takes the request. */
  route: string;
}

/** A step: true when it took the request. */
type Step = (exchange: Exchange) => boolean;

const HSTS = "max-age=31536000; includeSubDomains";
const READINESS_TIMEOUT_MS = 2000;
// How long the unread rest of an answered HTTP/2 request may take to arrive.
const DRAIN_MS = 5000;

/** Creates the handler. */
export function createHttpHandler(deps: HttpHandlerDeps) {
  const { logger, metrics, rest, reporter } = deps;
  // The browser viewer's files (static-viewer.ts), from viewer/dist.
  const viewer = createStaticViewer();
  // The OpenAPI document of the REST API (openapi-route.ts), from gen/openapi.
  const openapi = createOpenApiRoute();

  const fail = (x: Exchange, error: unknown) => {
    reporter.report(error, x.facts, { route: x.route });
    const mapped = toRestError(error);
    if (x.res.headersSent) {
      x.res.destroy();
      return;
    }
    sendJson(x.res, mapped.status, mapped.body, mapped.headers);
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

  // With METRICS_TOKEN, /metrics needs it as a Bearer value; digests compared, so the
  // time taken does not depend on how much of the token a guess got right.
  const metricsDigest = deps.metricsToken === undefined ? undefined : sha256(deps.metricsToken);
  const metricsAllowed = (authorization: string | undefined): boolean => {
    if (metricsDigest === undefined) return true;
    const presented = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? "")?.[1] ?? "";
    return timingSafeEqual(sha256(presented), metricsDigest);
  };

  /** 405, with the methods the path answers (OPTIONS too where CORS answers it). */
  const notAllowed = (x: Exchange, methods: readonly string[]) =>
    sendJson(
      x.res,
      405,
      { error: "Method not allowed" },
      { allow: allowHeader(methods, deps.cors?.covers(x.path) ?? false) },
    );

  /** /healthz, /readyz and /metrics, to GET and HEAD only. */
  const serveProbes: Step = (x) => {
    if (!PROBES.has(x.path)) return false;
    x.route = x.path;
    if (x.readMethod !== "GET") {
      notAllowed(x, ["GET"]);
    } else if (x.path === "/healthz") {
      sendJson(x.res, 200, { status: "ok" });
    } else if (x.path === "/readyz") {
      void ready(x.res);
    } else if (!metricsAllowed(headerValue(x.req, "authorization"))) {
      sendJson(x.res, 401, { error: "Invalid metrics token" }, { "www-authenticate": "Bearer" });
    } else {
      metrics.registry.metrics().then(
        (text) => {
          x.res.writeHead(200, { "content-type": metrics.registry.contentType });
          x.res.end(text);
        },
        (error: unknown) => fail(x, error),
      );
    }
    return true;
  };

  // Before the HTTPS check, so that a browser can read that refusal too.
  const serveCors: Step = (x) => {
    if (!deps.cors?.handle(x.req, x.res, x.method, x.path)) return false;
    x.route = x.path;
    return true;
  };

  // RPCs are refused by the adapter's interceptor instead, in their own protocol.
  const refuseInsecure: Step = (x) => {
    if (deps.procedures.has(x.path) || !deps.https.refuses(x.facts)) return false;
    fail(x, deps.https.refusal());
    return true;
  };

  // Under an overload most ingest requests are refused: answered before the body is read
  // or the route matched, with bytes prepared once (the same answer the operation gives).
  // The connection is kept for the next request, its unread body dropped, unless that body
  // is over the route's limit or of unknown length: HTTP/1.1 then closes the connection
  // rather than read it all (HTTP/2 cuts an unread body short, drainWhenAnswered).
  const refuseOverloaded: Step = (x) => {
    if (x.method !== "POST" || !deps.ingestRefusedNow?.(x.path)) return false;
    x.route = x.path;
    const declared = Number(headerValue(x.req, "content-length") ?? Number.NaN);
    const close = !(declared <= bodyLimitForUrl(x.path)) && "shouldKeepAlive" in x.res;
    x.res.writeHead(OVERLOADED.status, close ? OVERLOADED.closing : OVERLOADED.headers);
    x.res.end(OVERLOADED.body);
    return true;
  };

  const serveViewer: Step = (x) => {
    if (!viewer.handle(x.req, x.res, x.method, x.path)) return false;
    x.route = "/viewer";
    return true;
  };

  const serveOpenApi: Step = (x) => {
    if (!openapi.handle(x.req, x.res, x.method, x.path)) return false;
    x.route = x.path;
    return true;
  };

  const serveRestStream: Step = (x) => {
    if (!deps.restStreams?.handle(x)) return false;
    x.route = x.path;
    return true;
  };

  const serveRestRoute: Step = (x) => {
    const match = rest.match(x.readMethod, x.path);
    if (!match) return false;
    if ("allowedMethods" in match) {
      notAllowed(x, match.allowedMethods);
      return true;
    }
    x.route = match.route.template;
    serveRest(x.req, x.res, x.facts, match, new URLSearchParams(x.query)).catch(
      (error: unknown) => {
        if (error instanceof ServiceError && error.kind === "payload_too_large") {
          // Discard what is still arriving, so the client reads the 413 before the close.
          x.req.resume();
        }
        fail(x, error);
      },
    );
    return true;
  };

  /** Everything else: the RPC paths, whose adapter answers unknown paths with a 404. */
  const serveRpc: Step = (x) => {
    if (deps.procedures.has(x.path)) {
      x.route = x.path;
      // Every procedure is called with POST (none is side-effect-free, for Connect's GET):
      // any other method gets what a REST route answers, not the adapter's bare 405.
      if (x.method !== "POST") {
        notAllowed(x, ["POST"]);
        return true;
      }
    }
    if (isGrpcRequest(headerValue(x.req, "content-type"))) sendGrpcMessagesPlain(x.res);
    // The lean path runs no interceptors: a refused request goes to the adapter.
    if (!deps.https.refuses(x.facts) && deps.grpcUnary?.(x.req, x.res)) return true;
    const toAdapter = () => {
      try {
        deps.connect(x.req, x.res);
      } catch {
        // The adapter builds the request's URL from its authority and throws, synchronously
        // and out of this listener, on one that is not a URL's (`:authority: a:b`): an
        // uncaught exception that would end the process.
        fail(x, new ServiceError("bad_request", Messages.invalidAuthority));
      }
    };
    // AdminService's JSON is checked before the adapter decodes it (strict-json-gate.ts);
    // the operation refuses what the check found, once the admin token is checked.
    const checked = (problem?: string) => {
      if (problem !== undefined) x.facts.bodyProblem = problem;
      toAdapter();
    };
    if (!deps.https.refuses(x.facts) && deps.strictJson?.(x.req, checked)) return true;
    toAdapter();
    return true;
  };

  const steps: Step[] = [
    serveProbes,
    serveCors,
    refuseInsecure,
    refuseOverloaded,
    serveViewer,
    serveOpenApi,
    serveRestStream,
    serveRestRoute,
    serveRpc,
  ];

  /** Counts and logs the request once its answer is sent. */
  const observe = (x: Exchange, started: number) => {
    const seconds = (performance.now() - started) / 1000;
    metrics.observeRequest(x.route, x.method, x.res.statusCode, seconds);
    logger.debug(
      {
        reqId: x.facts.requestId,
        method: x.method,
        route: x.route,
        status: x.res.statusCode,
        ms: seconds * 1000,
      },
      "request",
    );
  };

  return (req: NodeRequest, res: NodeResponse): void => {
    const started = performance.now();
    const facts = deps.readFacts(req);
    res.setHeader("x-request-id", facts.requestId);
    const x = exchange(req, res, facts);
    if (req instanceof Http2ServerRequest) drainWhenAnswered(req);
    res.once("finish", () => observe(x, started));
    if (facts.secure) res.setHeader("strict-transport-security", HSTS);
    for (const step of steps) if (step(x)) return;
  };
}

/** The exchange of a request: its method, path and query, before any step. */
function exchange(req: NodeRequest, res: NodeResponse, facts: RequestFacts): Exchange {
  // The absolute form (`POST http://host/api/...`), which HTTP/1.1 servers must accept
  // (RFC 9112 section 3.2.2), is routed by its path like the usual origin form.
  if (req.url && !req.url.startsWith("/")) req.url = originForm(req.url);
  const url = req.url ?? "/";
  const queryStart = url.indexOf("?");
  const method = req.method ?? "GET";
  return {
    req,
    res,
    facts,
    method,
    readMethod: method === "HEAD" ? "GET" : method,
    path: queryStart === -1 ? url : url.slice(0, queryStart),
    query: queryStart === -1 ? "" : url.slice(queryStart + 1),
    route: "unmatched",
  };
}

/**
 * An HTTP/2 request answered before its body was read (an RPC over the size limit)
 * would keep its stream open: the client waits for flow control to send the rest, and
 * shutdown waits for the stream. The rest is read and dropped, as REST does for its 413,
 * for a few seconds at most; then the stream is cancelled. (A reset with NO_ERROR, which
 * RFC 9113 8.1 suggests, leaves node's own clients hanging.)
 */
function drainWhenAnswered(req: Http2ServerRequest): void {
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
function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** The REST answer of an overload refusal, as toRestError renders `overloaded()`, encoded once. */
const OVERLOADED = preparedAnswer(toRestError(overloaded()));

/** An error's status, headers (also with `connection: close`) and body, encoded. */
function preparedAnswer(error: RestError) {
  const body = Buffer.from(JSON.stringify(error.body));
  const headers = jsonHeaders(body.length, error.headers);
  return { status: error.status, headers, closing: { ...headers, connection: "close" }, body };
}

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
