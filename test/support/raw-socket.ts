/**
 * An HTTP/1.1 client over a raw socket, so that a test or a script can send bytes no
 * ordinary client would: control characters and unicode in headers, invalid UTF-8, lying
 * framing, slow trickles. No test framework here: the long fuzz run (scripts/fuzz-long.ts)
 * uses it outside vitest.
 */
import * as net from "node:net";

/** One request, as bytes on the wire. */
export interface RawRequest {
  method?: string;
  path?: string;
  /** Header lines in order; values are written as given (strings as UTF-8). */
  headers?: [name: string, value: string | Buffer][];
  body?: Buffer | string;
  /** Send the body with `Transfer-Encoding: chunked` (in chunks of `chunkSize`). */
  chunked?: boolean;
  chunkSize?: number;
}

/** A response read off the socket. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the first byte sent to the connection's close. */
  ms: number;
}

/** The request's bytes; adds Host, Connection: close and the body's framing. */
export function requestBytes(request: RawRequest): Buffer {
  const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : request.body;
  const lines: Buffer[] = [
    Buffer.from(`${request.method ?? "POST"} ${request.path ?? "/api/ingest/event"} HTTP/1.1\r\n`),
    Buffer.from("host: 127.0.0.1\r\nconnection: close\r\n"),
  ];
  for (const [name, value] of request.headers ?? []) {
    lines.push(Buffer.from(`${name}: `), Buffer.from(value), Buffer.from("\r\n"));
  }
  if (body === undefined) {
    lines.push(Buffer.from("\r\n"));
  } else if (request.chunked) {
    lines.push(Buffer.from("transfer-encoding: chunked\r\n\r\n"));
    const size = request.chunkSize ?? 64 * 1024;
    for (let at = 0; at < body.length; at += size) {
      const chunk = body.subarray(at, at + size);
      lines.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n"));
    }
    lines.push(Buffer.from("0\r\n\r\n"));
  } else {
    lines.push(Buffer.from(`content-length: ${body.length}\r\n\r\n`), body);
  }
  return Buffer.concat(lines);
}

/**
 * Sends `request` on a new connection and reads the response up to the server's close.
 * Rejects when no complete response came within `timeoutMs` (a hang).
 */
export function rawRequest(
  port: number,
  request: RawRequest | Buffer,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  const bytes = Buffer.isBuffer(request) ? request : requestBytes(request);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    // The server may answer (413) and close before the whole body is sent: EPIPE and
    // ECONNRESET on our side then are expected; what was read decides.
    socket.on("error", () => {});
    socket.once("close", () => {
      clearTimeout(timer);
      const parsed = parseResponse(Buffer.concat(chunks));
      if (parsed) resolve({ ...parsed, ms: performance.now() - started });
      else reject(new Error("the connection closed without a complete response"));
    });
    // No half-close: node's HTTP server drops the request of a client that sends FIN.
    socket.once("connect", () => socket.write(bytes));
  });
}

/**
 * Parses one HTTP/1.1 response (Content-Length framed, or up to the close), after any
 * interim 1xx responses (`Expect: 100-continue`).
 */
export function parseResponse(received: Buffer): Omit<RawResponse, "ms"> | undefined {
  let data = received;
  while (/^HTTP\/1\.[01] 1\d\d /.test(data.subarray(0, 13).toString("latin1"))) {
    const interimEnd = data.indexOf("\r\n\r\n");
    if (interimEnd === -1) return undefined;
    data = data.subarray(interimEnd + 4);
  }
  const end = data.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const [statusLine = "", ...lines] = data.subarray(0, end).toString("latin1").split("\r\n");
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  if (!status) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = data.subarray(end + 4);
  const length = headers["content-length"];
  if (length !== undefined) {
    if (body.length < Number(length)) return undefined;
    body = body.subarray(0, Number(length));
  }
  return { status: Number(status), headers, body: body.toString("utf8") };
}
