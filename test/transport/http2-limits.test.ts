/**
 * HTTP/2 limits as a hostile client meets them, with raw frames on a socket: sessions
 * that only send the preface, idle sessions, bodies trickled past the request timeout,
 * streams beyond the per-connection cap, and connections beyond the cap. The limits are
 * the service's own (server.ts) with short values on a second listener of the same app,
 * so that the test takes seconds; the defaults are asserted apart.
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HTTP2_IDLE_TIMEOUT_MS,
  MAX_STREAMS_PER_CONNECTION,
} from "../../src/transport/http2-limits.js";
import { type ListeningServer, listen, MAX_CONNECTIONS } from "../../src/transport/server.js";
import { totalEvents } from "../security/raw-client.js";
import { h2Close, h2Connect, h2Request } from "../support/raw-http.js";
import {
  type ProvisionedKey,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const IDLE_MS = 800;
const REQUEST_MS = 1_500;
const STREAMS = 4;
const CONNECTIONS = 12;
// Timers fire late on a loaded machine; how late a limit may act and still pass.
const SLACK_MS = 2_500;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const FRAME = { HEADERS: 0x1, SETTINGS: 0x4, GOAWAY: 0x7 } as const;
const FLAG = { ACK: 0x1, END_HEADERS: 0x4 } as const;

/** One HTTP/2 frame. */
function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header.writeUInt8(type, 3);
  header.writeUInt8(flags, 4);
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

/** A header block of literal fields without indexing (RFC 7541 6.2.2), names and values < 127 bytes. */
function headerBlock(fields: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    parts.push(Buffer.from([0x00, name.length]), Buffer.from(name));
    parts.push(Buffer.from([value.length]), Buffer.from(value));
  }
  return Buffer.concat(parts);
}

interface ReceivedFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** A raw HTTP/2 connection: writes frames, records the server's frames and the close. */
interface RawSession {
  socket: net.Socket;
  frames: ReceivedFrame[];
  closed: Promise<number>;
  /** Resolves with the first frame matching, or rejects after `ms`. */
  waitFor(match: (frame: ReceivedFrame) => boolean, ms: number): Promise<ReceivedFrame>;
}

function rawSession(port: number, opened = performance.now()): Promise<RawSession> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const frames: ReceivedFrame[] = [];
    const waiters: (() => void)[] = [];
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) break;
        const received = {
          type: buffered.readUInt8(3),
          flags: buffered.readUInt8(4),
          streamId: buffered.readUInt32BE(5) & 0x7fffffff,
          payload: buffered.subarray(9, 9 + length),
        };
        buffered = buffered.subarray(9 + length);
        frames.push(received);
        // The server's SETTINGS are acknowledged, as a real client would.
        if (received.type === FRAME.SETTINGS && !(received.flags & FLAG.ACK)) {
          socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
        }
      }
      for (const wake of waiters.splice(0)) wake();
    });
    socket.on("error", () => {});
    const closed = new Promise<number>((done) =>
      socket.once("close", () => {
        done(performance.now() - opened);
        for (const wake of waiters.splice(0)) wake();
      }),
    );
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
      resolve({
        socket,
        frames,
        closed,
        waitFor(match, ms) {
          return new Promise((found, fail) => {
            const timer = setTimeout(() => fail(new Error("no such frame in time")), ms);
            const check = () => {
              const hit = frames.find(match);
              if (hit) {
                clearTimeout(timer);
                found(hit);
              } else if (socket.destroyed) {
                clearTimeout(timer);
                fail(new Error("the connection closed first"));
              } else waiters.push(check);
            };
            check();
          });
        },
      });
    });
  });
}

/** Resolves with the close time, or with -1 when the socket is still open after `ms`. */
function closedWithin(session: RawSession, ms: number): Promise<number> {
  return Promise.race([
    session.closed,
    new Promise<number>((resolve) => setTimeout(() => resolve(-1), ms)),
  ]);
}

/**
 * `/healthz` over a new HTTP/2 connection, tried again until `ms` pass, as a client
 * would: a client sees its connection closed a turn of the loop before the server has
 * counted it closed, so the first connection after the frees may still meet the cap.
 */
async function healthzStatusWithin(port: number, ms: number): Promise<number> {
  const deadline = performance.now() + ms;
  for (;;) {
    const client = await h2Connect(`http://127.0.0.1:${port}`);
    const status = await h2Request(client, { ":method": "GET", ":path": "/healthz" }).then(
      (response) => response.status,
      () => 0,
    );
    await h2Close(client);
    if (status === 200 || performance.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("HTTP/2 limits", () => {
  let server: TestServer;
  let key: ProvisionedKey;
  let limited: ListeningServer;

  beforeAll(async () => {
    server = await startTestServer();
    key = await server.provision();
    limited = await listen(server.app.handler, {
      host: "127.0.0.1",
      port: 0,
      headersTimeoutMs: IDLE_MS,
      requestTimeoutMs: REQUEST_MS,
      http2IdleTimeoutMs: IDLE_MS,
      maxStreamsPerConnection: STREAMS,
      maxConnections: CONNECTIONS,
    });
  });
  afterAll(async () => {
    await limited?.close(1_000);
    await server?.close();
  });

  it("the service's defaults: 15 s idle sessions, 100 streams per connection, 10,000 connections", () => {
    expect(HTTP2_IDLE_TIMEOUT_MS).toBe(15_000);
    expect(MAX_STREAMS_PER_CONNECTION).toBe(100);
    expect(MAX_CONNECTIONS).toBe(10_000);
  });

  it("a session that sends only the preface and SETTINGS gets GOAWAY and is closed after the idle timeout", async () => {
    const session = await rawSession(limited.port);
    const closedAfter = await closedWithin(session, IDLE_MS + SLACK_MS + 5_000);
    expect(closedAfter).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(closedAfter).toBeLessThan(IDLE_MS + SLACK_MS);
    expect(session.frames.some((f) => f.type === FRAME.GOAWAY)).toBe(true);
  });

  it("a session idle after its request gets GOAWAY after the idle timeout", async () => {
    const session = await h2Connect(`http://127.0.0.1:${limited.port}`);
    const goaway = new Promise<number>((resolve) => session.once("goaway", resolve));
    const closed = new Promise<void>((resolve) => session.once("close", resolve));
    const response = await h2Request(session, { ":method": "GET", ":path": "/healthz" });
    expect(response.status).toBe(200);
    const answered = performance.now();
    const code = await Promise.race([
      goaway,
      closed.then(() => -1),
      new Promise<number>((resolve) => setTimeout(() => resolve(-2), IDLE_MS + SLACK_MS + 2_000)),
    ]);
    expect(code).toBe(http2.constants.NGHTTP2_NO_ERROR);
    await closed;
    expect(performance.now() - answered).toBeLessThan(IDLE_MS + SLACK_MS);
  });

  it("a body trickled past the request timeout gets 408 Request timeout and its stream is reset; no event", async () => {
    const before = await totalEvents(server);
    const session = await h2Connect(`http://127.0.0.1:${limited.port}`);
    const opened = performance.now();
    const stream = session.request({
      ":method": "POST",
      ":path": "/api/ingest/event",
      authorization: `Bearer ${key.secret}`,
      "content-type": "application/json",
      "content-length": "100000",
    });
    const statusSeen = new Promise<number>((resolve) =>
      stream.once("response", (headers) => resolve(Number(headers[":status"]))),
    );
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", () => {});
    const ended = new Promise<number>((resolve) =>
      stream.once("close", () => resolve(performance.now() - opened)),
    );
    stream.write(`${JSON.stringify(validEvent()).slice(0, -1)}`);
    const trickle = setInterval(() => {
      if (!stream.destroyed && !stream.closed) stream.write(" ");
    }, 100);
    try {
      const closedAfter = await Promise.race([
        ended,
        new Promise<number>((resolve) => setTimeout(() => resolve(-1), REQUEST_MS + 10_000)),
      ]);
      expect(closedAfter).toBeGreaterThanOrEqual(REQUEST_MS - 50);
      expect(closedAfter).toBeLessThan(REQUEST_MS + SLACK_MS);
      expect(await statusSeen).toBe(408);
      expect(JSON.parse(Buffer.concat(chunks).toString("utf8"))).toEqual({
        error: "Request timeout",
      });
      // The session itself is still usable.
      expect((await h2Request(session, { ":method": "GET", ":path": "/healthz" })).status).toBe(
        200,
      );
    } finally {
      clearInterval(trickle);
      session.destroy();
    }
    expect(await totalEvents(server)).toBe(before);
  });

  it("the stream cap is advertised; a client opening more streams than it allows loses its connection, others are served", async () => {
    const session = await rawSession(limited.port);
    const settings = await session.waitFor(
      (f) => f.type === FRAME.SETTINGS && !(f.flags & FLAG.ACK),
      5_000,
    );
    const advertised = new Map<number, number>();
    for (let at = 0; at + 6 <= settings.payload.length; at += 6) {
      advertised.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
    }
    // SETTINGS_MAX_CONCURRENT_STREAMS (0x3).
    expect(advertised.get(0x3)).toBe(STREAMS);
    await session.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) !== 0, 5_000);

    // STREAMS + 1 requests that each declare a body and send none of it. Past the
    // acknowledged limit nghttp2 treats the excess stream as a connection error.
    for (let i = 0; i <= STREAMS; i++) {
      const block = headerBlock([
        [":method", "POST"],
        [":scheme", "http"],
        [":path", "/api/ingest/event"],
        [":authority", "127.0.0.1"],
        ["content-type", "application/json"],
        ["content-length", "1000"],
      ]);
      session.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * i, block));
    }
    const goaway = await session.waitFor((f) => f.type === FRAME.GOAWAY, 5_000);
    expect(goaway.payload.readUInt32BE(4)).not.toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(await closedWithin(session, 5_000)).toBeGreaterThan(0);

    // A client that keeps to the advertised limit is served meanwhile.
    const other = await h2Connect(`http://127.0.0.1:${limited.port}`);
    try {
      expect((await h2Request(other, { ":method": "GET", ":path": "/healthz" })).status).toBe(200);
      expect(other.remoteSettings.maxConcurrentStreams).toBe(STREAMS);
    } finally {
      await h2Close(other);
    }
  });
  it("connections beyond the cap are closed on accept; once idle sessions time out, new clients are served", async () => {
    const held = await Promise.all(
      Array.from({ length: CONNECTIONS }, () => rawSession(limited.port)),
    );
    // Every held connection got the server's SETTINGS: they were accepted.
    await Promise.all(held.map((s) => s.waitFor((f) => f.type === FRAME.SETTINGS, 5_000)));
    const extra = await rawSession(limited.port);
    expect(await closedWithin(extra, 2_000)).toBeGreaterThanOrEqual(0);
    expect(extra.frames).toEqual([]);

    // The idle timeout frees them, and the service is reachable again.
    const freed = await Promise.all(held.map((s) => closedWithin(s, IDLE_MS + SLACK_MS + 5_000)));
    for (const after of freed) expect(after).toBeGreaterThan(0);
    expect(await healthzStatusWithin(limited.port, 2_000)).toBe(200);
  });
});
