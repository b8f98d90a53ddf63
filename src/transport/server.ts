/**
 * One port for every protocol. Cleartext: a `net.Server` peeks at the first bytes of
 * each connection; the HTTP/2 preface (`PRI * HTTP/2.0`, prior knowledge: gRPC,
 * Connect over h2c) goes to an HTTP/2 server, anything else to an HTTP/1.1 server
 * (REST, Connect, gRPC-Web). With TLS, ALPN chooses `h2` or `http/1.1`.
 *
 * Shutdown stops accepting, lets in-flight requests finish (HTTP/2 sessions get a
 * GOAWAY, idle keep-alive connections are closed), and force-closes what is left after
 * the timeout.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import type { Socket } from "node:net";
import * as net from "node:net";
import type { NodeRequest, NodeResponse } from "./rest.js";

/** TLS material; when given, the port speaks TLS only. */
export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

/** A listening server. */
export interface ListeningServer {
  /** The bound port (useful with port 0). */
  port: number;
  /** Stops accepting, waits for in-flight requests up to `timeoutMs`, then closes all. */
  close(timeoutMs: number): Promise<void>;
}

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const PEEK_TIMEOUT_MS = 10_000;
// Slow senders: a request's headers must arrive within this time.
const HEADERS_TIMEOUT_MS = 15_000;
const REQUEST_TIMEOUT_MS = 60_000;

/** Listens on `host:port` and serves `handler` over every protocol. */
export async function listen(
  handler: (req: NodeRequest, res: NodeResponse) => void,
  options: { host: string; port: number; tls?: TlsFiles },
): Promise<ListeningServer> {
  let inFlight = 0;
  let closing = false;
  const idleWaiters: (() => void)[] = [];
  const tracked = (req: NodeRequest, res: NodeResponse) => {
    inFlight++;
    if (closing && "shouldKeepAlive" in res) res.shouldKeepAlive = false;
    res.once("close", () => {
      inFlight--;
      if (inFlight === 0) for (const wake of idleWaiters.splice(0)) wake();
    });
    handler(req, res);
  };

  const sessions = new Set<http2.ServerHttp2Session>();
  const trackSessions = (server: http2.Http2Server | http2.Http2SecureServer) => {
    server.on("session", (session) => {
      sessions.add(session);
      session.once("close", () => sessions.delete(session));
      if (closing) session.close();
    });
  };

  const unrouted = new Set<Socket>();
  const h1 = http.createServer(
    { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
    tracked,
  );
  let outer: net.Server;
  let h2: http2.Http2Server | http2.Http2SecureServer;

  if (options.tls) {
    h2 = http2.createSecureServer(
      {
        cert: options.tls.cert,
        key: options.tls.key,
        allowHTTP1: true,
        ALPNProtocols: ["h2", "http/1.1"],
      },
      tracked,
    );
    outer = h2;
  } else {
    h2 = http2.createServer({}, tracked);
    // This server never listens itself; the event starts its connection tracking.
    h1.emit("listening");
    outer = net.createServer((socket) => {
      // Until its first bytes decide the protocol, a socket belongs to neither server;
      // shutdown must close it itself.
      unrouted.add(socket);
      socket.once("close", () => unrouted.delete(socket));
      route(socket, h1, h2 as http2.Http2Server, () => unrouted.delete(socket));
    });
  }
  trackSessions(h2);

  await new Promise<void>((resolve, reject) => {
    outer.once("error", reject);
    outer.listen(options.port, options.host, () => {
      outer.off("error", reject);
      resolve();
    });
  });
  const address = outer.address();
  const port = typeof address === "object" && address ? address.port : options.port;

  return {
    port,
    async close(timeoutMs) {
      closing = true;
      const stopped = new Promise<void>((resolve) => outer.close(() => resolve()));
      for (const socket of unrouted) socket.destroy();
      for (const session of sessions) session.close();
      h1.closeIdleConnections();
      if ("closeIdleConnections" in outer && typeof outer.closeIdleConnections === "function") {
        outer.closeIdleConnections();
      }
      const drained =
        inFlight === 0
          ? Promise.resolve()
          : new Promise<void>((resolve) => idleWaiters.push(resolve));
      const timedOut = await Promise.race([
        drained.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), timeoutMs).unref()),
      ]);
      if (timedOut) {
        h1.closeAllConnections();
        for (const session of sessions) session.destroy();
      }
      h1.closeAllConnections();
      h1.close();
      await stopped;
    },
  };
}

/** Hands a cleartext socket to the HTTP/2 or the HTTP/1.1 server by its first bytes. */
function route(socket: Socket, h1: http.Server, h2: http2.Http2Server, onRouted: () => void): void {
  let seen = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), PEEK_TIMEOUT_MS);
  const onError = () => clearTimeout(timer);
  socket.once("error", onError);
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const compared = Math.min(seen.length, PREFACE.length);
    const isHttp2 = seen.subarray(0, compared).equals(PREFACE.subarray(0, compared));
    if (isHttp2 && seen.length < PREFACE.length) return; // wait for the whole preface
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("error", onError);
    onRouted();
    if (isHttp2) {
      // The HTTP/2 session reads what is buffered on the socket before consuming it.
      socket.pause();
      socket.unshift(seen);
      h2.emit("connection", socket);
    } else {
      // The HTTP/1 parser consumes the socket's handle directly and would never see
      // unshifted bytes, so the peeked bytes are handed to its data listener instead.
      h1.emit("connection", socket);
      socket.emit("data", seen);
    }
  };
  socket.on("data", onData);
}
