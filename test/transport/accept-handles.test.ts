/**
 * The port's extra accept handles (transport/accept-handles.ts): node accepts one
 * connection per listening handle per turn of its event loop, so with one handle a burst
 * of new connections to a busy process waited in the kernel's accept queue, a turn
 * each (found by bench/overload.ts: new connections answered after 29 s during an
 * overload). With 64, a burst is taken 64 a turn; the connection cap counts every
 * handle's connections together; shutdown closes every handle.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listen } from "../../src/transport/server.js";

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
    const server = await listen((_req, res) => res.end("ok"), {
      host: "127.0.0.1",
      port: 0,
      maxConnections: 5,
      extraAcceptHandles: 15,
    });
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
    const server = await listen((_req, res) => res.end("ok"), {
      host: "127.0.0.1",
      port: 0,
      extraAcceptHandles: 15,
    });
    await server.close(1_000);
    const refused = await new Promise<string>((resolve) => {
      const socket = net.connect(server.port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");
  });
});
