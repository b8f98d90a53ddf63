/**
 * Shedding by queueing delay (src/transport/queue-delay.ts) on a real server, through
 * HTTP/1.1 on a raw socket. The server runs in this process, so the test makes its event
 * loop lag by busy-waiting: turns of 300 ms, with a target of 100 ms over 250 ms.
 *
 * Why this does not depend on the machine's speed: the sampler's timer is due 50 ms after
 * it fires, so while each turn busy-waits 300 ms every sample is over 200 ms late, and a
 * slower machine only makes samples later; the loop is never idle long enough for a
 * sample under the target. The request is written to the socket (loopback: in the
 * server's receive buffer when write() returns) just before the last busy turn, so the
 * server reads it in the turn after, while it sheds. Recovery is waited for, not timed.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer } from "../events/events-client.js";
import {
  type ProvisionedKey,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const TARGET_MS = 100;
const INTERVAL_MS = 250;
const BUSY_TURN_MS = 300;
const OVERLOADED = "Service temporarily unavailable: too many requests in progress";

/** Blocks the event loop (this process's: the server's too) for `ms`. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

/** Lets the loop run one turn (its timers first). */
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * One keep-alive HTTP/1.1 connection written to directly: `write` puts a request's bytes
 * on the socket at once (no client library between), `response` reads the next answer.
 */
async function rawConnection(port: number) {
  const socket: Socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | undefined;
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    wake?.();
  });
  const more = () =>
    new Promise<void>((resolve, reject) => {
      wake = resolve;
      socket.once("close", () => reject(new Error("connection closed")));
    });
  return {
    write(method: string, path: string, headers: Record<string, string>, body = ""): void {
      const lines = [`${method} ${path} HTTP/1.1`, "host: 127.0.0.1"];
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      lines.push(`content-length: ${Buffer.byteLength(body)}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
    },
    async response(): Promise<RawResponse> {
      for (;;) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end >= 0) {
          const [statusLine = "", ...headerLines] = buffered
            .subarray(0, end)
            .toString("latin1")
            .split("\r\n");
          const headers: Record<string, string> = {};
          for (const line of headerLines) {
            const colon = line.indexOf(":");
            headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
          }
          const length = Number(headers["content-length"]);
          if (!Number.isInteger(length)) throw new Error(`no content-length: ${statusLine}`);
          if (buffered.length >= end + 4 + length) {
            const text = buffered.subarray(end + 4, end + 4 + length).toString("utf8");
            buffered = buffered.subarray(end + 4 + length);
            return {
              status: Number(statusLine.split(" ")[1]),
              headers,
              body: JSON.parse(text) as unknown,
            };
          }
        }
        await more();
      }
    },
    close: () => socket.destroy(),
  };
}

describe("shedding by the event loop's delay, through HTTP", () => {
  let server: TestServer;
  let key: ProvisionedKey;

  beforeAll(async () => {
    server = await startTestServer({
      LOOP_DELAY_TARGET_MS: String(TARGET_MS),
      LOOP_DELAY_INTERVAL_MS: String(INTERVAL_MS),
      RATE_LIMIT_MAX: "1000000",
      API_KEY_CACHE_SECONDS: "300",
    });
    key = await server.provision();
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Sends Create Event on `connection` until it is 201 (the loop has caught up). */
  const createdOnceCaughtUp = async (connection: Awaited<ReturnType<typeof rawConnection>>) => {
    const body = JSON.stringify(validEvent());
    const deadline = Date.now() + 30_000;
    for (;;) {
      connection.write("POST", "/api/ingest/event", postHeaders(), body);
      const answer = await connection.response();
      if (answer.status !== 503 || Date.now() > deadline) return answer;
      await sleep(100);
    }
  };
  const postHeaders = () => ({
    "content-type": "application/json",
    ...bearer(key.secret),
  });

  it("a request read while the loop stays behind gets 503 with Retry-After: 1, probes still answer, then it is 201 again", async () => {
    const ingest = await rawConnection(server.port);
    const probe = await rawConnection(server.port);
    try {
      // Both connections accepted and the key cached; on a loaded machine the server's
      // start may itself have left the loop behind, so this waits for it to catch up.
      expect((await createdOnceCaughtUp(ingest)).status).toBe(201);
      probe.write("GET", "/healthz", {});
      expect((await probe.response()).status).toBe(200);

      // The loop behind for well over the interval: every sample over the target.
      for (let turn = 0; turn < 5; turn++) {
        busyWait(BUSY_TURN_MS);
        await nextTurn();
      }
      ingest.write("POST", "/api/ingest/event", postHeaders(), JSON.stringify(validEvent()));
      probe.write("GET", "/healthz", {});
      busyWait(BUSY_TURN_MS);

      const refused = await ingest.response();
      expect(refused.status).toBe(503);
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.headers["content-type"]).toMatch(/^application\/json/);
      expect(refused.body).toEqual({ error: OVERLOADED });
      // Probes are not shed: the same turn answers /healthz.
      expect((await probe.response()).status).toBe(200);

      // The load gone, the next sample is under the target and requests are served.
      const recovered = await createdOnceCaughtUp(ingest);
      expect(recovered.status).toBe(201);
      expect(recovered.body).toMatchObject({ eventId: expect.any(String) });

      const metrics = await fetch(`${server.url}/metrics`).then((r) => r.text());
      const shed = metrics.match(
        /^audit_requests_overloaded_total\{class="ingest",reason="queue_delay"\} (\d+)$/m,
      );
      expect(Number(shed?.[1])).toBeGreaterThanOrEqual(1);
    } finally {
      ingest.close();
      probe.close();
    }
  });
});
