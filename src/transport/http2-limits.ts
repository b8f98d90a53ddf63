/**
 * HTTP/2's counterparts of HTTP/1.1's slow-sender limits (node applies those to HTTP/1.1
 * only). Invariants: a session with no open stream lives at most the idle timeout (a
 * client that sent only the preface, whose headers never complete, or that keeps an
 * idle session); a stream's request arrives whole within the request timeout or gets
 * 408 and is cancelled; a session carries at most MAX_STREAMS_PER_CONNECTION streams at
 * once (advertised in SETTINGS; nghttp2 ends the session of a client that opens more).
 */
import * as http2 from "node:http2";
import type { NodeResponse } from "./node-http.js";

/**
 * An HTTP/2 session with no open stream is closed after this long (HTTP/1.1's idle
 * keep-alive connections last 5 s; HTTP/2 clients such as gRPC channels expect to reuse
 * a session longer, and a GOAWAY lets them reconnect without losing a request).
 */
export const HTTP2_IDLE_TIMEOUT_MS = 15_000;
/** Concurrent streams per HTTP/2 session (nginx allows 128; RFC 9113 suggests at least 100). */
export const MAX_STREAMS_PER_CONNECTION = 100;
// After the GOAWAY of an idle session, how long the peer has to close it itself.
const GOAWAY_GRACE_MS = 1_000;

/**
 * Closes an HTTP/2 session (GOAWAY) once it has had no open stream for `idleMs`: from
 * its start and after its last stream ends. A peer that does not close after the
 * GOAWAY is cut off.
 */
export function closeWhenIdle(session: http2.ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      session.close();
      setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
    }, idleMs);
    timer.unref();
  };
  session.on("stream", (stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      open--;
      if (open === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

/**
 * A stream whose request has not arrived whole (END_STREAM) within `timeoutMs` gets 408
 * `Request timeout` when nothing was answered yet, and is cancelled, so a client
 * trickling a body holds no stream.
 */
export function limitStreamRequest(
  req: http2.Http2ServerRequest,
  res: NodeResponse,
  timeoutMs: number,
): void {
  const { stream } = req;
  if (stream.destroyed || stream.state.remoteClose) return;
  const cancel = () => {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
  };
  const timer = setTimeout(() => {
    if (stream.destroyed || stream.state.remoteClose) return;
    if (res.headersSent) {
      cancel();
      return;
    }
    const body = JSON.stringify({ error: "Request timeout" });
    res.writeHead(408, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body, cancel);
  }, timeoutMs);
  timer.unref();
  stream.once("close", () => clearTimeout(timer));
}
