/**
 * AdminService's JSON requests are read strictly (api/strict-json.ts): the adapter sees
 * only the decoded message, where a member given twice, a field under both its names or a
 * null has already been resolved silently. So the body is read here first (bounded as the
 * adapter bounds it), checked, and handed on unchanged for the adapter to read; what the
 * check found goes with the request's facts (`bodyProblem`), and the operation refuses it
 * once the admin token is checked (api/admin-operations.ts), as InvalidArgument in the
 * request's own protocol. Every JSON form is read: Connect (`application/json`, the whole
 * body) and gRPC or gRPC-Web (`+json`, length-prefixed messages).
 *
 * Invariant: whatever the body holds, the gate never throws; a body it cannot read as
 * JSON text goes on to the adapter, which refuses it, unless the adapter would read it
 * leniently (invalid UTF-8), which is a problem of its own.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { strictJsonProblem } from "../api/strict-json.js";
import { rpcReadMaxBytes } from "./body-limits.js";
import { ACCEPT_COMPRESSION } from "./compression.js";
import { headerValue, type NodeRequest } from "./node-http.js";

/**
 * The gate: true when it took the request; it then calls `next` once the body is read,
 * with the problem it found, if any.
 */
export type StrictJsonGate = (req: NodeRequest, next: (problem?: string) => void) => boolean;

/** A gate for the JSON requests of `services`. */
export function createStrictJsonGate(services: readonly DescService[]): StrictJsonGate {
  const methods = new Map<string, DescMethod>(
    services.flatMap((service) =>
      service.methods.map((method) => [`/${service.typeName}/${method.name}`, method] as const),
    ),
  );
  return (req, next) => {
    const path = (req.url ?? "").split("?", 1)[0] ?? "";
    const method = methods.get(path);
    if (method === undefined || req.method !== "POST") return false;
    const type = (headerValue(req, "content-type") ?? "").split(";", 1)[0]?.trim().toLowerCase();
    const framed = type === "application/grpc+json" || type === "application/grpc-web+json";
    if (type !== "application/json" && !framed) return false;
    // Connect compresses the body, gRPC each message.
    const encodingHeader = framed ? "grpc-encoding" : "content-encoding";
    const encoding = (headerValue(req, encodingHeader) ?? "identity").trim().toLowerCase();
    const decode = decoderOf(encoding);
    const limit = rpcReadMaxBytes(method);
    // An encoding the adapter does not take, or a body declared over the limit: the
    // adapter refuses it without reading it.
    if (decode === undefined || Number(headerValue(req, "content-length") ?? 0) > limit) {
      return false;
    }
    const bound = limit + (framed ? FRAME_HEADER : 0);
    readBounded(req, bound)
      .then(async (body) => {
        // Over the limit, the adapter refuses what it is handed with its own message.
        const problem =
          body.length > bound ? undefined : await bodyProblem(body, framed, decode, limit, method);
        // The adapter reads the request as an async iterable: it gets the body as sent.
        Object.defineProperty(req, Symbol.asyncIterator, {
          configurable: true,
          value: async function* () {
            yield body;
          },
        });
        next(problem);
      })
      .catch(() => req.destroy());
    return true;
  };
}

/** Decompresses a body or message, bounded; as the adapter does. */
type Decode = (bytes: Uint8Array, limit: number) => Promise<Uint8Array>;

/** The decoder of an encoding the adapter takes (ACCEPT_COMPRESSION); else undefined. */
function decoderOf(encoding: string): Decode | undefined {
  if (encoding === "identity") return async (bytes) => bytes;
  return ACCEPT_COMPRESSION.find((compression) => compression.name === encoding)?.decompress;
}

/** What the check finds in a body; undefined when nothing, or when the adapter refuses it. */
async function bodyProblem(
  body: Buffer,
  framed: boolean,
  decode: Decode,
  limit: number,
  method: DescMethod,
): Promise<string | undefined> {
  // Connect: the whole body, in the request's encoding (identity included).
  const messages = framed ? framedMessages(body) : [{ compressed: true, bytes: body }];
  for (const { compressed, bytes } of messages ?? []) {
    let text: Uint8Array;
    try {
      text = compressed ? await decode(bytes, limit) : bytes;
    } catch {
      return undefined; // Not decompressible: the adapter refuses it with its own message.
    }
    let problem: string | undefined;
    try {
      problem = problemOf(text, method);
    } catch {
      problem = "the request could not be read as JSON";
    }
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function problemOf(bytes: Uint8Array, method: DescMethod): string | undefined {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // The adapter would read it with U+FFFD in place of the bad bytes.
    return "the request is not valid UTF-8";
  }
  return strictJsonProblem(text, method.input);
}

const FRAME_HEADER = 5;

/**
 * The messages of a gRPC or gRPC-Web body (flags byte, 32-bit length, message; flag 1:
 * compressed), up to the first trailer frame (gRPC-Web, flag 0x80); undefined when the
 * framing is broken (the adapter refuses it).
 */
function framedMessages(body: Buffer): { compressed: boolean; bytes: Buffer }[] | undefined {
  const messages: { compressed: boolean; bytes: Buffer }[] = [];
  for (let at = 0; at < body.length; ) {
    if (body.length - at < FRAME_HEADER) return undefined;
    const flags = body.readUInt8(at);
    const length = body.readUInt32BE(at + 1);
    const end = at + FRAME_HEADER + length;
    if (end > body.length) return undefined;
    if ((flags & 0x80) !== 0) break;
    messages.push({ compressed: (flags & 1) !== 0, bytes: body.subarray(at + FRAME_HEADER, end) });
    at = end;
  }
  return messages;
}

/** The whole body, or its first bytes once they pass `limit` (the rest is not read). */
async function readBounded(req: NodeRequest, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    length += chunk.length;
    if (length > limit) break;
  }
  return Buffer.concat(chunks, length);
}
