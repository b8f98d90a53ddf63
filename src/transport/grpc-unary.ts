/**
 * Unary gRPC calls over HTTP/2, answered without the Connect adapter's streaming
 * pipeline. That pipeline builds async iterables, abort controllers and header objects
 * for every call, and on this project's machine those cost more than the rest of a
 * Create Event (bench/). This path calls the same operations, maps errors with the same
 * function, and writes the same response the adapter would (headers, one enveloped
 * message, `grpc-status` trailers; errors as trailers with connect's `setTrailerStatus`).
 *
 * It takes only the common case, decided from the headers: HTTP/2, POST, a known method,
 * `application/grpc` or `application/grpc+proto`, no deadline, an uncompressed request.
 * Everything else (gRPC-Web, Connect, JSON, deadlines, compression) goes to the adapter
 * untouched, and so does a body that is not exactly one well-formed message: the adapter
 * then reads the bytes already read, then the rest, and answers with its own error.
 *
 * It runs no interceptors: it maps errors itself as the adapter's error boundary does
 * (`rpcError`, connect-routes.ts, reporting to the same error reporter), and
 * `interceptors` serve only the requests it hands over (the HTTPS refusal among them:
 * the edge hands refused requests over). Put new behaviour in the operations, which
 * every protocol shares, not in an interceptor.
 *
 * Uses connect's protocol helpers marked internal; the connect packages are pinned.
 */
import { type DescMethod, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createConnectRouter,
  type Interceptor,
} from "@connectrpc/connect";
import {
  type Compression,
  compressedFlag,
  compressionNegotiate,
  type UniversalHandler,
} from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import {
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { Operation, OperationReply, Operations } from "../api/operation.js";
import { ACCEPT_COMPRESSION } from "./compression.js";
import { contextValuesFrom } from "./connect-context.js";
import { callOperation, rpcError } from "./connect-routes.js";
import type { ErrorReporter } from "./error-reporter.js";
import { headerValue, type NodeRequest, type NodeResponse } from "./node-http.js";
import type { FactsReader } from "./request-facts.js";

/** What the Connect adapter is configured with, so that both paths answer alike. */
export interface GrpcUnaryOptions {
  operations: Operations;
  routes: (router: ConnectRouter) => void;
  /** The adapter's interceptors, for the requests handed over to it. */
  interceptors: Interceptor[];
  readMaxBytes: number;
  /** The edge's facts of a request (the same object the handler read). */
  readFacts: FactsReader;
  reporter: ErrorReporter;
  /** Counts the calls this path answers. */
  onServed?: () => void;
}

/** Serves a request when it can; false leaves it to the Connect adapter. */
export type GrpcUnaryHandler = (req: NodeRequest, res: NodeResponse) => boolean;

// The adapter's default minimum size to compress a response (connect-node-adapter.js).
const COMPRESS_MIN_BYTES = 1024;
const CONTENT_TYPE = /^application\/grpc(?:\+proto)?$/i;
const HEADER_BYTES = 5;

interface Route {
  method: DescMethod;
  operation: Operation;
  connect: UniversalHandler;
}

/** Creates the handler for the given operations. */
export function createGrpcUnary(options: GrpcUnaryOptions): GrpcUnaryHandler {
  const router = createConnectRouter({
    interceptors: options.interceptors,
    readMaxBytes: options.readMaxBytes,
    acceptCompression: ACCEPT_COMPRESSION,
  });
  options.routes(router);
  const contextValues = contextValuesFrom(options.readFacts);
  const routes = new Map<string, Route>();
  for (const handler of router.handlers) {
    const operation = options.operations.get(handler.method);
    if (operation && handler.method.methodKind === "unary") {
      routes.set(handler.requestPath, { method: handler.method, operation, connect: handler });
    }
  }

  /** The adapter's answer, reading `read` first and then whatever is still to come. */
  const toConnect = (req: NodeRequest, res: NodeResponse, route: Route, read: Buffer[]) => {
    const body = (async function* () {
      yield* read;
      for await (const chunk of req) yield chunk as Uint8Array;
    })();
    // The adapter's request, with the body replayed (its own reader is never started).
    // Building it throws on an authority that is not a URL's; the stream is reset then.
    Promise.resolve()
      .then(() =>
        route.connect({
          ...universalRequestFromNodeRequest(req, res, undefined, contextValues(req)),
          body,
        }),
      )
      .then((response) => universalResponseToNodeResponse(response, res))
      .catch((reason: unknown) => {
        options.reporter.report(reason, options.readFacts(req), { procedure: req.url ?? "" });
        res.destroy();
      });
  };

  return (req, res) => {
    const route = routes.get(req.url ?? "");
    if (!route || req.httpVersionMajor !== 2 || req.method !== "POST") return false;
    if (!CONTENT_TYPE.test(headerValue(req, "content-type") ?? "")) return false;
    if (headerValue(req, "grpc-timeout") !== undefined) return false;
    const compression = compressionNegotiate(
      ACCEPT_COMPRESSION,
      headerValue(req, "grpc-encoding") ?? null,
      headerValue(req, "grpc-accept-encoding") ?? null,
      "grpc-accept-encoding",
    );
    if (compression.error || compression.request) return false;

    readEnvelope(req, options.readMaxBytes).then(
      ({ chunks, message }) => {
        let input: Message | undefined;
        try {
          input = message && fromBinary(route.method.input, message);
        } catch {
          input = undefined;
        }
        if (!input) {
          toConnect(req, res, route, chunks);
          return;
        }
        options.onServed?.();
        respond(req, res, route, input, compression.response).catch(() => res.destroy());
      },
      () => res.destroy(),
    );
    return true;
  };

  async function respond(
    req: NodeRequest,
    res: NodeResponse,
    route: Route,
    input: Message,
    compression: Compression | null,
  ): Promise<void> {
    const headers: Record<string, string> = { "content-type": "application/grpc+proto" };
    if (compression) headers["grpc-encoding"] = compression.name;
    const facts = options.readFacts(req);
    let reply: OperationReply;
    try {
      reply = await callOperation(route.operation, route.method, input, facts, (name) =>
        headerValue(req, name),
      );
    } catch (error) {
      writeError(
        res,
        headers,
        rpcError(options.reporter, error, facts, procedureUrl(req, facts.secure)),
      );
      return;
    }
    for (const [name, value] of Object.entries(reply.headers ?? {})) {
      headers[name.toLowerCase()] = value;
    }
    let payload: Uint8Array;
    try {
      payload = toBinary(route.method.output, reply.message);
    } catch (error) {
      // The adapter's serializer fails the same way, after the operation's headers.
      const message = error instanceof Error ? error.message : String(error);
      writeError(res, headers, new ConnectError(`serialize binary: ${message}`, Code.Internal));
      return;
    }
    let flags = 0;
    if (compression && payload.byteLength >= COMPRESS_MIN_BYTES) {
      payload = await compression.compress(payload);
      flags = compressedFlag;
    }
    const envelope = Buffer.allocUnsafe(HEADER_BYTES + payload.byteLength);
    envelope[0] = flags;
    envelope.writeUInt32BE(payload.byteLength, 1);
    envelope.set(payload, HEADER_BYTES);
    res.writeHead(200, sorted(headers));
    res.write(envelope);
    res.addTrailers({ "grpc-status": "0" });
    res.end();
  }
}

/** An error as the adapter sends it: the headers, then its status in the trailers. */
function writeError(res: NodeResponse, headers: Record<string, string>, error: ConnectError) {
  const trailer = new Headers();
  setTrailerStatus(trailer, error);
  res.writeHead(200, sorted(headers));
  res.addTrailers(Object.fromEntries(trailer));
  res.end();
}

/** The procedure's URL for the error log (https when the request's facts say it is secure). */
function procedureUrl(req: NodeRequest, secure: boolean): string {
  const authority = "authority" in req ? req.authority : req.headers.host;
  return `${secure ? "https" : "http"}://${authority ?? ""}${req.url ?? ""}`;
}

/** Header names in the order connect writes them (a Headers object iterates sorted). */
function sorted(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Reads the request body: `message` is the one uncompressed message it holds, or
 * undefined when it holds anything else (then the caller hands `chunks`, everything read
 * so far, to the adapter). As the adapter does, it stops reading as soon as the envelope
 * declares more than `maxBytes` or a compressed message.
 */
function readEnvelope(
  req: NodeRequest,
  maxBytes: number,
): Promise<{ chunks: Buffer[]; message: Uint8Array | undefined }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let declared: number | undefined;
    const finish = (complete: boolean) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", reject);
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const wellFormed =
        complete &&
        body.length >= HEADER_BYTES &&
        body[0] === 0 &&
        body.readUInt32BE(1) === body.length - HEADER_BYTES;
      resolve({ chunks, message: wellFormed ? body.subarray(HEADER_BYTES) : undefined });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (declared === undefined && length >= HEADER_BYTES) {
        const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
        declared = head.readUInt32BE(1);
        if (head[0] !== 0 || declared > maxBytes) {
          req.pause();
          finish(false);
          return;
        }
      }
      if (length > HEADER_BYTES + maxBytes) {
        req.pause();
        finish(false);
      }
    };
    const onEnd = () => finish(true);
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", reject);
  });
}
