/**
 * The edge assembled: from the operations and the services that declare them, one
 * handler for the port that serves REST (routes from the proto annotations), gRPC,
 * gRPC-Web and Connect (connect-node's adapter, and the lean unary gRPC path beside it),
 * with gRPC server reflection and the gRPC health service on the same routes.
 * Every path reads the request's facts from the same reader, refuses plain HTTP with the
 * same rule, and reports failures to the same reporter.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { AdminService } from "../../gen/audit/v1/admin_pb.js";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import type { EventStreamOperations } from "../api/event-stream-operations.js";
import type { Operations, StreamOperations } from "../api/operation.js";
import type { Metrics } from "../observability/metrics.js";
import { type AdmissionLimits, admissionClass, createAdmission } from "./admission.js";
import { MAX_BODY_BYTES } from "./body.js";
import { ACCEPT_COMPRESSION } from "./compression.js";
import { contextValuesFrom } from "./connect-context.js";
import { bidiStreamRoutes, connectRoutes, errorBoundary } from "./connect-routes.js";
import { connectStreamRoutes } from "./connect-stream-routes.js";
import { allowHeader, type CorsRoute, createCors } from "./cors.js";
import { createErrorReporter } from "./error-reporter.js";
import { EXPORT_RANGE_HEADERS } from "./export-range.js";
import { healthRoutes } from "./grpc-health.js";
import { createReflectionIndex, REFLECTION_SERVICES, reflectionRoutes } from "./grpc-reflection.js";
import { createGrpcUnary } from "./grpc-unary.js";
import { createHttpHandler, notFound, type ReadinessCheck } from "./http-handler.js";
import { createHttpsRule } from "./https-required.js";
import type { NodeRequest, NodeResponse } from "./node-http.js";
import type { LoadShedder } from "./queue-delay.js";
import { createFactsReader } from "./request-facts.js";
import { createRestRouter } from "./rest.js";
import { createRestStreams, EXPORT_PATH, STREAM_PATH } from "./rest-streams.js";
import { createStrictJsonGate } from "./strict-json-gate.js";

/** What the edge serves and how. */
export interface EdgeOptions {
  /** The services, in the order of the proto files; their methods' operations. */
  services: DescService[];
  operations: Operations;
  /** Export and follow streams (api/event-stream-operations.ts), over REST and RPC. */
  streams?: EventStreamOperations;
  /** The ingest streams (IngestEvents), RPC only. */
  ingestStreams?: StreamOperations;
  logger: Logger;
  metrics: Metrics;
  /** Answer unary gRPC calls on the lean path (grpc-unary.ts) rather than the adapter. */
  leanGrpc: boolean;
  /** Refuse requests that did not arrive over HTTPS (production). */
  requireHttps: boolean;
  /** Believe X-Forwarded-Proto (behind a proxy that sets it). */
  trustProxy: boolean;
  /** Origins allowed to call List Events from a browser (`*` for any). */
  corsOrigins: readonly string[];
  readiness: Record<string, ReadinessCheck>;
  optionalReadiness?: Record<string, ReadinessCheck>;
  /** When set, /metrics answers only `Authorization: Bearer <metricsToken>`. */
  metricsToken?: string;
  /**
   * The most requests in progress per class (admission.ts); beyond, a fast 503. Without
   * it, nothing is limited.
   */
  admission?: AdmissionLimits;
  /**
   * The event loop's delay (queue-delay.ts): while it sheds, the classes admission limits
   * get the same fast 503. Without it, only the count refuses.
   */
  shedder?: LoadShedder;
}

/** The REST routes browsers may call from other origins (with a frontend token). */
const CORS_ROUTES: Readonly<Record<string, CorsRoute>> = {
  "/api/events": { methods: ["GET"] },
  // A page names the saved file and resumes from the range headers.
  [EXPORT_PATH]: {
    methods: ["GET"],
    exposeHeaders: ["content-disposition", ...EXPORT_RANGE_HEADERS],
  },
  // EventSource cannot send a bearer token: a page follows with fetch, and resumes by
  // sending Last-Event-ID itself (not a CORS-safelisted header).
  [STREAM_PATH]: { methods: ["GET"], allowHeaders: ["last-event-id"] },
  // The verifiable log: the viewer checks events' proofs from the host page's origin.
  "/api/log/checkpoint": { methods: ["GET"] },
  "/api/log/key": { methods: ["GET"] },
  "/api/log/proof/inclusion": { methods: ["GET"] },
  "/api/log/proof/consistency": { methods: ["GET"] },
};

/**
 * The REST forms of the server-streaming methods (rest-streams.ts), which the proto does
 * not annotate: their procedures answer cross-origin calls when these paths do.
 */
const STREAM_METHOD_PATHS: ReadonlyMap<DescMethod, string> = new Map<DescMethod, string>([
  [EventService.method.exportEvents, EXPORT_PATH],
  [EventService.method.followEvents, STREAM_PATH],
]);

/** Creates the handler of the port. */
export function createEdge(options: EdgeOptions): (req: NodeRequest, res: NodeResponse) => void {
  const { logger, metrics } = options;
  const readFacts = createFactsReader({ trustProxy: options.trustProxy });
  // A database outage is logged when it starts and when this check passes again.
  const reporter = createErrorReporter(
    logger,
    "database" in options.readiness ? { databaseProbe: options.readiness.database } : {},
  );
  // Every path below calls the admitted operations: one limit for every protocol.
  const admission = createAdmission({
    limits: options.admission ?? { ingest: 0, read: 0 },
    ...(options.shedder ? { shedder: options.shedder } : {}),
    onRefused: (admissionClass, reason) => metrics.overloadRefused(admissionClass, reason),
  });
  metrics.readInFlight(() => ({
    ingest: admission.gates.ingest.inFlight,
    read: admission.gates.read.inFlight,
  }));
  const operations = admission.operations(options.operations);
  // Health answers plain HTTP in production too, like the /healthz and /readyz probes.
  const https = createHttpsRule(options.requireHttps, [Health.typeName]);
  const unaryRoutes = connectRoutes(operations);
  const ingestStreams = options.ingestStreams && admission.streams(options.ingestStreams);
  const bidiRoutes = ingestStreams ? bidiStreamRoutes(ingestStreams, reporter) : undefined;
  const { streams } = options;
  const routes = (router: ConnectRouter) => {
    unaryRoutes(router);
    bidiRoutes?.(router);
    if (streams) connectStreamRoutes(streams, reporter)(router);
  };
  const rpcServices = [...options.services, Health, ...REFLECTION_SERVICES];
  // The error details (BadRequest, QuotaFailure, RetryInfo in a google.rpc.Status) are
  // in no service's file: listed too, so that a reflection client can decode them.
  const reflection = reflectionRoutes(
    createReflectionIndex(rpcServices, [file_google_rpc_error_details, file_google_rpc_status]),
  );
  const health = healthRoutes({
    services: rpcServices.map((service) => service.typeName),
    ready: () =>
      Promise.all(Object.values(options.readiness).map((check) => check())).then(() => true),
  });
  const interceptors = [errorBoundary(reporter), https.interceptor];
  const connect = connectNodeAdapter({
    routes: (router) => {
      routes(router);
      reflection(router);
      health(router);
    },
    interceptors,
    acceptCompression: ACCEPT_COMPRESSION,
    fallback: notFound,
    readMaxBytes: MAX_BODY_BYTES,
    contextValues: contextValuesFrom(readFacts),
  });
  const grpcUnary = options.leanGrpc
    ? createGrpcUnary({
        operations,
        routes,
        interceptors,
        readMaxBytes: MAX_BODY_BYTES,
        readFacts,
        reporter,
        onServed: () => metrics.grpcUnaryServed(),
      })
    : undefined;
  const procedures = new Set(
    rpcServices.flatMap((service) =>
      service.methods.map((method) => `/${service.typeName}/${method.name}`),
    ),
  );
  const restRouter = createRestRouter(options.services, operations);
  // The REST ingest paths, refused before their body is read while ingestion is overloaded.
  const ingestPaths = new Set(
    restRouter.routes
      .filter((route) => admissionClass(route.method) === "ingest")
      .map((route) => route.template),
  );
  // The REST path a method is also served at, or "" when it has none here.
  const restPathOf = (method: DescMethod): string =>
    (streams ? STREAM_METHOD_PATHS.get(method) : undefined) ??
    restRouter.routes.find((r) => r.method === method)?.template ??
    "";
  const cors = createCors({
    origins: options.corsOrigins,
    routes: CORS_ROUTES,
    // The same methods over Connect and gRPC-Web, for @connectrpc/connect-web clients:
    // unary ones by their proto route, the server streams by their REST forms.
    procedures: options.services.flatMap((service) =>
      service.methods
        .filter((method) => restPathOf(method) in CORS_ROUTES)
        .map((method) => `/${service.typeName}/${method.name}`),
    ),
  });
  const streamAllow = (path: string) => allowHeader(["GET"], cors.covers(path));
  return createHttpHandler({
    logger,
    metrics,
    reporter,
    readFacts,
    https,
    rest: restRouter,
    ...(streams ? { restStreams: createRestStreams(streams, reporter, streamAllow) } : {}),
    connect,
    strictJson: createStrictJsonGate([AdminService]),
    ...(grpcUnary ? { grpcUnary } : {}),
    procedures,
    readiness: options.readiness,
    ...(options.metricsToken ? { metricsToken: options.metricsToken } : {}),
    ...(options.optionalReadiness ? { optionalReadiness: options.optionalReadiness } : {}),
    cors,
    ingestRefusedNow: (path) => ingestPaths.has(path) && admission.refusesNow("ingest"),
  });
}
