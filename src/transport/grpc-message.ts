/**
 * The `grpc-message` trailer as the gRPC spec defines it (PROTOCOL-HTTP2, Percent-Encoded):
 * only "%" and bytes outside printable ASCII are escaped. connect-es escapes with
 * encodeURIComponent, which the spec allows too, but grpc-js decodes with decodeURI,
 * which leaves reserved characters escaped: a Node client would read
 * "Idempotency key conflict%3A same key ...". Written the spec's way, every client reads
 * the message as sent.
 */
import type { NodeResponse } from "./node-http.js";

const GRPC_MESSAGE = "grpc-message";

/** Percent-encodes `message` for `grpc-message`, escaping only what the spec requires. */
export function encodeGrpcMessage(message: string): string {
  let encoded = "";
  for (const byte of Buffer.from(message, "utf8")) {
    encoded +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

/** True for a gRPC request over HTTP/2 (not gRPC-Web, whose trailers are in the body). */
export function isGrpcRequest(contentType: string | undefined): boolean {
  const type = contentType?.toLowerCase() ?? "";
  return type.startsWith("application/grpc") && !type.startsWith("application/grpc-web");
}

/**
 * Makes the response rewrite the `grpc-message` that connect writes (in the trailers, or
 * in the headers of a trailers-only answer) into the spec's minimal escaping.
 */
export function sendGrpcMessagesPlain(res: NodeResponse): void {
  // Both response classes (HTTP/1.1 and HTTP/2) have these two methods.
  const target = res as unknown as HeaderWriting;
  const addTrailers = target.addTrailers.bind(target);
  const writeHead = target.writeHead.bind(target);
  target.addTrailers = (trailers) => addTrailers(reencoded(trailers));
  target.writeHead = (status, ...rest) =>
    writeHead(status, ...rest.map((arg) => (isHeaderObject(arg) ? reencoded(arg) : arg)));
}

interface HeaderWriting {
  addTrailers(trailers: Record<string, unknown>): void;
  writeHead(status: number, ...rest: unknown[]): unknown;
}

function isHeaderObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function reencoded<T extends object>(headers: T): T {
  const value = (headers as Record<string, unknown>)[GRPC_MESSAGE];
  if (typeof value !== "string") return headers;
  let message: string;
  try {
    message = decodeURIComponent(value);
  } catch {
    return headers;
  }
  return { ...headers, [GRPC_MESSAGE]: encodeGrpcMessage(message) };
}
