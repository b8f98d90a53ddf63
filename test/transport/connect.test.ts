/**
 * The Connect clients over every protocol the port serves: Connect (JSON and binary,
 * HTTP/1.1 and h2c), gRPC (h2c) and gRPC-Web (HTTP/1.1). Errors keep the RPC
 * conventions: Connect codes and structured details.
 */
import { Code, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/audit/v1/admin_pb.js";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MISSING_KEY = "Missing API key. Provide a Bearer token or X-Project-Key header";
const CALL = { timeoutMs: 15_000 };

interface TransportCase {
  name: string;
  make(baseUrl: string, sessions: Http2SessionManager[]): Transport;
}

const session = (baseUrl: string, sessions: Http2SessionManager[]) => {
  const manager = new Http2SessionManager(baseUrl);
  sessions.push(manager);
  return manager;
};

const TRANSPORTS: TransportCase[] = [
  {
    name: "Connect JSON over HTTP/1.1",
    make: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  },
  {
    name: "Connect binary over HTTP/1.1",
    make: (baseUrl) =>
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
  },
  {
    name: "Connect JSON over HTTP/2 cleartext",
    make: (baseUrl, sessions) =>
      createConnectTransport({
        baseUrl,
        httpVersion: "2",
        sessionManager: session(baseUrl, sessions),
      }),
  },
  {
    name: "Connect binary over HTTP/2 cleartext",
    make: (baseUrl, sessions) =>
      createConnectTransport({
        baseUrl,
        httpVersion: "2",
        useBinaryFormat: true,
        sessionManager: session(baseUrl, sessions),
      }),
  },
  {
    name: "gRPC over HTTP/2 cleartext",
    make: (baseUrl, sessions) =>
      createGrpcTransport({ baseUrl, sessionManager: session(baseUrl, sessions) }),
  },
  {
    name: "gRPC-Web over HTTP/1.1",
    make: (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  },
];

describe("Connect clients on the shared port", () => {
  let server: TestServer;
  const sessions: Http2SessionManager[] = [];

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    for (const manager of sessions) manager.abort();
    await server?.close();
  });

  describe.each(TRANSPORTS)("$name", (transportCase) => {
    const ingest = () => createClient(IngestService, transportCase.make(server.url, sessions));
    const admin = () => createClient(AdminService, transportCase.make(server.url, sessions));

    it("CreateEvent returns a UUIDv7 eventId and an ISO receivedAt", async () => {
      const key = await server.provision();
      const before = Date.now();
      const reply = await ingest().createEvent(validEvent(), {
        ...CALL,
        headers: { authorization: `Bearer ${key.secret}` },
      });
      expect(reply.eventId).toMatch(UUID);
      const receivedAt = Date.parse(reply.receivedAt);
      expect(receivedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(receivedAt).toBeLessThanOrEqual(Date.now() + 1000);
    });

    it("CreateEvent accepts the x-project-key header", async () => {
      const key = await server.provision();
      const reply = await ingest().createEvent(validEvent(), {
        ...CALL,
        headers: { "x-project-key": key.secret },
      });
      expect(reply.eventId).toMatch(UUID);
    });

    it("a missing key is Unauthenticated with the spec's message", async () => {
      const error = await rpcFailure(ingest().createEvent(validEvent(), CALL));
      expect(error.code).toBe(Code.Unauthenticated);
      expect(error.rawMessage).toBe(MISSING_KEY);
    });

    it("a revoked key is PermissionDenied", async () => {
      const key = await server.provision();
      await server.admin.revokeApiKey({ id: key.keyId });
      const error = await rpcFailure(
        ingest().createEvent(validEvent(), {
          ...CALL,
          headers: { authorization: `Bearer ${key.secret}` },
        }),
      );
      expect(error.code).toBe(Code.PermissionDenied);
      expect(error.rawMessage).toBe("API key has been revoked");
    });

    it("an invalid event is InvalidArgument with BadRequest field violations", async () => {
      const key = await server.provision();
      const error = await rpcFailure(
        ingest().createEvent(
          { action: "legacy.action", entityType: "t".repeat(65), actorType: "robot" },
          { ...CALL, headers: { authorization: `Bearer ${key.secret}` } },
        ),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe("Validation failed");
      const [badRequest, ...more] = error.findDetails(BadRequestSchema);
      expect(more).toHaveLength(0);
      const violations = (badRequest?.fieldViolations ?? []).map((v) => [v.field, v.reason]);
      expect(violations).toEqual(
        expect.arrayContaining([
          ["entityType", "too_big"],
          ["entityId", "invalid_type"],
          ["actorType", "invalid_enum_value"],
          ["actorId", "invalid_type"],
        ]),
      );
      expect(violations).toHaveLength(4);
    });

    it("an idempotency-key header replays the original eventId", async () => {
      const key = await server.provision();
      const headers = {
        authorization: `Bearer ${key.secret}`,
        "idempotency-key": `connect-${key.keyId}`,
      };
      const client = ingest();
      const first = await client.createEvent(validEvent(), { ...CALL, headers });
      let replayed: string | null = null;
      const second = await client.createEvent(validEvent(), {
        ...CALL,
        headers,
        onHeader: (received) => {
          replayed = received.get("idempotent-replayed");
        },
      });
      expect(second.eventId).toBe(first.eventId);
      expect(second.receivedAt).toBe(first.receivedAt);
      expect(replayed).toBe("true");

      const conflict = await rpcFailure(
        client.createEvent(validEvent({ entityId: "another" }), { ...CALL, headers }),
      );
      expect(conflict.code).toBe(Code.AlreadyExists);
      expect(conflict.rawMessage).toBe(
        "Idempotency key conflict: same key used with different body",
      );
    });

    it("AdminService without the admin token is Unauthenticated", async () => {
      const error = await rpcFailure(admin().listProjects({}, CALL));
      expect(error.code).toBe(Code.Unauthenticated);
      expect(error.rawMessage).toBe("Missing admin token");
    });

    it("AdminService with a wrong token, or an API key as token, is Unauthenticated", async () => {
      const key = await server.provision();
      const wrong = await rpcFailure(
        admin().createProject(
          { name: "intruder" },
          { ...CALL, headers: { authorization: `Bearer ${server.adminToken}x` } },
        ),
      );
      const apiKey = await rpcFailure(
        admin().listApiKeys(
          { projectId: key.projectId },
          { ...CALL, headers: { authorization: `Bearer ${key.secret}` } },
        ),
      );
      expect([wrong.code, wrong.rawMessage]).toEqual([Code.Unauthenticated, "Invalid admin token"]);
      expect([apiKey.code, apiKey.rawMessage]).toEqual([
        Code.Unauthenticated,
        "Invalid admin token",
      ]);
      // Nothing was created by the refused call.
      const { projects } = await server.admin.listProjects({});
      expect(projects.map((p) => p.name)).not.toContain("intruder");
    });

    it("AdminService with the admin token answers", async () => {
      const key = await server.provision();
      const { apiKeys } = await admin().listApiKeys(
        { projectId: key.projectId },
        { ...CALL, headers: { authorization: `Bearer ${server.adminToken}` } },
      );
      expect(apiKeys.map((k) => k.id)).toEqual([key.keyId]);
      expect(JSON.stringify(apiKeys)).not.toContain(key.secret);
    });
  });
});
