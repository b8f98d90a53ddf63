/**
 * Small promise wrappers over node:http, node:https and node:http2 clients, for tests
 * that need to see the connection (reuse, ALPN) or the protocol version.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import * as https from "node:https";
import type { TLSSocket } from "node:tls";

/** How long one request may take before it is aborted. */
export const REQUEST_TIMEOUT_MS = 15_000;

/** An HTTP/1.1 response, with facts about the connection it came on. */
export interface H1Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** True when the request went over a kept-alive connection. */
  reusedSocket: boolean;
  localPort: number | undefined;
  /** The ALPN protocol of a TLS connection (false when none was negotiated). */
  alpnProtocol: string | false | null | undefined;
}

/** Sends one HTTP/1.1 request (https when `secure`) and reads the whole response. */
export function h1Request(
  options: http.RequestOptions | (https.RequestOptions & { ALPNProtocols?: string[] }),
  body?: string | Buffer,
  secure = false,
): Promise<H1Response> {
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(
      { ...options, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", reject);
        response.on("end", () => {
          const socket = response.socket as TLSSocket | null;
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString("utf8"),
            reusedSocket: request.reusedSocket,
            localPort: socket?.localPort,
            alpnProtocol: socket?.alpnProtocol,
          });
        });
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

/** An HTTP/2 response. */
export interface H2Response {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

/** Sends one request on an HTTP/2 session and reads the whole response. */
export function h2Request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: string | Buffer,
): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, {
      endStream: body === undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    let responseHeaders: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (received) => {
      responseHeaders = received;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      resolve({
        status: Number(responseHeaders[":status"] ?? 0),
        headers: responseHeaders,
        body: Buffer.concat(chunks).toString("utf8"),
      });
    });
    if (body !== undefined) stream.end(body);
  });
}

/** Opens an HTTP/2 session (h2c prior knowledge for http:, ALPN h2 for https:). */
export function h2Connect(
  authority: string,
  options: http2.SecureClientSessionOptions = {},
): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(authority, options);
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`HTTP/2 connection to ${authority} timed out`));
    }, REQUEST_TIMEOUT_MS);
    session.once("connect", () => {
      clearTimeout(timer);
      session.off("error", onError);
      resolve(session);
    });
    const onError = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    session.once("error", onError);
  });
}

/** Closes an HTTP/2 session gracefully and waits for it. */
export function h2Close(session: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve) => {
    if (session.closed || session.destroyed) resolve();
    else session.close(() => resolve());
  });
}
