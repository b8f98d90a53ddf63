/**
 * Production mode (NODE_ENV=production, spec section 7, DESIGN 4.1): plain HTTP gets 400
 * `HTTPS is required` on every route but the probes and metrics (which answer before the
 * check, so that an orchestrator can probe the port), RPCs in their own protocol's error
 * (Connect `invalid_argument`, gRPC INVALID_ARGUMENT); `X-Forwarded-Proto: https` counts
 * only with TRUST_PROXY; Strict-Transport-Security is sent on HTTPS responses (real TLS
 * or a trusted forwarded https) and never on cleartext ones.
 *
 * The admin API is refused over plain HTTP in production too, so keys are made through
 * the project store of the running app.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/auth/api-keys.js";
import { createIngestClient } from "../support/grpc-ingest-client.js";
import { h1Request } from "../support/raw-http.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { makeCertificate } from "../support/tls-certificate.js";
import { totalEvents } from "./raw-client.js";

// Production mode; the acknowledgement lets it run on the embedded default too (the suite's
// first pass), which refuses to start without it (test/process/start-errors.test.ts).
const PRODUCTION = { NODE_ENV: "production", EMBEDDED_IN_PRODUCTION: "1" };
const HTTPS_REQUIRED = { error: "HTTPS is required" };
const HSTS = "max-age=31536000; includeSubDomains";

/** A project with one test key, made directly in the store (no admin API over HTTP). */
async function provisionDirect(server: TestServer): Promise<string> {
  const project = await server.app.projects.createProject("production test", "pro");
  const key = generateApiKey("test");
  await server.app.projects.createApiKey({
    projectId: project.id,
    environment: "test",
    keyHash: key.hash,
    prefix: key.prefix,
  });
  return key.secret;
}

interface Sent {
  status: number;
  body: Record<string, unknown>;
  hsts: string | undefined;
}

/** One HTTP/1.1 request; the body parsed as JSON. */
async function send(
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Sent> {
  const response = await h1Request(
    {
      host: "127.0.0.1",
      port: server.port,
      method,
      path,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      agent: false,
    },
    body === undefined ? undefined : JSON.stringify(body),
  );
  const hsts = response.headers["strict-transport-security"];
  return {
    status: response.status,
    body: JSON.parse(response.body) as Record<string, unknown>,
    hsts: typeof hsts === "string" ? hsts : undefined,
  };
}

/** The routes a plain-HTTP client must be refused on with the REST error: ingest, list, unknown. */
const REFUSED: [what: string, method: string, path: string, body?: unknown][] = [
  ["Create Event", "POST", "/api/ingest/event", validEvent()],
  ["List Events", "GET", "/api/events"],
  ["Create Frontend Token", "POST", "/api/tokens/frontend", {}],
  ["a path that does not exist", "GET", "/no/such/path"],
];

describe("production mode without a trusted proxy", () => {
  let server: TestServer;
  let secret: string;

  beforeAll(async () => {
    server = await startTestServer(PRODUCTION);
    secret = await provisionDirect(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(REFUSED)(
    "plain HTTP to %s: 400 HTTPS is required, no HSTS",
    async (_what, method, path, body) => {
      const before = await totalEvents(server);
      const response = await send(
        server,
        method,
        path,
        { authorization: `Bearer ${secret}` },
        body,
      );
      expect(response.status).toBe(400);
      expect(response.body).toEqual(HTTPS_REQUIRED);
      expect(response.hsts).toBeUndefined();
      expect(await totalEvents(server)).toBe(before);
    },
  );

  it.each([
    ["Create Event", "/audit.v1.IngestService/CreateEvent", validEvent()],
    ["an admin RPC", "/audit.v1.AdminService/ListProjects", {}],
  ])(
    "plain HTTP to %s over Connect: its own error, invalid_argument HTTPS is required",
    async (_what, path, body) => {
      const before = await totalEvents(server);
      for (const forwarded of [{}, { "x-forwarded-proto": "https" }]) {
        const response = await send(
          server,
          "POST",
          path,
          { authorization: `Bearer ${secret}`, ...forwarded },
          body,
        );
        expect(response.status).toBe(400);
        expect(response.body).toEqual({ code: "invalid_argument", message: "HTTPS is required" });
        expect(response.hsts).toBeUndefined();
      }
      expect(await totalEvents(server)).toBe(before);
    },
  );

  it("plain HTTP over gRPC (a grpc-js client, h2c): INVALID_ARGUMENT HTTPS is required", async () => {
    const before = await totalEvents(server);
    const client = createIngestClient(
      `127.0.0.1:${server.port}`,
      grpc.credentials.createInsecure(),
    );
    try {
      const outcome = await client.createEvent(validEvent(), {
        authorization: `Bearer ${secret}`,
      });
      expect(outcome.ok ? "created" : [outcome.error.code, outcome.error.details]).toEqual([
        grpc.status.INVALID_ARGUMENT,
        "HTTPS is required",
      ]);
    } finally {
      client.close();
    }
    expect(await totalEvents(server)).toBe(before);
  });

  it("X-Forwarded-Proto: https is not believed without TRUST_PROXY: 400, no HSTS, no event", async () => {
    for (const proto of ["https", "HTTPS", "https, http"]) {
      const response = await send(
        server,
        "POST",
        "/api/ingest/event",
        { authorization: `Bearer ${secret}`, "x-forwarded-proto": proto },
        validEvent(),
      );
      expect(response.status).toBe(400);
      expect(response.body).toEqual(HTTPS_REQUIRED);
      expect(response.hsts).toBeUndefined();
    }
    expect(await totalEvents(server)).toBe(0);
  });

  it("without credentials the refusal is still HTTPS is required (it comes first)", async () => {
    const response = await send(server, "POST", "/api/ingest/event", {}, validEvent());
    expect(response.status).toBe(400);
    expect(response.body).toEqual(HTTPS_REQUIRED);
  });

  it("the probes still answer over plain HTTP: /healthz 200, /readyz 200", async () => {
    const health = await send(server, "GET", "/healthz");
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: "ok" });
    expect(health.hsts).toBeUndefined();
    const ready = await send(server, "GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.status).toMatch(/^(ok|degraded)$/);
    expect(ready.hsts).toBeUndefined();
  });
});

describe("production mode behind a trusted proxy (TRUST_PROXY=true)", () => {
  let server: TestServer;
  let secret: string;

  beforeAll(async () => {
    server = await startTestServer({ ...PRODUCTION, TRUST_PROXY: "true" });
    secret = await provisionDirect(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(["https", "HTTPS", "https, http", " https "])(
    "X-Forwarded-Proto: %j is honoured: Create Event 201 and List Events 200, with HSTS",
    async (proto) => {
      const headers = { authorization: `Bearer ${secret}`, "x-forwarded-proto": proto };
      const created = await send(server, "POST", "/api/ingest/event", headers, validEvent());
      expect(created.status).toBe(201);
      expect(created.hsts).toBe(HSTS);
      const listed = await send(server, "GET", "/api/events", headers);
      expect(listed.status).toBe(200);
      expect(listed.hsts).toBe(HSTS);
      expect((listed.body.events as { eventId: string }[]).map((e) => e.eventId)).toContain(
        created.body.eventId,
      );
    },
  );

  it("an RPC whose proxy says https is served: Connect Create Event 200 with HSTS", async () => {
    const response = await send(
      server,
      "POST",
      "/audit.v1.IngestService/CreateEvent",
      { authorization: `Bearer ${secret}`, "x-forwarded-proto": "https" },
      validEvent(),
    );
    expect(response.status).toBe(200);
    expect(response.body.eventId).toEqual(expect.any(String));
    expect(response.hsts).toBe(HSTS);
  });

  it("errors on a forwarded-https request carry HSTS too", async () => {
    const response = await send(
      server,
      "POST",
      "/api/ingest/event",
      { authorization: "Bearer pk_test_wrong", "x-forwarded-proto": "https" },
      validEvent(),
    );
    expect(response.status).toBe(401);
    expect(response.hsts).toBe(HSTS);
  });

  it.each<[string, Record<string, string>]>([
    ["no X-Forwarded-Proto", {}],
    ["X-Forwarded-Proto: http", { "x-forwarded-proto": "http" }],
    [
      "X-Forwarded-Proto: http, https (the first hop counts)",
      { "x-forwarded-proto": "http, https" },
    ],
    ["X-Forwarded-Proto: httpsx", { "x-forwarded-proto": "httpsx" }],
    ["X-Forwarded-Proto empty", { "x-forwarded-proto": "" }],
  ])("%s: 400 HTTPS is required, no HSTS, no event", async (_what, forwarded) => {
    const before = await totalEvents(server);
    const response = await send(
      server,
      "POST",
      "/api/ingest/event",
      { authorization: `Bearer ${secret}`, ...forwarded },
      validEvent(),
    );
    expect(response.status).toBe(400);
    expect(response.body).toEqual(HTTPS_REQUIRED);
    expect(response.hsts).toBeUndefined();
    expect(await totalEvents(server)).toBe(before);
  });
});

describe("production mode over TLS", () => {
  let server: TestServer;
  let secret: string;
  let dir: string;
  let ca: Buffer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "audit-production-tls-"));
    const certFile = join(dir, "cert.pem");
    const keyFile = join(dir, "key.pem");
    await makeCertificate(certFile, keyFile);
    ca = await readFile(certFile);
    server = await startTestServer({
      ...PRODUCTION,
      TLS_CERT_FILE: certFile,
      TLS_KEY_FILE: keyFile,
    });
    secret = await provisionDirect(server);
  });
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("gRPC over TLS (a grpc-js client): the event is created", async () => {
    const client = createIngestClient(`localhost:${server.port}`, grpc.credentials.createSsl(ca));
    try {
      const outcome = await client.createEvent(validEvent(), {
        authorization: `Bearer ${secret}`,
      });
      expect(outcome.ok ? outcome.reply.eventId : outcome.error.details).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      client.close();
    }
  });

  it("HTTPS: Create Event 201 and List Events 200, both with HSTS", async () => {
    const request = (method: string, path: string, body?: string) =>
      h1Request(
        {
          host: "127.0.0.1",
          port: server.port,
          method,
          path,
          ca,
          agent: false,
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        },
        body,
        true,
      );
    const created = await request("POST", "/api/ingest/event", JSON.stringify(validEvent()));
    expect(created.status, created.body).toBe(201);
    expect(created.headers["strict-transport-security"]).toBe(HSTS);
    const listed = await request("GET", "/api/events");
    expect(listed.status).toBe(200);
    expect(listed.headers["strict-transport-security"]).toBe(HSTS);
    expect(listed.body).toContain((JSON.parse(created.body) as { eventId: string }).eventId);
  });
});
