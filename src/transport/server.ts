/**
 * One port for every protocol. Cleartext: a `net.Server` peeks at the first bytes of
 * each connection; the HTTP/2 preface (`PRI * HTTP/2.0`, prior knowledge: gRPC,
 * Connect over h2c) goes to an HTTP/2 server, anything else to an HTTP/1.1 server
 * (REST, Connect, gRPC-Web). With TLS, ALPN chooses `h2` or `http/1.1`.
 *
 * Shutdown stops accepting, lets in-flight requests finish (HTTP/2 sessions get a
 * GOAWAY, idle keep-alive connections are closed), and force-closes what is left after
 * the timeout.
 *
 * The port is accepted from several handles of the one listening socket
 * (accept-handles.ts): node takes one connection per handle per turn of its event loop.
 *
 * Limits, so that no client holds the process's sockets, memory or file descriptors:
 * at most `maxConnections` connections of any protocol (more are closed on accept);
 * HTTP/1.1 requests get 408 after 15 s of headers or 60 s in all (node's own timers);
 * HTTP/2 gets the same deadlines in its own terms (http2-limits.ts).
 */
import cluster from "node:cluster";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as http2 from "node:http2";
import type { Socket } from "node:net";
import * as net from "node:net";
import type { TLSSocket } from "node:tls";
import { duplicateListener } from "./accept-handles.js";
import { bodyLimitForUrl } from "./body-limits.js";
import {
  closeWhenIdle,
  HTTP2_IDLE_TIMEOUT_MS,
  limitStreamRequest,
  MAX_STREAMS_PER_CONNECTION,
} from "./http2-limits.js";
import type { NodeRequest, NodeResponse } from "./node-http.js";

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
export const HEADERS_TIMEOUT_MS = 15_000;
// ...and the whole request, body included, within this one.
export const REQUEST_TIMEOUT_MS = 60_000;
// How often node checks the two above (its default, 30 s, would let a slow sender hold
// a connection for up to 45 s instead of 15).
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;
// Connections of every protocol at once; beyond it, new ones are closed on accept. Lower
// when the process may open fewer files (connectionCap).
export const MAX_CONNECTIONS = 10_000;
// File descriptors kept for what is not a client connection: the database's and Redis's
// connections, PGlite's files, the worker thread, logs.
const RESERVED_DESCRIPTORS = 128;
// Connections the kernel may complete before the process accepts them. Node's default
// (511) overflows when thousands of clients connect in one burst (measured: 34,000 SYNs
// dropped when 4,300 connected at once, each retried after 1 s, 3 s, 7 s...); the kernel
// caps it at net.core.somaxconn (4,096 since Linux 5.4).
export const LISTEN_BACKLOG = 4_096;
// Handles accepting from the listening socket besides the first (accept-handles.ts): under
// load each turn of the event loop then takes this many more new connections.
export const EXTRA_ACCEPT_HANDLES = 63;
// How long an HTTP/1.1 connection closed after a response still reads (and drops) what
// the client sends (a lingering close): see `lingerWhenClosing`.
export const LINGER_MS = 2_000;

/** Options of `listen`. */
export interface ListenOptions {
  host: string;
  port: number;
  tls?: TlsFiles;
  /**
   * Slow-sender limits: HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS by default (the request
   * timeout applies to HTTP/2 streams too).
   */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** HTTP/2 sessions without an open stream; HTTP2_IDLE_TIMEOUT_MS by default. */
  http2IdleTimeoutMs?: number;
  /** MAX_STREAMS_PER_CONNECTION by default. */
  maxStreamsPerConnection?: number;
  /** connectionCap(openFilesLimit(), accept handles) by default. */
  maxConnections?: number;
  /** LISTEN_BACKLOG by default. */
  backlog?: number;
  /**
   * EXTRA_ACCEPT_HANDLES by default (at most a sixteenth of the open-files limit); 0: accept
   * from the listening handle alone.
   */
  extraAcceptHandles?: number;
  /**
   * Told how many handles accept from the port, or why there are no extra ones: the port
   * is then served from its one handle.
   */
  onAcceptHandles?: (outcome: { handles: number } | { error: Error }) => void;
  /**
   * Paths of streams whose request is open-ended by design (a client-streaming RPC such
   * as IngestEvents): not held to the request timeout, which would cut a busy stream. A
   * session without any traffic is still closed after the request timeout, and such a
   * stream holds one of the session's streams only with valid credentials (refused at open).
   */
  openEndedStreams?: ReadonlySet<string>;
}

type Handler = (req: NodeRequest, res: NodeResponse) => void;

/** The servers behind the port: the listening one, and those it hands connections to. */
interface Servers {
  outer: net.Server;
  /** The other handles accepting from the listening socket (accept-handles.ts). */
  extra: net.Server[];
  /** Takes an accepted connection: counted against the cap, then routed. */
  accept: (socket: Socket) => void;
  h1: http.Server;
  h2: http2.Http2Server | http2.Http2SecureServer;
  /** Cleartext sockets whose first bytes have not yet chosen a protocol. */
  unrouted: Set<Socket>;
  /** Every connection accepted, by any handle, until it closes. */
  sockets: Set<Socket>;
  /** HTTP/1.1 connections over TLS (the TLS server's, allowHTTP1). */
  tlsHttp1: Set<Socket>;
}

/**
 * The process's limit of open files (the soft RLIMIT_NOFILE, which node raises to the hard
 * limit as it starts), from /proc; undefined where that cannot be read or is unlimited.
 */
export function openFilesLimit(limits?: string): number | undefined {
  let text = limits;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/self/limits", "utf8");
    } catch {
      return undefined;
    }
  }
  const soft = /^Max open files\s+(\d+)/m.exec(text)?.[1];
  return soft === undefined ? undefined : Number(soft);
}

/**
 * How many connections the port takes at once: MAX_CONNECTIONS, or fewer when the
 * process may not open that many files and still reach its database (with a cap above
 * the limit, idle connections exhausted the descriptors and every request, health
 * checks included, got an empty reply).
 */
export function connectionCap(filesLimit: number | undefined, acceptHandles = 1): number {
  if (filesLimit === undefined) return MAX_CONNECTIONS;
  const free = filesLimit - RESERVED_DESCRIPTORS - acceptHandles;
  return Math.max(16, Math.min(MAX_CONNECTIONS, free));
}

/**
 * How many extra accept handles the port gets: as asked, but each holds a descriptor, so
 * at most a sixteenth of the process's limit of open files.
 */
export function extraAcceptHandles(asked: number, filesLimit: number | undefined): number {
  if (filesLimit === undefined) return asked;
  return Math.max(0, Math.min(asked, Math.floor(filesLimit / 16) - 1));
}

/** Listens on `host:port` and serves `handler` over every protocol. */
export async function listen(handler: Handler, options: ListenOptions): Promise<ListeningServer> {
  const requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const openEnded = options.openEndedStreams ?? new Set<string>();
  const requests = trackRequests((req, res) => {
    if (req instanceof http2.Http2ServerRequest && !openEnded.has(pathOf(req.url))) {
      limitStreamRequest(req, res, requestTimeoutMs);
    }
    handler(req, res);
  });
  const filesLimit = openFilesLimit();
  // In a cluster's worker (WORKERS > 1) the primary accepts and hands connections over.
  const extraHandles = cluster.isWorker
    ? 0
    : extraAcceptHandles(options.extraAcceptHandles ?? EXTRA_ACCEPT_HANDLES, filesLimit);
  const servers = createServers(
    requests.serve,
    options,
    options.maxConnections ?? connectionCap(filesLimit, 1 + extraHandles),
  );
  const sessions = trackSessions(servers.h2, requests.isClosing);
  // Nothing moving on a session at all for this long. A response its client stopped reading
  // gets up to twice this: Node first checks that its pending writes made no progress.
  servers.h2.setTimeout(requestTimeoutMs);
  const idleMs = options.http2IdleTimeoutMs ?? HTTP2_IDLE_TIMEOUT_MS;
  servers.h2.on("session", (session) => closeWhenIdle(session, idleMs));
  const { outer } = servers;
  await new Promise<void>((resolve, reject) => {
    outer.once("error", reject);
    const backlog = options.backlog ?? LISTEN_BACKLOG;
    outer.listen({ port: options.port, host: options.host, backlog }, () => {
      outer.off("error", reject);
      resolve();
    });
  });
  await addAcceptHandles(servers, extraHandles, options);
  const address = outer.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    close: (timeoutMs) => shutDown(servers, sessions, requests, timeoutMs),
  };
}

/**
 * Duplicates the listening socket's handle (a child process is started for it, ~60 ms);
 * when that fails, the port is served from its one handle.
 */
async function addAcceptHandles(
  servers: Servers,
  count: number,
  options: ListenOptions,
): Promise<void> {
  if (count <= 0) return;
  const backlog = options.backlog ?? LISTEN_BACKLOG;
  try {
    const handles = await duplicateListener(servers.outer, count, backlog, servers.accept);
    servers.extra.push(...handles);
    options.onAcceptHandles?.({ handles: handles.length + 1 });
  } catch (error) {
    options.onAcceptHandles?.({ error: error instanceof Error ? error : new Error(String(error)) });
  }
}

/** The path of a request target, without its query. */
function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

/** Requests in flight, counted so that shutdown can wait for the last. */
interface RequestTracker {
  /** Serves a request through the handler, counting it until its response closes. */
  serve: Handler;
  isClosing(): boolean;
  /** Marks the server closing (responses not yet started do not keep their connection alive). */
  close(): void;
  /** Resolves once no request is in flight. */
  drained(): Promise<void>;
}

function trackRequests(handler: Handler): RequestTracker {
  const inFlight = new Set<NodeResponse>();
  let closing = false;
  const idleWaiters: (() => void)[] = [];
  // An HTTP/1.1 response not yet started when closing begins says `Connection: close`, so
  // that its client does not send the next request on a connection about to be closed
  // (which it would see reset, not knowing whether its event was stored).
  const closeAfter = (res: NodeResponse) => {
    if ("shouldKeepAlive" in res && !res.headersSent) res.shouldKeepAlive = false;
  };
  return {
    serve(req, res) {
      inFlight.add(res);
      if (closing) closeAfter(res);
      res.once("close", () => {
        inFlight.delete(res);
        if (inFlight.size === 0) for (const wake of idleWaiters.splice(0)) wake();
      });
      handler(req, res);
    },
    isClosing: () => closing,
    close() {
      closing = true;
      for (const res of inFlight) closeAfter(res);
    },
    drained: () =>
      inFlight.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => idleWaiters.push(resolve)),
  };
}

/** The HTTP/2 sessions open on `h2`; one opened while closing is closed at once. */
function trackSessions(
  h2: http2.Http2Server | http2.Http2SecureServer,
  isClosing: () => boolean,
): Set<http2.ServerHttp2Session> {
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (isClosing()) session.close();
  });
  return sessions;
}

/**
 * The HTTP/1.1 and HTTP/2 servers serving `serve`, and the listening server: a plain TCP
 * server that hands each connection, up to `maxConnections` at once, to the TLS server
 * (ALPN chooses) or routes it by its first bytes.
 */
function createServers(serve: Handler, options: ListenOptions, maxConnections: number): Servers {
  // The request whose body is being read on each HTTP/1.1 connection: refused by the
  // request timeout, it is answered with its own request id (a request after it, or one
  // node could not parse, with a new one).
  const reading = new WeakMap<Socket, NodeResponse>();
  const serveHttp1: Handler = (req, res) => {
    reading.set(req.socket, res);
    serve(req, res);
  };
  /**
   * `Expect: 100-continue`: a body declared over its limit (1 MB, a batch 5 MB) is not asked for, so the
   * client reads the handler's 413 instead of starting its upload; others get 100.
   */
  const continueUnlessTooLarge = (req: NodeRequest, res: NodeResponse) => {
    if (!(Number(req.headers["content-length"]) > bodyLimitForUrl(req.url))) res.writeContinue();
    serveHttp1(req, res);
  };
  const unrouted = new Set<Socket>();
  const tlsHttp1 = new Set<Socket>();
  const h1 = http.createServer(
    {
      headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      requestTimeout: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    serveHttp1,
  );
  h1.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    const pending = reading.get(socket);
    const requestId =
      pending && !pending.req.complete && !pending.headersSent
        ? pending.getHeader("x-request-id")
        : undefined;
    answerClientError(error, socket, typeof requestId === "string" ? requestId : randomUUID());
  });
  h1.on("connection", lingerWhenClosing);
  // An Expect other than 100-continue is ignored (RFC 9110 allows it) and the request
  // served as usual, rather than node's bodiless 417.
  h1.on("checkExpectation", serveHttp1);
  h1.on("checkContinue", continueUnlessTooLarge);
  let dispatch: (socket: Socket) => void;
  let h2: http2.Http2Server | http2.Http2SecureServer;
  const settings: http2.Settings = {
    maxConcurrentStreams: options.maxStreamsPerConnection ?? MAX_STREAMS_PER_CONNECTION,
  };

  if (options.tls) {
    h2 = http2.createSecureServer(
      {
        cert: options.tls.cert,
        key: options.tls.key,
        allowHTTP1: true,
        ALPNProtocols: ["h2", "http/1.1"],
        settings,
      },
      serve,
    );
    // HTTP/1.1 over TLS is served by this server (allowHTTP1), on sockets ALPN gave it.
    h2.on("secureConnection", (socket: TLSSocket) => {
      if (socket.alpnProtocol === "h2") return;
      lingerWhenClosing(socket);
      tlsHttp1.add(socket);
      socket.once("close", () => tlsHttp1.delete(socket));
    });
    // It never listens itself: the accept handles hand it their connections. The event
    // starts its HTTP/1.1 connection tracking, as below.
    const secure = h2;
    secure.emit("listening");
    dispatch = (socket) => secure.emit("connection", socket);
  } else {
    const cleartext = http2.createServer({ settings }, serve);
    h2 = cleartext;
    // This server never listens itself; the event starts its connection tracking.
    h1.emit("listening");
    dispatch = (socket) => {
      // Until its first bytes decide the protocol, a socket belongs to neither server;
      // shutdown must close it itself.
      unrouted.add(socket);
      socket.once("close", () => unrouted.delete(socket));
      route(socket, h1, cleartext, () => unrouted.delete(socket));
    };
  }
  h2.on("checkContinue", continueUnlessTooLarge);
  h2.on("checkExpectation", serve);
  // Connections of every handle and protocol, counted together.
  const sockets = new Set<Socket>();
  const accept = (socket: Socket) => {
    if (sockets.size >= maxConnections) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    dispatch(socket);
  };
  const outer = net.createServer(accept);
  return { outer, extra: [], accept, h1, h2, unrouted, sockets, tlsHttp1 };
}

/**
 * Stops accepting, lets in-flight requests finish (HTTP/2 sessions get a GOAWAY, idle
 * keep-alive connections are closed), and force-closes what is left after `timeoutMs`.
 */
async function shutDown(
  servers: Servers,
  sessions: Set<http2.ServerHttp2Session>,
  requests: RequestTracker,
  timeoutMs: number,
): Promise<void> {
  const { outer, h1, h2, unrouted } = servers;
  requests.close();
  for (const handle of servers.extra) handle.close();
  // Stops accepting; the connections it took are among `sockets`, waited for below.
  outer.close();
  for (const socket of unrouted) socket.destroy();
  for (const session of sessions) session.close();
  h1.closeIdleConnections();
  // HTTP/1.1 over TLS is the TLS server's (allowHTTP1).
  if ("closeIdleConnections" in h2 && typeof h2.closeIdleConnections === "function") {
    h2.closeIdleConnections();
  }
  const timedOut = await Promise.race([
    requests.drained().then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(true), timeoutMs).unref()),
  ]);
  if (timedOut) {
    for (const session of sessions) session.destroy();
  }
  h1.closeAllConnections();
  h1.close();
  // No request is left in flight (or the time is up): HTTP/1.1 over TLS has only idle
  // connections left, and after the timeout nothing is waited for.
  for (const socket of timedOut ? servers.sockets : servers.tlsHttp1) socket.destroy();
  await allClosed(servers.sockets);
}

/** Resolves once every socket of `sockets` has closed (it deletes them as they close). */
function allClosed(sockets: Set<Socket>): Promise<void> {
  if (sockets.size === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => {
      if (sockets.size === 0) resolve();
    };
    for (const socket of sockets) socket.once("close", () => setImmediate(check));
  });
}

const CLIENT_ERRORS: Record<string, [status: number, message: string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request timeout"],
  HPE_HEADER_OVERFLOW: [431, "Request header fields too large"],
};

/**
 * Requests that node refuses before any handler runs (malformed, headers too large,
 * too slow) get a JSON error body like every other error, instead of node's empty one,
 * with `requestId` as every answer has one. Like node's default, only while nothing has
 * been written on the connection.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket, requestId: string): void {
  if (error.code === "ECONNRESET" || !socket.writable || socket.bytesWritten > 0) {
    socket.destroy();
    return;
  }
  const [status, message] = CLIENT_ERRORS[error.code ?? ""] ?? [400, "Malformed HTTP request"];
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
      "content-type: application/json; charset=utf-8\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\n` +
      `connection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/**
 * A lingering close, as nginx's `lingering_close`: when node closes an HTTP/1.1
 * connection after a response (`Connection: close`, such as a 413 sent before the body was
 * read), it destroys the socket as soon as the response is written. A client still sending
 * its body then gets a reset, and a reset makes its kernel drop the response it has not
 * read yet: the client sees "connection reset" instead of the 413 (4 of 100,000 requests in
 * the long fuzz run, on a loaded machine). Instead the connection is half-closed and what
 * still arrives is read and dropped, for `LINGER_MS` at most or until the client closes.
 */
function lingerWhenClosing(socket: Socket): void {
  socket.destroySoon = () => {
    socket.end();
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
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
