/**
 * AdminService's Connect JSON requests are read strictly (api/strict-json.ts) before the
 * adapter decodes them: the adapter sees only the parsed object, where a member given
 * twice, a field under both its names or a null has already been resolved silently. The
 * body is read here (bounded as the adapter bounds it), checked, and handed on unchanged
 * for the adapter to read: a refusal is the Connect error InvalidArgument (HTTP 400),
 * before anything is decoded or done.
 *
 * Binary requests (Connect, gRPC, gRPC-Web) and gRPC-Web JSON are the adapter's alone:
 * protobuf binary has one field number per field, so it cannot name one field twice over.
 */
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { strictJsonProblem } from "../api/strict-json.js";
import { rpcReadMaxBytes } from "./body-limits.js";
import { headerValue, type NodeRequest, type NodeResponse } from "./node-http.js";

/** The gate: true when it took the request (it calls `next` once the body is checked). */
export type StrictJsonGate = (req: NodeRequest, res: NodeResponse, next: () => void) => boolean;

/** A gate for the Connect JSON requests of `services`. */
export function createStrictJsonGate(services: readonly DescService[]): StrictJsonGate {
  const methods = new Map<string, DescMethod>(
    services.flatMap((service) =>
      service.methods.map((method) => [`/${service.typeName}/${method.name}`, method] as const),
    ),
  );
  return (req, res, next) => {
    const path = (req.url ?? "").split("?", 1)[0] ?? "";
    const method = methods.get(path);
    if (method === undefined || req.method !== "POST") return false;
    const type = (headerValue(req, "content-type") ?? "").split(";", 1)[0]?.trim().toLowerCase();
    if (type !== "application/json") return false;
    const encoding = (headerValue(req, "content-encoding") ?? "identity").trim().toLowerCase();
    const decode = DECODERS[encoding];
    // An encoding the adapter does not take: it refuses the request itself.
    if (decode === undefined) return false;
    const limit = rpcReadMaxBytes(method);
    // Declared over the limit: the adapter refuses it without reading it.
    if (Number(headerValue(req, "content-length") ?? 0) > limit) return false;
    readBounded(req, limit).then(
      (body) => {
        if (body === undefined) {
          // Over the limit: the adapter's own refusal, without reading the rest.
          return refuse(
            res,
            new ConnectError(
              `message size is larger than configured readMaxBytes ${limit}`,
              Code.ResourceExhausted,
            ),
          );
        }
        let text: string | undefined;
        try {
          text = new TextDecoder("utf-8", { fatal: true }).decode(decode(body, limit));
        } catch {
          text = undefined; // Undecodable: the adapter refuses it with its own message.
        }
        const problem = text === undefined ? undefined : strictJsonProblem(text, method.input);
        if (problem !== undefined) {
          return refuse(res, new ConnectError(problem, Code.InvalidArgument));
        }
        // The adapter reads the request as an async iterable: it gets the body as sent.
        Object.defineProperty(req, Symbol.asyncIterator, {
          configurable: true,
          value: async function* () {
            yield body;
          },
        });
        next();
      },
      () => res.destroy(),
    );
    return true;
  };
}

const DECODERS: Readonly<Record<string, (body: Buffer, limit: number) => Buffer>> = {
  identity: (body) => body,
  gzip: (body, limit) => gunzipSync(body, { maxOutputLength: limit }),
  br: (body, limit) => brotliDecompressSync(body, { maxOutputLength: limit }),
};

/** The whole body, or undefined once it passes `limit` bytes (the rest is not read). */
async function readBounded(req: NodeRequest, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, length);
}

/** Answers a Connect unary error (the protocol's JSON error body and HTTP status). */
function refuse(res: NodeResponse, error: ConnectError): void {
  const status = error.code === Code.InvalidArgument ? 400 : 429;
  const body = errorToJsonBytes(error, {});
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(body.byteLength),
  });
  res.end(body);
}
