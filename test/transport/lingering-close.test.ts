/**
 * A lingering close: a client still sending a body the service has already refused (413,
 * then `Connection: close`) must still be able to read that 413. Without it the service
 * destroys the socket once the answer is written, the client's next bytes draw a reset,
 * and the reset makes the client's kernel drop the answer it had not read yet (found by
 * the long fuzz run on a loaded machine; here the client is made slow on purpose).
 */
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINGER_MS } from "../../src/transport/server.js";
import { parseResponse } from "../support/raw-socket.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends the headers of a 2 MB Create Event and its first 64 KB, then, without reading,
 * waits for the answer to arrive, sends the rest of the body, and only then reads.
 */
async function slowReaderOversizedRequest(port: number, secret: string) {
  const bodySize = 2 * 1024 * 1024;
  const head = Buffer.from(
    "POST /api/ingest/event HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n" +
      `authorization: Bearer ${secret}\r\ncontent-type: application/json\r\n` +
      `content-length: ${bodySize}\r\n\r\n`,
  );
  const socket = net.connect(port, "127.0.0.1");
  const received: Buffer[] = [];
  let reset = false;
  socket.on("error", () => {
    reset = true;
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  // Not reading: what the service sends stays in the kernel's receive buffer.
  socket.pause();
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  socket.write(Buffer.concat([head, Buffer.alloc(64 * 1024, 0x20)]));
  await sleep(500);
  for (let sent = 64 * 1024; sent < bodySize && !socket.destroyed; sent += 64 * 1024) {
    socket.write(Buffer.alloc(64 * 1024, 0x20));
    await sleep(5);
  }
  await sleep(300);
  socket.resume();
  await Promise.race([closed, sleep(10_000)]);
  socket.destroy();
  return { response: parseResponse(Buffer.concat(received)), reset };
}

describe("lingering close of an HTTP/1.1 connection", () => {
  let server: TestServer;
  let secret: string;

  beforeAll(async () => {
    server = await startTestServer();
    ({ secret } = await server.provision());
  }, 120_000);
  afterAll(() => server?.close());

  it("a client that reads late still gets the 413 of its oversized body", async () => {
    const { response } = await slowReaderOversizedRequest(server.port, secret);
    expect(response?.status).toBe(413);
    expect(JSON.parse(response?.body ?? "{}")).toEqual({ error: "Request payload too large" });
  });

  it("reads and drops what still arrives for a while, then closes for good", async () => {
    // Half-open allowed: the client does not close when the service's FIN comes.
    const socket = net.connect({ port: server.port, host: "127.0.0.1", allowHalfOpen: true });
    let failedAt: number | undefined;
    socket.on("error", () => {
      failedAt ??= performance.now();
    });
    socket.on("close", () => {
      failedAt ??= performance.now();
    });
    socket.on("data", () => {});
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(
      "POST /api/ingest/event HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        `authorization: Bearer ${secret}\r\ncontent-length: 2000000\r\n\r\n`,
    );
    // The 413 and the service's FIN.
    await new Promise<void>((resolve) => socket.once("end", () => resolve()));
    const ended = performance.now();
    // Within the linger, more of the body is read, not answered with a reset.
    socket.write(Buffer.alloc(64 * 1024, 0x20));
    await sleep(300);
    expect(failedAt).toBeUndefined();
    // After it, the socket is gone: the next bytes draw a reset.
    await sleep(LINGER_MS);
    for (let i = 0; i < 100 && failedAt === undefined; i++) {
      socket.write(Buffer.alloc(1024, 0x20));
      await sleep(50);
    }
    socket.destroy();
    expect(failedAt).toBeDefined();
    expect((failedAt ?? 0) - ended).toBeGreaterThanOrEqual(LINGER_MS);
  });
});
