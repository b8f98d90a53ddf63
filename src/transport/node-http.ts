/**
 * The node request and response types of both servers (HTTP/1.1 and HTTP/2) and the two
 * helpers every part of the edge uses on them. A leaf of transport/: it imports nothing
 * of the service, so that the edge's modules can share it without importing each other.
 */
import type { connectNodeAdapter } from "@connectrpc/connect-node";

/** A request of the HTTP/1.1 or the HTTP/2 server. */
export type NodeRequest = Parameters<NodeHandler>[0];
/** A response of the HTTP/1.1 or the HTTP/2 server. */
export type NodeResponse = Parameters<NodeHandler>[1];
// connect-node's handler type: the request and response types it accepts are ours.
type NodeHandler = ReturnType<typeof connectNodeAdapter>;

/** The first value of a request header (node gives repeated headers as an array). */
export function headerValue(req: NodeRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Writes a text/plain response. */
export function sendText(
  res: NodeResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...headers,
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** The headers of a JSON response whose encoded body is `bytes` long. */
export function jsonHeaders(
  bytes: number,
  headers: Record<string, string> = {},
): Record<string, string> {
  return {
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": String(bytes),
  };
}

/** Writes a JSON response. */
export function sendJson(
  res: NodeResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, jsonHeaders(Buffer.byteLength(text), headers));
  res.end(text);
}
