/**
 * A cheap HTTP/1.1 client for open-loop load generation (bench/overload.ts): node's
 * `http.request` and `Agent` cost too much CPU per request to offer three times the
 * service's capacity from the same two cores, so the generator's own queue was measured
 * instead of the service's.
 *
 * Up to `maxSockets` keep-alive TCP connections, opened when needed (and again when the
 * server closes one), each carrying one request at a time (no pipelining: as many
 * independent clients). A request is a pre-encoded Buffer written with one `write`; the
 * answer is read by a minimal incremental parser (status line, the framing headers,
 * Retry-After), its body skipped. When every connection is busy, requests wait in a FIFO
 * here; their latency counts from their scheduled time all the same, and `waitMs` says how
 * long they waited before being written. One coarse sweep a second times out requests
 * (sent or still waiting) past `timeoutMs` from their scheduled time, and closes
 * connections idle for longer than the server keeps them (its `Keep-Alive: timeout=` less
 * a second), so that a request is never written on a connection the server is closing.
 */
import { connect, type Socket } from "node:net";

/** The outcome of one request. */
export interface RawOutcome {
  /**
   * HTTP status; 0 when no complete response arrived (the connection closed, was reset or
   * carried what is not HTTP/1.1); -1 for a timeout.
   */
  status: number;
  /** From the scheduled time to the response's last byte (or the failure). */
  ms: number;
  retryAfter?: string;
  /** From the scheduled time to the request's write on a connection; absent if never written. */
  waitMs?: number;
  /**
   * From the scheduled time to `send`: how late the caller's loop was. The rest of `waitMs`
   * is the wait for a free connection (all `maxSockets` busy).
   */
  lateMs: number;
  /** From the scheduled time to the response's first byte; absent if none arrived. */
  firstByteMs?: number;
  /** The connection it was written on; absent if never written. */
  connection?: ConnectionFacts;
}

/** Where a request went: which connection, how fresh, and when that connection connected. */
export interface ConnectionFacts {
  /** Sequence number of the connection (in the order opened). */
  id: number;
  /** Its local port once connected (the server sees it as the peer's port); 0 before. */
  localPort: number;
  /** performance.now() when it was opened, and when it connected (-1: not yet). */
  openedAt: number;
  connectedAt: number;
  /** Requests written on it before this one (0: its first). */
  nth: number;
  /** The request was written before the connection had connected (buffered by node). */
  writtenBeforeConnect: boolean;
}

/** A pool of raw HTTP/1.1 connections sending pre-encoded requests. */
export interface RawClient {
  /** Sends the next pre-encoded request; resolves with its outcome (never rejects). */
  send(scheduled: number): Promise<RawOutcome>;
  /** Requests sent and not yet settled (waiting here or on a connection). */
  readonly outstanding: number;
  /** Resolves when nothing is outstanding. */
  idle(): Promise<void>;
  /** Connections open now, and opened in all. */
  readonly sockets: number;
  readonly opened: number;
  /** How long each connection opened took to connect (ms), in order. */
  readonly connectMs: readonly number[];
  /** Requests settled with 0, by cause (an error code, `closed`, `malformed response`...). */
  readonly failures: Readonly<Record<string, number>>;
  /** Stops the sweep and closes every connection; what is outstanding settles with 0. */
  close(): void;
}

/** Options of `createRawClient`. */
export interface RawClientOptions {
  host: string;
  port: number;
  maxSockets: number;
  /** From the scheduled time; past it, a request settles with -1. */
  timeoutMs: number;
  /** The pre-encoded requests: the n-th sent is `requests[n % requests.length]`. */
  requests: readonly Buffer[];
}

/** One request: its bytes on the wire, with the request line and headers. */
export function encodeRequest(request: {
  method: string;
  path: string;
  host: string;
  headers: Readonly<Record<string, string>>;
  body: string;
}): Buffer {
  const body = Buffer.from(request.body, "utf8");
  let head = `${request.method} ${request.path} HTTP/1.1\r\nHost: ${request.host}\r\n`;
  for (const [name, value] of Object.entries(request.headers)) head += `${name}: ${value}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

/** What the client needs of a response. */
export interface ParsedResponse {
  status: number;
  retryAfter?: string;
  /** The server closes the connection after it (`Connection: close`, or HTTP/1.0). */
  close: boolean;
  /** How long the server keeps an idle connection (`Keep-Alive: timeout=`), if it says. */
  keepAliveMs?: number;
}

type ParserState =
  | "head"
  | "fixed"
  | "chunk-size"
  | "chunk-data"
  | "chunk-end"
  | "trailer"
  | "until-close";

const HEAD_END = Buffer.from("\r\n\r\n", "latin1");
const MAX_HEAD_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 8 * 1024;
const NEWLINE = 10;

/**
 * An incremental parser of one HTTP/1.1 response at a time (1xx interim responses are
 * skipped), fed the bytes as they arrive however they are split. Bodies are skipped by
 * their framing: Content-Length, chunked (with trailers), or up to the connection's close.
 * Throws on bytes that are not such a response.
 */
export class ResponseParser {
  private state: ParserState = "head";
  /** The bytes of a head not yet complete. */
  private partialHead: Buffer | undefined;
  /** A line of the chunked framing not yet complete. */
  private partialLine = "";
  /** Body or chunk bytes still to skip. */
  private remaining = 0;
  private response: ParsedResponse | undefined;
  /** Where the bytes being fed are read (within `feed`). */
  private data: Buffer = Buffer.alloc(0);
  private position = 0;

  /** Makes the parser ready for the next response. */
  reset(): void {
    this.state = "head";
    this.partialHead = undefined;
    this.partialLine = "";
    this.remaining = 0;
    this.response = undefined;
  }

  /**
   * Feeds bytes; returns the response once its last byte has arrived, with the number of
   * bytes that followed it in `chunk` (none for a client that does not pipeline), and
   * then must be reset before the next.
   */
  feed(chunk: Buffer): { response: ParsedResponse; leftover: number } | undefined {
    this.data = chunk;
    this.position = 0;
    try {
      while (this.position < this.data.length) {
        if (this.step()) {
          const response = this.response;
          if (!response) throw new Error("no response");
          return { response, leftover: this.data.length - this.position };
        }
      }
      return undefined;
    } finally {
      this.data = Buffer.alloc(0);
    }
  }

  /** At the connection's end: the response, if that end completes it (no framing). */
  end(): ParsedResponse | undefined {
    return this.state === "until-close" ? this.response : undefined;
  }

  /** Reads what it can in the current state; true once the response is complete. */
  private step(): boolean {
    switch (this.state) {
      case "head":
        return this.readHead();
      case "fixed":
      case "chunk-data": {
        const take = Math.min(this.remaining, this.data.length - this.position);
        this.position += take;
        this.remaining -= take;
        if (this.remaining > 0) return false;
        if (this.state === "fixed") return true;
        this.state = "chunk-end";
        return false;
      }
      case "chunk-size": {
        const line = this.readLine();
        if (line === undefined) return false;
        const size = /^([0-9a-fA-F]+)[ \t]*(?:;.*)?$/.exec(line)?.[1];
        if (size === undefined) throw new Error(`bad chunk size line: ${JSON.stringify(line)}`);
        this.remaining = Number.parseInt(size, 16);
        this.state = this.remaining === 0 ? "trailer" : "chunk-data";
        return false;
      }
      case "chunk-end": {
        const line = this.readLine();
        if (line === undefined) return false;
        if (line !== "") throw new Error("chunk not followed by CRLF");
        this.state = "chunk-size";
        return false;
      }
      case "trailer": {
        const line = this.readLine();
        // A trailer field is skipped; the empty line ends the response.
        return line === "";
      }
      case "until-close":
        this.position = this.data.length;
        return false;
    }
  }

  /** Reads a head; true when it is the whole response (no body). */
  private readHead(): boolean {
    let data = this.data;
    let start = this.position;
    let searchFrom = start;
    if (this.partialHead) {
      searchFrom = Math.max(0, this.partialHead.length - (HEAD_END.length - 1));
      data = Buffer.concat([this.partialHead, data.subarray(start)]);
      start = 0;
      this.partialHead = undefined;
      this.data = data;
    }
    const end = data.indexOf(HEAD_END, searchFrom);
    if (end === -1) {
      if (data.length - start > MAX_HEAD_BYTES) throw new Error("response head too large");
      this.partialHead = data.subarray(start);
      this.position = data.length;
      return false;
    }
    this.position = end + HEAD_END.length;
    const head = parseHead(data.toString("latin1", start, end));
    const { status } = head.response;
    if (status >= 100 && status < 200) {
      // An interim response (100 Continue...): the final one follows. 101 would switch
      // protocols, which this client never asks for.
      if (status === 101) throw new Error("unexpected 101");
      return false;
    }
    this.response = head.response;
    if (status === 204 || status === 304) return true;
    if (head.transferEncoding !== undefined) {
      const codings = head.transferEncoding.split(",").map((c) => c.trim().toLowerCase());
      // Chunked last: chunked framing; any other last coding: the body ends at the close.
      this.state = codings.at(-1) === "chunked" ? "chunk-size" : "until-close";
      return false;
    }
    if (head.contentLength !== undefined) {
      this.remaining = head.contentLength;
      if (this.remaining === 0) return true;
      this.state = "fixed";
      return false;
    }
    this.state = "until-close";
    return false;
  }

  /** A line of the chunked framing without its CRLF, or undefined until it is complete. */
  private readLine(): string | undefined {
    const newline = this.data.indexOf(NEWLINE, this.position);
    if (newline === -1) {
      this.partialLine += this.data.toString("latin1", this.position);
      this.position = this.data.length;
      if (this.partialLine.length > MAX_LINE_BYTES) throw new Error("chunk line too long");
      return undefined;
    }
    let line = this.partialLine + this.data.toString("latin1", this.position, newline);
    this.partialLine = "";
    this.position = newline + 1;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    return line;
  }
}

/** The status line and headers of a response (without the empty line). */
function parseHead(text: string): {
  response: ParsedResponse;
  contentLength?: number;
  transferEncoding?: string;
} {
  const lines = text.split("\r\n");
  const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0] ?? "");
  if (!statusLine) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
  const http10 = statusLine[1] === "0";
  const response: ParsedResponse = { status: Number(statusLine[2]), close: http10 };
  let contentLength: number | undefined;
  let transferEncoding: string | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`bad header line: ${JSON.stringify(line)}`);
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    switch (name) {
      case "content-length": {
        if (!/^\d+$/.test(value)) throw new Error(`bad content-length: ${value}`);
        const length = Number(value);
        if (contentLength !== undefined && contentLength !== length) {
          throw new Error("conflicting content-length");
        }
        contentLength = length;
        break;
      }
      case "transfer-encoding":
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding},${value}`;
        break;
      case "connection": {
        const tokens = value.toLowerCase().split(",");
        for (const token of tokens) {
          if (token.trim() === "close") response.close = true;
          else if (token.trim() === "keep-alive" && http10) response.close = false;
        }
        break;
      }
      case "retry-after":
        response.retryAfter = value;
        break;
      case "keep-alive": {
        const timeout = /(?:^|[,\s])timeout=(\d+)/i.exec(value)?.[1];
        if (timeout !== undefined) response.keepAliveMs = Number(timeout) * 1000;
        break;
      }
    }
  }
  return {
    response,
    ...(contentLength === undefined ? {} : { contentLength }),
    ...(transferEncoding === undefined ? {} : { transferEncoding }),
  };
}

interface Pending {
  scheduled: number;
  /** When `send` was called. */
  sent: number;
  payload: Buffer;
  resolve: (outcome: RawOutcome) => void;
  /** When it was written on a connection; -1 until then. */
  writtenAt: number;
  /** When the first byte of its response arrived; -1 until then. */
  firstByteAt: number;
  /** The connection's facts at the write. */
  connection: ConnectionFacts | undefined;
  settled: boolean;
}

interface Connection {
  id: number;
  socket: Socket;
  openedAt: number;
  /** -1 until connected. */
  connectedAt: number;
  /** Requests written on it so far. */
  written: number;
  parser: ResponseParser;
  /** The request on it, until its outcome is settled. */
  request: Pending | undefined;
  /** In the pool (false once closing or closed). */
  pooled: boolean;
  idleSince: number;
  /** How long it may stay idle and still be used. */
  maxIdleMs: number;
  /** The socket's error, if any. */
  error: string | undefined;
}

/** How often requests are checked for their timeout and idle connections for theirs. */
const SWEEP_MS = 1000;
/** Idle connections are reused for at most the server's keep-alive timeout less this. */
const KEEP_ALIVE_MARGIN_MS = 1000;
/** Node's default keep-alive timeout (5 s), when the server does not say. */
const DEFAULT_KEEP_ALIVE_MS = 5000;

/** A pool of up to `maxSockets` connections sending `requests` in turn. */
export function createRawClient(options: RawClientOptions): RawClient {
  const { requests } = options;
  if (requests.length === 0) throw new Error("no requests to send");
  const connections = new Set<Connection>();
  // Idle connections, the most recently used last (taken first, so the fewest stay warm
  // and the others time out).
  const idleConnections: Connection[] = [];
  // Requests waiting for a connection, first in first out, from `queueHead` on.
  let queue: (Pending | undefined)[] = [];
  let queueHead = 0;
  let sequence = 0;
  let outstanding = 0;
  let opened = 0;
  const connectMs: number[] = [];
  const failures: Record<string, number> = {};
  let closed = false;
  let idleWaiters: (() => void)[] = [];

  const settle = (pending: Pending, status: number, retryAfter?: string) => {
    if (pending.settled) return;
    pending.settled = true;
    outstanding--;
    const outcome: RawOutcome = {
      status,
      ms: performance.now() - pending.scheduled,
      lateMs: pending.sent - pending.scheduled,
    };
    if (retryAfter !== undefined) outcome.retryAfter = retryAfter;
    if (pending.writtenAt >= 0) outcome.waitMs = pending.writtenAt - pending.scheduled;
    if (pending.firstByteAt >= 0) outcome.firstByteMs = pending.firstByteAt - pending.scheduled;
    if (pending.connection) outcome.connection = pending.connection;
    pending.resolve(outcome);
    if (outstanding === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    }
  };

  const write = (connection: Connection, pending: Pending) => {
    connection.request = pending;
    connection.parser.reset();
    pending.writtenAt = performance.now();
    pending.connection = {
      id: connection.id,
      localPort: connection.socket.localPort ?? 0,
      openedAt: connection.openedAt,
      connectedAt: connection.connectedAt,
      nth: connection.written,
      writtenBeforeConnect: connection.connectedAt < 0,
    };
    connection.written++;
    connection.socket.write(pending.payload);
  };

  /**
   * Takes a connection out of the pool, settling its request, if any, with `status` (0:
   * counted under `cause`).
   */
  const drop = (connection: Connection, status = 0, cause = "dropped") => {
    if (!connection.pooled) return;
    connection.pooled = false;
    connections.delete(connection);
    const index = idleConnections.indexOf(connection);
    if (index !== -1) idleConnections.splice(index, 1);
    const pending = connection.request;
    connection.request = undefined;
    if (pending && !pending.settled) {
      if (status === 0) failures[cause] = (failures[cause] ?? 0) + 1;
      settle(pending, status);
    }
    connection.socket.destroy();
  };

  const nextWaiting = (): Pending | undefined => {
    while (queueHead < queue.length) {
      const pending = queue[queueHead];
      queue[queueHead] = undefined;
      queueHead++;
      if (pending && !pending.settled) return pending;
    }
    return undefined;
  };

  const compactQueue = () => {
    if (queueHead === queue.length) {
      queue = [];
      queueHead = 0;
    } else if (queueHead > 1024 && queueHead * 2 > queue.length) {
      queue = queue.slice(queueHead);
      queueHead = 0;
    }
  };

  /** A connection is free: the first waiting request goes on it, or it waits idle. */
  const release = (connection: Connection) => {
    const next = nextWaiting();
    compactQueue();
    if (next) {
      write(connection, next);
      return;
    }
    connection.idleSince = performance.now();
    idleConnections.push(connection);
  };

  const onData = (connection: Connection, chunk: Buffer) => {
    const pending = connection.request;
    if (!pending) {
      // Bytes with no request on the connection: not a conversation this client can follow.
      drop(connection);
      return;
    }
    if (pending.firstByteAt < 0) pending.firstByteAt = performance.now();
    let parsed: ReturnType<ResponseParser["feed"]>;
    try {
      parsed = connection.parser.feed(chunk);
    } catch {
      drop(connection, 0, "malformed response");
      pump();
      return;
    }
    if (!parsed) return;
    const { response, leftover } = parsed;
    connection.request = undefined;
    settle(pending, response.status, response.retryAfter);
    if (response.keepAliveMs !== undefined) {
      connection.maxIdleMs = Math.max(0, response.keepAliveMs - KEEP_ALIVE_MARGIN_MS);
    }
    // Bytes past the response, with no request pipelined, are a broken conversation too.
    if (response.close || leftover > 0) {
      drop(connection);
      pump();
      return;
    }
    release(connection);
  };

  const onClose = (connection: Connection, hadError: boolean) => {
    const pending = connection.request;
    if (pending && !hadError) {
      // A response delimited by the connection's close is complete now.
      const response = connection.parser.end();
      if (response) {
        connection.request = undefined;
        settle(pending, response.status, response.retryAfter);
      }
    }
    drop(connection, 0, connection.error ?? "closed by the server");
    pump();
  };

  const open = (): Connection => {
    const socket = connect({ host: options.host, port: options.port });
    socket.setNoDelay(true);
    const started = performance.now();
    const connection: Connection = {
      id: opened,
      socket,
      openedAt: started,
      connectedAt: -1,
      written: 0,
      parser: new ResponseParser(),
      request: undefined,
      pooled: true,
      idleSince: 0,
      maxIdleMs: DEFAULT_KEEP_ALIVE_MS - KEEP_ALIVE_MARGIN_MS,
      error: undefined,
    };
    connections.add(connection);
    opened++;
    socket.once("connect", () => {
      connection.connectedAt = performance.now();
      connectMs.push(connection.connectedAt - started);
      // A request written before the connect learns the port and connect time now.
      const facts = connection.request?.connection;
      if (facts?.writtenBeforeConnect) {
        facts.localPort = socket.localPort ?? 0;
        facts.connectedAt = connection.connectedAt;
      }
    });
    socket.on("data", (chunk: Buffer) => onData(connection, chunk));
    // 'close' follows an error; the request settles there.
    socket.on("error", (error: NodeJS.ErrnoException) => {
      connection.error ??= error.code ?? error.message;
    });
    socket.once("close", (hadError: boolean) => onClose(connection, hadError));
    return connection;
  };

  /** An idle connection still fresh enough, or a new one if the pool has room. */
  const take = (): Connection | undefined => {
    const now = performance.now();
    for (;;) {
      const connection = idleConnections.pop();
      if (!connection) break;
      if (now - connection.idleSince <= connection.maxIdleMs) return connection;
      drop(connection);
    }
    if (!closed && connections.size < options.maxSockets) return open();
    return undefined;
  };

  /** Puts waiting requests on connections while there are any to take. */
  const pump = () => {
    while (queueHead < queue.length) {
      const head = queue[queueHead];
      if (!head || head.settled) {
        queueHead++;
        continue;
      }
      const connection = take();
      if (!connection) break;
      queueHead++;
      write(connection, head);
    }
    compactQueue();
  };

  const sweep = () => {
    const now = performance.now();
    const deadline = now - options.timeoutMs;
    for (const connection of connections) {
      const pending = connection.request;
      if (pending && pending.scheduled <= deadline) drop(connection, -1);
    }
    for (let i = queueHead; i < queue.length; i++) {
      const pending = queue[i];
      if (pending && !pending.settled && pending.scheduled <= deadline) settle(pending, -1);
    }
    // The oldest idle connections first: close those the server may be closing.
    let stale = 0;
    while (stale < idleConnections.length) {
      const connection = idleConnections[stale];
      if (!connection || now - connection.idleSince <= connection.maxIdleMs) break;
      stale++;
    }
    for (const connection of idleConnections.slice(0, stale)) drop(connection);
    pump();
  };
  const sweeper = setInterval(sweep, SWEEP_MS);
  sweeper.unref();

  return {
    get outstanding() {
      return outstanding;
    },
    get sockets() {
      return connections.size;
    },
    get opened() {
      return opened;
    },
    connectMs,
    failures,
    idle() {
      if (outstanding === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    send(scheduled) {
      const payload = requests[sequence % requests.length] ?? Buffer.alloc(0);
      sequence++;
      outstanding++;
      const sent = performance.now();
      return new Promise<RawOutcome>((resolve) => {
        const pending: Pending = {
          scheduled,
          sent,
          payload,
          resolve,
          writtenAt: -1,
          firstByteAt: -1,
          connection: undefined,
          settled: false,
        };
        if (closed) {
          settle(pending, 0);
          return;
        }
        // First come, first served: nothing overtakes a waiting request.
        const connection = queueHead === queue.length ? take() : undefined;
        if (connection) write(connection, pending);
        else queue.push(pending);
      });
    },
    close() {
      closed = true;
      clearInterval(sweeper);
      for (const connection of [...connections]) drop(connection, 0, "client closed");
      for (let i = queueHead; i < queue.length; i++) {
        const pending = queue[i];
        if (pending) settle(pending, 0);
      }
      queue = [];
      queueHead = 0;
    },
  };
}
