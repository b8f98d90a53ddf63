/**
 * Plain HTTP on the shared port: request ids, probes, metrics, 404 and 405 bodies,
 * HTTP/1.1 keep-alive, and REST over HTTP/2 cleartext with prior knowledge.
 */
import { randomBytes } from "node:crypto";
import * as http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseExposition } from "../support/prometheus.js";
import { h1Request, h2Close, h2Connect, h2Request } from "../support/raw-http.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CONNECT_CREATE = "/audit.v1.IngestService/CreateEvent";
/** A fresh 15 s deadline for one fetch. */
const deadline = () => ({ signal: AbortSignal.timeout(15_000) });

describe("HTTP on the shared port", () => {
  let server: TestServer;
  let key: ProvisionedKey;

  beforeAll(async () => {
    server = await startTestServer();
    key = await server.provision();
  });
  afterAll(async () => {
    await server?.close();
  });

  /** The requests whose responses must carry X-Request-Id, with the status they get. */
  const CASES: {
    name: string;
    status: number;
    send(headers: Record<string, string>): Promise<Response>;
  }[] = [
    {
      name: "REST success",
      status: 201,
      send: (headers) =>
        fetch(`${server.url}/api/ingest/event`, {
          ...deadline(),
          method: "POST",
          headers: {
            ...headers,
            "content-type": "application/json",
            authorization: `Bearer ${key.secret}`,
          },
          body: JSON.stringify(validEvent()),
        }),
    },
    {
      name: "REST error",
      status: 401,
      send: (headers) =>
        fetch(`${server.url}/api/ingest/event`, {
          ...deadline(),
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify(validEvent()),
        }),
    },
    {
      name: "REST 404",
      status: 404,
      send: (headers) => fetch(`${server.url}/api/nothing-here`, { ...deadline(), headers }),
    },
    {
      name: "Connect success",
      status: 200,
      send: (headers) =>
        fetch(`${server.url}${CONNECT_CREATE}`, {
          ...deadline(),
          method: "POST",
          headers: {
            ...headers,
            "content-type": "application/json",
            authorization: `Bearer ${key.secret}`,
          },
          body: JSON.stringify(validEvent()),
        }),
    },
    {
      name: "Connect error",
      status: 401,
      send: (headers) =>
        fetch(`${server.url}${CONNECT_CREATE}`, {
          ...deadline(),
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify(validEvent()),
        }),
    },
    {
      name: "Connect 404 (unknown procedure)",
      status: 404,
      send: (headers) =>
        fetch(`${server.url}/audit.v1.IngestService/DeleteEverything`, {
          ...deadline(),
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: "{}",
        }),
    },
  ];

  describe.each(CASES)("X-Request-Id on a $name response", ({ status, send }) => {
    it("echoes the id the client sent", async () => {
      const sent = `test-${randomBytes(6).toString("hex")}`;
      const response = await send({ "x-request-id": sent });
      await response.arrayBuffer();
      expect(response.status).toBe(status);
      expect(response.headers.get("x-request-id")).toBe(sent);
    });

    it("generates a UUID when the client sent none", async () => {
      const first = await send({});
      const second = await send({});
      await Promise.all([first.arrayBuffer(), second.arrayBuffer()]);
      expect([first.status, second.status]).toEqual([status, status]);
      const ids = [first.headers.get("x-request-id"), second.headers.get("x-request-id")];
      expect(ids[0]).toMatch(UUID_V4);
      expect(ids[1]).toMatch(UUID_V4);
      expect(ids[0]).not.toBe(ids[1]);
    });
  });

  it("replaces a request id that is not a safe token with a generated one", async () => {
    const response = await fetch(`${server.url}/healthz`, {
      ...deadline(),
      headers: { "x-request-id": `${"x".repeat(129)}` },
    });
    await response.arrayBuffer();
    expect(response.headers.get("x-request-id")).toMatch(UUID_V4);
  });

  it("cleartext responses carry no Strict-Transport-Security (RFC 6797 7.2)", async () => {
    const created = await postEvent(server, validEvent(), {
      authorization: `Bearer ${key.secret}`,
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("strict-transport-security")).toBeNull();
  });

  it("GET /healthz answers 200 JSON", async () => {
    const response = await fetch(`${server.url}/healthz`, deadline());
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it("GET /readyz answers 200 JSON with the database check (and Redis when configured)", async () => {
    const response = await fetch(`${server.url}/readyz`, deadline());
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await response.json()) as { status: string; checks: Record<string, string> };
    expect(body.status).toBe("ok");
    expect(body.checks.database).toBe("ok");
    // Issue 2: "/readyz (checks the database and Redis when configured)".
    if (process.env.REDIS_URL) expect(body.checks.redis).toBe("ok");
    else expect(body.checks).not.toHaveProperty("redis");
  });

  it("GET /metrics counts requests by route and status, latency, and ingested events", async () => {
    const read = async () => {
      const response = await fetch(`${server.url}/metrics`, deadline());
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
      return parseExposition(await response.text());
    };
    const rest = { route: "/api/ingest/event", method: "POST", status: "201" };
    const rpc = { route: CONNECT_CREATE, method: "POST", status: "200" };
    const unauthenticated = { route: "/api/ingest/event", method: "POST", status: "401" };
    const before = await read();

    expect(
      (await postEvent(server, validEvent(), { authorization: `Bearer ${key.secret}` })).status,
    ).toBe(201);
    expect((await postEvent(server, validEvent())).status).toBe(401);
    const rpcResponse = await fetch(`${server.url}${CONNECT_CREATE}`, {
      ...deadline(),
      method: "POST",
      headers: { "content-type": "application/json", "x-project-key": key.secret },
      body: JSON.stringify(validEvent()),
    });
    await rpcResponse.arrayBuffer();
    expect(rpcResponse.status).toBe(200);
    const unknownPath = `/no-such-route-${randomBytes(4).toString("hex")}`;
    await (await fetch(`${server.url}${unknownPath}`, deadline())).arrayBuffer();

    const after = await read();
    expect(after.types.get("http_requests_total")).toBe("counter");
    expect(after.types.get("http_request_duration_seconds")).toBe("histogram");
    expect(after.types.get("audit_events_ingested_total")).toBe("counter");

    const delta = (name: string, labels: Record<string, string>) =>
      after.value(name, labels) - before.value(name, labels);
    expect(delta("http_requests_total", rest)).toBe(1);
    expect(delta("http_requests_total", unauthenticated)).toBe(1);
    expect(delta("http_requests_total", rpc)).toBe(1);
    expect(delta("http_request_duration_seconds_count", { route: "/api/ingest/event" })).toBe(2);
    expect(
      delta("http_request_duration_seconds_bucket", { route: "/api/ingest/event", le: "+Inf" }),
    ).toBe(2);
    expect(delta("http_request_duration_seconds_count", { route: CONNECT_CREATE })).toBe(1);
    expect(
      after.value("http_request_duration_seconds_sum", { route: "/api/ingest/event" }),
    ).toBeGreaterThan(0);
    expect(delta("audit_events_ingested_total", { environment: "test" })).toBe(2);
    // Unknown paths share one label, so a scanner cannot grow the series without bound.
    expect(after.samples.some((s) => s.labels.route === unknownPath)).toBe(false);
    expect(
      after.samples.some((s) => s.name === "http_requests_total" && s.labels.status === "404"),
    ).toBe(true);
  });

  it.each([
    ["GET", "/does-not-exist"],
    ["POST", "/api/nope"],
    ["GET", "/api/ingest"],
    ["GET", "/api/ingest/event/extra"],
  ])("an unknown route (%s %s) is a 404 JSON error", async (method, path) => {
    const response = await fetch(`${server.url}${path}`, { ...deadline(), method });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({ error: "Not found" });
  });

  it.each(["GET", "PUT", "DELETE"])(
    "%s on the ingest route is a 405 JSON error",
    async (method) => {
      const response = await fetch(`${server.url}/api/ingest/event`, { ...deadline(), method });
      expect(response.status).toBe(405);
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await response.json()) as Record<string, unknown>;
      expect(body).toEqual({ error: expect.any(String) });
    },
  );

  it("a 405 names the allowed method in an Allow header (RFC 9110 15.5.6)", async () => {
    const response = await fetch(`${server.url}/api/ingest/event`, deadline());
    await response.arrayBuffer();
    expect(response.status).toBe(405);
    expect(response.headers.get("allow") ?? "").toMatch(/\bPOST\b/);
  });

  it("HTTP/1.1 keep-alive serves several requests, errors included, on one connection", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const base = { host: "127.0.0.1", port: server.port, agent };
    const json = { "content-type": "application/json" };
    const body = JSON.stringify(validEvent());
    const responses = [];
    responses.push(
      await h1Request(
        {
          ...base,
          method: "POST",
          path: "/api/ingest/event",
          headers: { ...json, authorization: `Bearer ${key.secret}` },
        },
        body,
      ),
    );
    responses.push(await h1Request({ ...base, method: "GET", path: "/healthz" }));
    responses.push(
      await h1Request({ ...base, method: "POST", path: "/api/ingest/event", headers: json }, body),
    );
    responses.push(await h1Request({ ...base, method: "GET", path: "/nowhere" }));
    responses.push(
      await h1Request(
        {
          ...base,
          method: "POST",
          path: CONNECT_CREATE,
          headers: { ...json, "x-project-key": key.secret },
        },
        body,
      ),
    );
    responses.push(
      await h1Request(
        {
          ...base,
          method: "POST",
          path: "/api/ingest/event",
          headers: { ...json, "x-project-key": key.secret },
        },
        body,
      ),
    );
    agent.destroy();

    expect(responses.map((r) => r.status)).toEqual([201, 200, 401, 404, 200, 201]);
    expect(responses.map((r) => r.reusedSocket)).toEqual([false, true, true, true, true, true]);
    expect(new Set(responses.map((r) => r.localPort)).size).toBe(1);
    expect(responses.every((r) => r.headers.connection !== "close")).toBe(true);
  });

  it("REST over HTTP/2 cleartext with prior knowledge works, streams multiplexed", async () => {
    const session = await h2Connect(server.url);
    const post = (requestId: string) =>
      h2Request(
        session,
        {
          ":method": "POST",
          ":path": "/api/ingest/event",
          "content-type": "application/json",
          authorization: `Bearer ${key.secret}`,
          "x-request-id": requestId,
        },
        JSON.stringify(validEvent()),
      );
    const [first, second, health, missing] = await Promise.all([
      post("h2-first"),
      post("h2-second"),
      h2Request(session, { ":method": "GET", ":path": "/healthz" }),
      h2Request(session, { ":method": "GET", ":path": "/nowhere" }),
    ]);
    await h2Close(session);

    expect([first.status, second.status, health.status, missing.status]).toEqual([
      201, 201, 200, 404,
    ]);
    expect(first.headers["x-request-id"]).toBe("h2-first");
    expect(second.headers["x-request-id"]).toBe("h2-second");
    expect(missing.headers["x-request-id"]).toMatch(UUID_V4);
    expect(first.headers["content-type"]).toMatch(/^application\/json/);
    const a = JSON.parse(first.body) as Record<string, string>;
    const b = JSON.parse(second.body) as Record<string, string>;
    expect(a.eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.eventId).not.toBe(a.eventId);
    expect(JSON.parse(missing.body)).toEqual({ error: "Not found" });
  });
});
