/**
 * With TLS_CERT_FILE/TLS_KEY_FILE the port speaks TLS, with ALPN choosing h2 or
 * http/1.1. The certificate is self-signed, made at test time with openssl, and every
 * client verifies the server against it.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, Code } from "@connectrpc/connect";
import { Http2SessionManager } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdminService, Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { createIngestClient, type IngestClient } from "../support/grpc-ingest-client.js";
import { h1Request, h2Close, h2Connect, h2Request } from "../support/raw-http.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { makeCertificate } from "../support/tls-certificate.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const HSTS = "max-age=31536000; includeSubDomains";

describe("TLS with ALPN on the service port", () => {
  let dir: string;
  let cert: Buffer;
  let server: TestServer;
  let origin: string;
  let admin: Client<typeof AdminService>;
  let grpcClient: IngestClient;
  const sessions: Http2SessionManager[] = [];

  /** A new project and test key, through AdminService over Connect on TLS. */
  const provision = async () => {
    const { project } = await admin.createProject({ name: "tls", plan: Plan.PRO });
    const created = await admin.createApiKey({
      projectId: project?.id ?? "",
      environment: Environment.TEST,
    });
    return { keyId: created.apiKey?.id ?? "", secret: created.secret };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "audit-tls-"));
    const certFile = join(dir, "cert.pem");
    const keyFile = join(dir, "key.pem");
    await makeCertificate(certFile, keyFile);
    cert = await readFile(certFile);
    server = await startTestServer({ TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile });
    origin = `https://127.0.0.1:${server.port}`;
    admin = createAdminClient(origin, server.adminToken, { tls: { ca: cert } });
    grpcClient = createIngestClient(`127.0.0.1:${server.port}`, grpc.credentials.createSsl(cert), {
      "grpc.ssl_target_name_override": "localhost",
    });
  });
  afterAll(async () => {
    grpcClient?.close();
    for (const manager of sessions) manager.abort();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("HTTPS/1.1 (ALPN http/1.1): REST CreateEvent is 201 with Strict-Transport-Security", async () => {
    const key = await provision();
    const response = await h1Request(
      {
        host: "127.0.0.1",
        port: server.port,
        servername: "localhost",
        ca: cert,
        ALPNProtocols: ["http/1.1"],
        method: "POST",
        path: "/api/ingest/event",
        headers: { "content-type": "application/json", authorization: `Bearer ${key.secret}` },
        agent: false,
      },
      JSON.stringify(validEvent()),
      true,
    );
    expect(response.alpnProtocol).toBe("http/1.1");
    expect(response.status).toBe(201);
    expect(response.headers["strict-transport-security"]).toBe(HSTS);
    expect((JSON.parse(response.body) as { eventId: string }).eventId).toMatch(UUID);
  });

  it("HTTPS without ALPN falls back to HTTP/1.1; errors carry HSTS too", async () => {
    const response = await h1Request(
      {
        host: "127.0.0.1",
        port: server.port,
        ca: cert,
        method: "POST",
        path: "/api/ingest/event",
        headers: { "content-type": "application/json" },
        agent: false,
      },
      JSON.stringify(validEvent()),
      true,
    );
    expect(response.alpnProtocol).toBe(false);
    expect(response.status).toBe(401);
    expect(response.headers["strict-transport-security"]).toBe(HSTS);
    expect(JSON.parse(response.body)).toEqual({
      error: "Missing API key. Provide a Bearer token or X-Project-Key header",
    });
  });

  it("HTTP/2 over TLS (ALPN h2): REST CreateEvent and the probes work", async () => {
    const key = await provision();
    const session = await h2Connect(origin, { ca: cert });
    const negotiated = session.alpnProtocol;
    const [created, health] = await Promise.all([
      h2Request(
        session,
        {
          ":method": "POST",
          ":path": "/api/ingest/event",
          "content-type": "application/json",
          "x-project-key": key.secret,
        },
        JSON.stringify(validEvent()),
      ),
      h2Request(session, { ":method": "GET", ":path": "/healthz" }),
    ]);
    await h2Close(session);
    expect(negotiated).toBe("h2");
    expect(created.status).toBe(201);
    expect(created.headers["strict-transport-security"]).toBe(HSTS);
    expect((JSON.parse(created.body) as { eventId: string }).eventId).toMatch(UUID);
    expect(health.status).toBe(200);
  });

  it("grpc-js with SSL credentials (the certificate as root) calls CreateEvent", async () => {
    const key = await provision();
    const ok = await grpcClient.createEvent(validEvent(), {
      authorization: `Bearer ${key.secret}`,
    });
    expect(ok.ok ? ok.reply.eventId : ok.error.message).toMatch(UUID);

    const refused = await grpcClient.createEvent(validEvent());
    expect(refused.ok ? "ok" : refused.error.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("Connect's gRPC transport over TLS calls CreateEvent", async () => {
    const key = await provision();
    const manager = new Http2SessionManager(origin, {}, { ca: cert });
    sessions.push(manager);
    const client = rpcClient(IngestService, origin, "grpc", { sessionManager: manager });
    const reply = await client.createEvent(validEvent(), {
      timeoutMs: 15_000,
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(reply.eventId).toMatch(UUID);
    const error = await rpcFailure(client.createEvent(validEvent(), { timeoutMs: 15_000 }));
    expect(error?.code).toBe(Code.Unauthenticated);
  });

  it("the TLS port does not answer cleartext HTTP", async () => {
    const outcome = await fetch(`http://127.0.0.1:${server.port}/healthz`, {
      signal: AbortSignal.timeout(15_000),
    }).then(
      (response) => `answered ${response.status}`,
      (error: unknown) => (error instanceof Error ? error.name : "failed"),
    );
    expect(outcome).toBe("TypeError");
  });
});
