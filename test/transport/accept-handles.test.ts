/**
 * The port's extra accept handles (transport/accept-handles.ts): node accepts one
 * connection per listening handle per turn of its event loop, so with one handle a burst
 * of new connections to a busy process waited in the kernel's accept queue, a turn
 * each (found by bench/overload.ts: new connections answered after 29 s during an
 * overload). With 64, a burst is taken 64 a turn; the connection cap counts every
 * handle's connections together; shutdown closes every handle, and after its timeout cuts
 * what is still open on any of them (HTTP/1.1 over TLS too).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import * as https from "node:https";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { type ListeningServer, type ListenOptions, listen } from "../../src/transport/server.js";
import { makeCertificate } from "../support/tls-certificate.js";

const BURST = 150;
/** How long the burst has: about 48 turns of the busy server (40 ms each). */
const WINDOW_MS = 2_000;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** Starts test/support/busy-listener.ts with `extra` accept handles; resolves its port. */
function busyListener(extra: number): Promise<number> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/support/busy-listener.ts", String(extra)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once("exit", (code) => reject(new Error(`the listener exited (${code})`)));
  });
}

/** Opens `count` connections at once, each with one request; how many were answered in time. */
async function answeredWithin(port: number, count: number, ms: number): Promise<number> {
  const sockets: net.Socket[] = [];
  const answered = Array.from(
    { length: count },
    () =>
      new Promise<boolean>((resolve) => {
        const socket = net.connect(port, "127.0.0.1", () =>
          socket.write("GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"),
        );
        sockets.push(socket);
        socket.once("data", () => resolve(true));
        socket.once("error", () => resolve(false));
        setTimeout(() => resolve(false), ms);
      }),
  );
  const results = await Promise.all(answered);
  for (const socket of sockets) socket.destroy();
  return results.filter(Boolean).length;
}

describe("accept handles", () => {
  it(`a busy process answers a burst of ${BURST} new connections within ${WINDOW_MS} ms with 64 handles, not with 1`, async () => {
    const [one, many] = await Promise.all([busyListener(0), busyListener(63)]);
    const [fromOne, fromMany] = await Promise.all([
      answeredWithin(one, BURST, WINDOW_MS),
      answeredWithin(many, BURST, WINDOW_MS),
    ]);
    expect(fromMany).toBe(BURST);
    // One a turn: about 50 in the window.
    expect(fromOne).toBeLessThan(BURST * 0.7);
  }, 60_000);

  it("counts the connections of every handle against one cap", async () => {
    const server = await listenWith16Handles((_req, res) => res.end("ok"), { maxConnections: 5 });
    const sockets = Array.from({ length: 20 }, () => net.connect(server.port, "127.0.0.1"));
    try {
      // A connection over the cap is closed by the server at once; the others stay open.
      const closedEarly = await Promise.all(
        sockets.map(
          (socket) =>
            new Promise<boolean>((resolve) => {
              socket.once("close", () => resolve(true));
              socket.once("error", () => {});
              setTimeout(() => resolve(false), 1_500);
            }),
        ),
      );
      expect(closedEarly.filter((closed) => !closed).length).toBe(5);
    } finally {
      for (const socket of sockets) socket.destroy();
      await server.close(1_000);
    }
  });

  it("shutdown closes every handle: the port then refuses connections", async () => {
    const server = await listenWith16Handles((_req, res) => res.end("ok"));
    await server.close(1_000);
    expect(await connectOutcome(server.port)).toBe("ECONNREFUSED");
  });

  it("TLS: shutdown cuts HTTP/1.1 requests still running after its timeout, whichever handle accepted them", async () => {
    const dir = await mkdtemp(join(tmpdir(), "accept-tls-"));
    try {
      await makeCertificate(join(dir, "cert.pem"), join(dir, "key.pem"));
      const tls = {
        cert: await readFile(join(dir, "cert.pem")),
        key: await readFile(join(dir, "key.pem")),
      };
      let received = 0;
      // Never answers: only the shutdown ends these requests.
      const server = await listenWith16Handles(() => received++, { tls });
      const COUNT = 8;
      const ended = Array.from(
        { length: COUNT },
        () =>
          new Promise<string>((resolve) => {
            const req = https.request({
              host: "127.0.0.1",
              port: server.port,
              path: "/slow",
              rejectUnauthorized: false,
              ALPNProtocols: ["http/1.1"],
              agent: false,
            } as https.RequestOptions);
            req.once("response", () => resolve("answered"));
            req.once("error", () => resolve("cut"));
            req.end();
          }),
      );
      const deadline = Date.now() + 10_000;
      while (received < COUNT && Date.now() < deadline) await sleep(20);
      expect(received).toBe(COUNT);
      const started = performance.now();
      await server.close(300);
      // close resolves once every connection is closed: the requests are cut by then.
      const outcome = await Promise.race([
        Promise.all(ended),
        sleep(1_000).then(() => "still open"),
      ]);
      expect(outcome).toEqual(Array.from({ length: COUNT }, () => "cut"));
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** `listen` on a free port with 15 extra accept handles, checking that they were added. */
async function listenWith16Handles(
  handler: Parameters<typeof listen>[0],
  options: Partial<ListenOptions> = {},
): Promise<ListeningServer> {
  const outcomes: unknown[] = [];
  const server = await listen(handler, {
    host: "127.0.0.1",
    port: 0,
    extraAcceptHandles: 15,
    onAcceptHandles: (outcome) => outcomes.push(outcome),
    ...options,
  });
  expect(outcomes).toEqual([{ handles: 16 }]);
  return server;
}

/** "connected", or the error code of a connection to `port`. */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
  });
}
