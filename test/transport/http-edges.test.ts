/**
 * HTTP/1.1 details that clients rely on, through raw sockets and node's own clients:
 * - `Expect: 100-continue` with a body declared over 1 MB gets the 413 at once, never
 *   100 Continue (the client would start uploading what will be refused); a body within
 *   the limit gets 100 Continue and is served;
 * - an absolute-form request target (`POST http://host/api/ingest/event`) is routed by
 *   its path (RFC 9112 section 3.2.2);
 * - HEAD on GET /api/events answers as GET without the body; 405 lists HEAD with GET
 *   (other methods on the probes too);
 * - a compressed request body (`Content-Encoding: gzip`) is refused with a message that
 *   says so, and nothing is stored.
 */
import * as net from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, listedEvents } from "../events/events-client.js";
import { rawRequest } from "../security/raw-client.js";
import { h1Request, h2Close, h2Connect } from "../support/raw-http.js";
import {
  type ProvisionedKey,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const MB = 1024 * 1024;

let server: TestServer;
let key: ProvisionedKey;

beforeAll(async () => {
  server = await startTestServer();
  key = await server.provision();
});

afterAll(async () => {
  await server?.close();
});

/** Sends `head` (request line and headers) and resolves with the first bytes answered. */
function firstAnswer(head: string): Promise<{ text: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, "127.0.0.1");
    socket.once("error", reject);
    socket.once("data", (chunk: Buffer) => resolve({ text: chunk.toString("latin1"), socket }));
    socket.once("connect", () => socket.write(head));
  });
}

const ingestHead = (contentLength: number) =>
  [
    "POST /api/ingest/event HTTP/1.1",
    "Host: 127.0.0.1",
    `Authorization: Bearer ${key.secret}`,
    "Content-Type: application/json",
    `Content-Length: ${contentLength}`,
    "Expect: 100-continue",
    "",
    "",
  ].join("\r\n");

describe("Expect: 100-continue", () => {
  it("a body declared over 1 MB gets 413 at once, without 100 Continue", async () => {
    const { text, socket } = await firstAnswer(ingestHead(2 * MB));
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toContain('{"error":"Request payload too large"}');
  });

  it("a body within the limit gets 100 Continue, then its 201", async () => {
    const body = JSON.stringify(validEvent({ actorId: "continued" }));
    const { text, socket } = await firstAnswer(ingestHead(Buffer.byteLength(body)));
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    const answer = new Promise<string>((resolve) => {
      let received = "";
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1");
        if (received.includes("\r\n\r\n{") && received.endsWith("}")) resolve(received);
      });
    });
    socket.write(body);
    expect(await answer).toMatch(/^HTTP\/1\.1 201 /);
    socket.destroy();
    expect(await listedEvents(server, bearer(key.secret), { actorId: "continued" })).toHaveLength(
      1,
    );
  });
});

describe("Expect: 100-continue over HTTP/2", () => {
  it("a body declared over 1 MB gets 413 without 100 Continue; other expectations are served", async () => {
    const session = await h2Connect(server.url);
    const answer = (headers: Record<string, string>, body?: string) =>
      new Promise<{ status: number; interim: number[] }>((resolve, reject) => {
        const interim: number[] = [];
        const stream = session.request({
          ":method": "POST",
          ":path": "/api/ingest/event",
          authorization: `Bearer ${key.secret}`,
          "content-type": "application/json",
          ...headers,
        });
        stream.on("continue", () => interim.push(100));
        stream.on("response", (received) => {
          resolve({ status: Number(received[":status"]), interim });
          stream.close();
        });
        stream.on("error", reject);
        if (body !== undefined) stream.end(body);
      });
    const tooLarge = await answer({ expect: "100-continue", "content-length": String(2 * MB) });
    expect(tooLarge).toEqual({ status: 413, interim: [] });
    const body = JSON.stringify(validEvent({ actorId: "h2-expect" }));
    const odd = await answer({ expect: "something-else" }, body);
    expect(odd.status).toBe(201);
    await h2Close(session);
  });
});

describe("an RPC over the size limit on HTTP/2", () => {
  it.each([
    ["gRPC", "application/grpc"],
    ["Connect JSON", "application/json"],
  ])(
    "%s: refused, and its stream ended within 5 s (the rest read and dropped, or cancelled)",
    async (_name, contentType) => {
      const session = await h2Connect(server.url);
      const outcome = await new Promise<{ status: number; grpcStatus: unknown; closed: boolean }>(
        (resolve, reject) => {
          let status = 0;
          let grpcStatus: unknown;
          const stream = session.request({
            ":method": "POST",
            ":path": "/audit.v1.IngestService/CreateEvent",
            "content-type": contentType,
            te: "trailers",
            authorization: `Bearer ${key.secret}`,
          });
          stream.on("response", (headers) => {
            status = Number(headers[":status"]);
            grpcStatus ??= headers["grpc-status"];
          });
          stream.on("trailers", (trailers) => {
            grpcStatus = trailers["grpc-status"];
          });
          stream.on("data", () => {});
          stream.on("error", () => {});
          stream.on("close", () => resolve({ status, grpcStatus, closed: true }));
          setTimeout(() => reject(new Error("the stream stayed open")), 8_000).unref();
          // 2 MB, over the 1 MB limit: refused on its first bytes, the rest read and dropped.
          const size = 2 * MB;
          const envelope = Buffer.alloc(5 + size);
          envelope.writeUInt32BE(size, 1);
          stream.end(contentType === "application/grpc" ? envelope : Buffer.alloc(size, 32));
        },
      );
      expect(outcome.closed).toBe(true);
      if (contentType === "application/grpc") expect(outcome.grpcStatus).toBe("8");
      // Connect answers resource_exhausted with HTTP 429.
      else expect(outcome.status).toBe(429);
      await h2Close(session);
    },
  );
});

describe("absolute-form request target", () => {
  it("POST http://host/api/ingest/event is served like /api/ingest/event", async () => {
    const body = JSON.stringify(validEvent({ actorId: "absolute" }));
    const response = await rawRequest(server.port, {
      method: "POST",
      path: `http://127.0.0.1:${server.port}/api/ingest/event`,
      headers: [
        ["Authorization", `Bearer ${key.secret}`],
        ["Content-Type", "application/json"],
      ],
      body,
    });
    expect(response.status).toBe(201);
    expect(JSON.parse(response.body)).toEqual({
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      receivedAt: expect.any(String),
    });
  });

  it("its path is taken as sent, not normalised: /api/x/../events is unknown, as in origin form", async () => {
    const response = await rawRequest(server.port, {
      method: "GET",
      path: `http://127.0.0.1:${server.port}/api/x/../events`,
      headers: [["Authorization", `Bearer ${key.secret}`]],
    });
    expect(response.status).toBe(404);
  });

  it("its query string is kept: GET http://host/api/events?actorId=...", async () => {
    const response = await rawRequest(server.port, {
      method: "GET",
      path: `http://127.0.0.1:${server.port}/api/events?actorId=absolute`,
      headers: [["Authorization", `Bearer ${key.secret}`]],
    });
    expect(response.status).toBe(200);
    const listed = JSON.parse(response.body) as { events: { actorId: string }[] };
    expect(listed.events.map((event) => event.actorId)).toEqual(["absolute"]);
  });
});

describe("HEAD", () => {
  it.each(["/healthz", "/readyz", "/metrics"])(
    "HEAD %s answers as GET, without a body",
    async (path) => {
      const options = { host: "127.0.0.1", port: server.port, path };
      const get = await h1Request({ ...options, method: "GET" });
      const head = await h1Request({ ...options, method: "HEAD" });
      expect(get.status).toBe(200);
      expect(head.status).toBe(200);
      expect(head.body).toBe("");
      expect(head.headers["content-type"]).toBe(get.headers["content-type"]);
    },
  );

  it("HEAD /api/events answers as GET, without a body", async () => {
    const options = {
      host: "127.0.0.1",
      port: server.port,
      path: "/api/events?limit=1",
      headers: bearer(key.secret),
    };
    const get = await h1Request({ ...options, method: "GET" });
    const head = await h1Request({ ...options, method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    expect(head.headers["content-type"]).toBe(get.headers["content-type"]);
    expect(head.headers["content-length"]).toBe(get.headers["content-length"]);
  });

  it("HEAD /api/events without credentials is 401, as GET", async () => {
    const head = await h1Request({
      host: "127.0.0.1",
      port: server.port,
      path: "/api/events",
      method: "HEAD",
    });
    expect(head.status).toBe(401);
    expect(head.body).toBe("");
  });

  it.each(["POST", "PUT", "DELETE"])(
    "%s on a probe is 405 listing GET and HEAD, on every probe",
    async (method) => {
      for (const path of ["/healthz", "/readyz", "/metrics"]) {
        const response = await fetch(`${server.url}${path}`, { method });
        expect(response.status, `${method} ${path}`).toBe(405);
        expect(response.headers.get("allow")).toBe("GET, HEAD");
        expect(await response.json()).toEqual({ error: "Method not allowed" });
      }
    },
  );

  it.each(["GET", "PUT", "OPTIONS"])(
    "%s on an RPC procedure is 405 listing POST, with the JSON error",
    async (method) => {
      for (const path of [
        "/audit.v1.IngestService/CreateEvent",
        "/audit.v1.AdminService/CreateProject",
      ]) {
        const response = await fetch(`${server.url}${path}`, { method });
        expect(response.status, `${method} ${path}`).toBe(405);
        expect(response.headers.get("allow")).toBe("POST");
        expect(await response.json()).toEqual({ error: "Method not allowed" });
      }
    },
  );

  it("405 on /api/events lists GET, HEAD and OPTIONS, as its OPTIONS answer does", async () => {
    for (const path of [
      "/api/events",
      "/api/events/export",
      "/api/events/stream",
      "/api/log/checkpoint",
    ]) {
      const response = await fetch(`${server.url}${path}`, { method: "PUT" });
      expect(response.status, path).toBe(405);
      expect(response.headers.get("allow"), path).toBe("GET, HEAD, OPTIONS");
      expect(await response.json()).toEqual({ error: "Method not allowed" });
      const options = await fetch(`${server.url}${path}`, { method: "OPTIONS" });
      expect(options.status, path).toBe(204);
      expect(options.headers.get("allow"), path).toBe("GET, HEAD, OPTIONS");
    }
    // A procedure that answers cross-origin calls lists OPTIONS beside POST.
    const listEvents = await fetch(`${server.url}/audit.v1.EventService/ListEvents`, {
      method: "GET",
    });
    expect(listEvents.status).toBe(405);
    expect(listEvents.headers.get("allow")).toBe("POST, OPTIONS");
  });
});

describe("Content-Encoding", () => {
  it.each(["gzip", "br", "deflate, gzip"])(
    "a body sent with Content-Encoding: %s is refused with 400 saying why",
    async (coding) => {
      const response = await fetch(`${server.url}/api/ingest/event`, {
        method: "POST",
        headers: {
          ...bearer(key.secret),
          "content-type": "application/json",
          "content-encoding": coding,
        },
        body: gzipSync(JSON.stringify(validEvent({ actorId: "compressed" }))),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: "Content-Encoding is not supported: send the body uncompressed",
      });
      expect(await listedEvents(server, bearer(key.secret), { actorId: "compressed" })).toEqual([]);
    },
  );

  it("Content-Encoding: identity is the body as sent", async () => {
    const response = await fetch(`${server.url}/api/ingest/event`, {
      method: "POST",
      headers: {
        ...bearer(key.secret),
        "content-type": "application/json",
        "content-encoding": "identity",
      },
      body: JSON.stringify(validEvent({ actorId: "identity" })),
    });
    expect(response.status).toBe(201);
  });
});
