/**
 * The real process and SIGTERM: it stops accepting connections at once, lets the
 * requests in flight (HTTP/1.1 and HTTP/2) finish with their normal answer, and exits 0
 * promptly, even with a connection open that never sent a request. Its JSON log lines
 * never carry an API key sent in a request.
 *
 * One process, one SIGTERM: the scenario runs in beforeAll and records what it saw;
 * each test asserts one part of it.
 */
import type { ClientRequest } from "node:http";
import * as http from "node:http";
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { h2Connect } from "../support/raw-http.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { validEvent } from "../support/test-server.js";

const API_KEY_IN_TEXT = /pk_(test|live)_[A-Za-z0-9_-]{16,}/;

interface Answer {
  status: number;
  body: string;
  /** The Connection header of an HTTP/1.1 answer. */
  connection?: string | undefined;
}

/** Writes `body` in `parts` pieces, `gapMs` apart, through `write`, then `end`s. */
async function trickle(
  body: string,
  parts: number,
  gapMs: number,
  target: { write(chunk: string): unknown; end(): unknown },
): Promise<void> {
  const size = Math.ceil(body.length / parts);
  for (let offset = 0; offset < body.length; offset += size) {
    target.write(body.slice(offset, offset + size));
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  target.end();
}

/** A POST over its own HTTP/1.1 connection whose body arrives over about a second. */
function slowH1Post(port: number, secret: string, requestId: string): Promise<Answer> {
  const body = JSON.stringify(validEvent({ entityId: requestId }));
  return new Promise((resolve, reject) => {
    const request: ClientRequest = http.request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/api/ingest/event",
        agent: false,
        signal: AbortSignal.timeout(20_000),
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          authorization: `Bearer ${secret}`,
          "x-request-id": requestId,
          // A keep-alive connection, as a client pool keeps (without an agent, node would ask to close).
          connection: "keep-alive",
        },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            body: text,
            connection: response.headers.connection,
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.flushHeaders();
    void trickle(body, 5, 250, request);
  });
}

/** The same over an HTTP/2 stream. */
async function slowH2Post(port: number, secret: string, requestId: string): Promise<Answer> {
  const session = await h2Connect(`http://127.0.0.1:${port}`);
  const body = JSON.stringify(validEvent({ entityId: requestId }));
  return new Promise((resolve, reject) => {
    const stream = session.request(
      {
        ":method": "POST",
        ":path": "/api/ingest/event",
        "content-type": "application/json",
        "x-project-key": secret,
        "x-request-id": requestId,
      },
      { signal: AbortSignal.timeout(20_000) },
    );
    let status = 0;
    let text = "";
    stream.setEncoding("utf8");
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.on("data", (chunk: string) => {
      text += chunk;
    });
    stream.on("end", () => {
      session.close();
      resolve({ status, body: text });
    });
    stream.on("error", (error) => {
      session.destroy();
      reject(error);
    });
    void trickle(body, 5, 250, stream);
  });
}

/** The error code of a new TCP connection to the port ("connected" if it succeeds). */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.setTimeout(5_000, () => {
      socket.destroy();
      resolve("timeout");
    });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** Opens a TCP connection that sends nothing (a pre-connecting proxy or browser). */
function idleConnection(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

interface Observed {
  before: string;
  whileDraining: string;
  settledAtRefusal: boolean[];
  answers: Answer[];
  exit: { code: number | null; signal: NodeJS.Signals | null } | "no exit within 30 s";
  /** From the last in-flight answer to the process's exit. */
  exitAfterLastAnswerMs: number;
  after: string;
}

describe("graceful shutdown of the service process on SIGTERM", () => {
  let service: ServiceProcess;
  let secret: string;
  let observed: Observed;

  beforeAll(async () => {
    // Debug level: every request is logged, so the log check below sees request lines.
    service = await spawnService({ LOG_LEVEL: "debug" });
    const admin = createAdminClient(`http://127.0.0.1:${service.port}`, service.adminToken);
    const { project } = await admin.createProject({ name: "shutdown", plan: Plan.PRO });
    const created = await admin.createApiKey({
      projectId: project?.id ?? "",
      environment: Environment.TEST,
    });
    secret = created.secret;

    const before = await connectOutcome(service.port);
    const idle = await idleConnection(service.port);
    idle.on("error", () => {
      // A reset of this connection at shutdown is expected; the exit time is what counts.
    });
    const settled = [false, false, false, false];
    let lastAnswerAt = 0;
    const inFlight = [
      slowH1Post(service.port, secret, "slow-h1-1"),
      slowH1Post(service.port, secret, "slow-h1-2"),
      slowH1Post(service.port, secret, "slow-h1-3"),
      slowH2Post(service.port, secret, "slow-h2-1"),
    ].map((answer, index) =>
      answer.finally(() => {
        settled[index] = true;
        lastAnswerAt = Date.now();
      }),
    );
    // Every request has sent its headers and part of its body.
    await new Promise((resolve) => setTimeout(resolve, 300));

    service.child.kill("SIGTERM");
    await service.waitForLog("shutting down: finishing in-flight requests", 10_000);
    // The log line is written just before the listener closes: poll until refused.
    let whileDraining = await connectOutcome(service.port);
    for (let attempt = 0; attempt < 25 && whileDraining !== "ECONNREFUSED"; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      whileDraining = await connectOutcome(service.port);
    }
    const settledAtRefusal = [...settled];

    const answers = await Promise.all(inFlight);
    const exit = await Promise.race([
      service.exited,
      new Promise<"no exit within 30 s">((resolve) =>
        setTimeout(() => resolve("no exit within 30 s"), 30_000),
      ),
    ]);
    const exitAfterLastAnswerMs = Date.now() - lastAnswerAt;
    idle.destroy();
    observed = {
      before,
      whileDraining,
      settledAtRefusal,
      answers,
      exit,
      exitAfterLastAnswerMs,
      after: await connectOutcome(service.port),
    };
  });
  afterAll(async () => {
    await service?.cleanup();
  });

  it("stops accepting connections at once, while requests are still in flight", () => {
    expect(observed.before).toBe("connected");
    expect(observed.whileDraining).toBe("ECONNREFUSED");
    expect(observed.settledAtRefusal).toEqual([false, false, false, false]);
    expect(observed.after).toBe("ECONNREFUSED");
  });

  it("finishes the in-flight HTTP/1.1 and HTTP/2 requests with 201", () => {
    expect(observed.answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    for (const answer of observed.answers) {
      expect((JSON.parse(answer.body) as { eventId: string }).eventId).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("answers the in-flight HTTP/1.1 requests with Connection: close, so no client reuses a connection being closed", () => {
    const h1 = observed.answers.filter((answer) => answer.connection !== undefined);
    expect(h1).toHaveLength(3);
    expect(h1.map((answer) => answer.connection)).toEqual(["close", "close", "close"]);
  });

  it("exits with code 0 and nothing on stderr", () => {
    expect(observed.exit).toEqual({ code: 0, signal: null });
    expect(service.unexpectedStderr()).toBe("");
  });

  it("exits promptly once the requests are done, even with an idle connection open", () => {
    expect(observed.exit).not.toBe("no exit within 30 s");
    expect(observed.exitAfterLastAnswerMs).toBeLessThan(5_000);
  });

  it("JSON log lines carry request ids and never an API key", () => {
    const jsonLines = service.stdout.filter((line) => line.startsWith("{"));
    const entries = jsonLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.length).toBeGreaterThan(0);
    for (const line of jsonLines) {
      expect(line).not.toContain(secret);
      expect(line).not.toMatch(API_KEY_IN_TEXT);
    }
    const requestLines = entries.filter((entry) => entry.msg === "request");
    expect(requestLines.map((entry) => entry.reqId)).toEqual(
      expect.arrayContaining(["slow-h1-1", "slow-h1-2", "slow-h1-3", "slow-h2-1"]),
    );
    expect(requestLines.every((entry) => typeof entry.reqId === "string")).toBe(true);
  });
});
