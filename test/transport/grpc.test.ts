/**
 * gRPC over cleartext HTTP/2 (prior knowledge) with an independent client:
 * `@grpc/grpc-js` and the service loaded from our protos by `@grpc/proto-loader`.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIngestClient, type IngestClient } from "../support/grpc-ingest-client.js";
import { badRequestOf, decodeRpcStatus, violatedFields } from "../support/rpc-status.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MISSING_KEY = "Missing API key. Provide a Bearer token or X-Project-Key header";

describe("gRPC (grpc-js + proto-loader) on the shared cleartext port", () => {
  let server: TestServer;
  let client: IngestClient;

  beforeAll(async () => {
    server = await startTestServer();
    client = createIngestClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it("CreateEvent with `authorization: Bearer <key>` metadata returns eventId and receivedAt", async () => {
    const key = await server.provision();
    const before = Date.now();
    const outcome = await client.createEvent(validEvent(), {
      authorization: `Bearer ${key.secret}`,
    });
    expect(outcome.ok ? undefined : outcome.error.details).toBeUndefined();
    if (!outcome.ok) return;
    expect(outcome.reply.eventId).toMatch(UUID);
    const receivedAt = Date.parse(outcome.reply.receivedAt ?? "");
    expect(receivedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(receivedAt).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it("CreateEvent with `x-project-key` metadata succeeds", async () => {
    const key = await server.provision();
    const outcome = await client.createEvent(validEvent({ actionKey: "invoice.paid" }), {
      "x-project-key": key.secret,
    });
    expect(outcome.ok ? undefined : outcome.error.details).toBeUndefined();
    if (!outcome.ok) return;
    expect(outcome.reply.eventId).toMatch(UUID);
    expect(outcome.reply.receivedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
  });

  it("CreateEvent without a key fails with UNAUTHENTICATED and the spec's message", async () => {
    const outcome = await client.createEvent(validEvent());
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(outcome.error.details).toBe(MISSING_KEY);
  });

  it("CreateEvent with a malformed or unknown key fails with UNAUTHENTICATED", async () => {
    const malformed = await client.createEvent(validEvent(), { authorization: "Bearer nope" });
    const unknown = await client.createEvent(validEvent(), {
      "x-project-key": "pk_test_doesnotexist0000000000000000000000000",
    });
    expect(malformed.ok ? "ok" : [malformed.error.code, malformed.error.details]).toEqual([
      grpc.status.UNAUTHENTICATED,
      "Invalid API key format",
    ]);
    expect(unknown.ok ? "ok" : [unknown.error.code, unknown.error.details]).toEqual([
      grpc.status.UNAUTHENTICATED,
      "Invalid API key",
    ]);
  });

  it("CreateEvent with a real key as bare `authorization` metadata (no Bearer) fails with UNAUTHENTICATED", async () => {
    const key = await server.provision();
    const outcome = await client.createEvent(validEvent(), { authorization: key.secret });
    expect(outcome.ok ? "ok" : [outcome.error.code, outcome.error.details]).toEqual([
      grpc.status.UNAUTHENTICATED,
      "Invalid API key format",
    ]);
  });

  it("CreateEvent with a revoked key fails with PERMISSION_DENIED", async () => {
    const key = await server.provision();
    await server.admin.revokeApiKey({ id: key.keyId });
    const outcome = await client.createEvent(validEvent(), {
      authorization: `Bearer ${key.secret}`,
    });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(outcome.error.details).toBe("API key has been revoked");
  });

  it("an invalid event fails with INVALID_ARGUMENT and a BadRequest in grpc-status-details-bin", async () => {
    const key = await server.provision();
    const outcome = await client.createEvent(
      {
        actionKey: "user.login",
        entityId: "e".repeat(129),
        actorType: "robot",
        changes: [
          {
            op: "bogus",
            path: "name",
            before: { nullValue: "NULL_VALUE" },
            after: { stringValue: "x" },
          },
        ],
      },
      { authorization: `Bearer ${key.secret}` },
    );
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(outcome.error.details).toBe("Validation failed");

    const trailer = outcome.error.metadata.get("grpc-status-details-bin");
    expect(trailer).toHaveLength(1);
    const [raw] = trailer;
    expect(Buffer.isBuffer(raw)).toBe(true);
    const status = decodeRpcStatus(raw as Buffer);
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.message).toBe("Validation failed");
    const badRequest = badRequestOf(status);
    expect(badRequest).toBeDefined();
    expect(new Set(violatedFields(badRequest))).toEqual(
      new Set(["entityType", "entityId", "actorType", "actorId", "changes[0].op"]),
    );
    const byField = new Map(badRequest?.fieldViolations.map((v) => [v.field, v]));
    expect(byField.get("entityType")?.reason).toBe("invalid_type");
    expect(byField.get("entityId")?.reason).toBe("too_big");
    expect(byField.get("actorType")?.reason).toBe("invalid_enum_value");
    expect(byField.get("changes[0].op")?.reason).toBe("invalid_enum_value");
    expect(byField.get("entityType")?.description).toBe("Required");
  });

  it("the idempotency-key metadata replays the same eventId and receivedAt", async () => {
    const key = await server.provision();
    const metadata = {
      authorization: `Bearer ${key.secret}`,
      "idempotency-key": `grpc-${key.keyId}`,
    };
    const first = await client.createEvent(validEvent(), metadata);
    const second = await client.createEvent(validEvent(), metadata);
    expect(first.ok && second.ok).toBe(true);
    if (!first.ok || !second.ok) return;
    expect(first.reply.eventId).toMatch(UUID);
    expect(second.reply).toEqual(first.reply);
    expect(second.headers.get("idempotent-replayed")).toEqual(["true"]);
    expect(first.headers.get("idempotent-replayed")).toEqual([]);

    const conflict = await client.createEvent(validEvent({ entityId: "other" }), metadata);
    expect(conflict.ok).toBe(false);
    if (conflict.ok) return;
    expect(conflict.error.code).toBe(grpc.status.ALREADY_EXISTS);
    // grpc-js decodes grpc-message with decodeURI, which would leave a ":" escaped as
    // %3A had the server escaped it: it reads the message exactly as sent.
    expect(conflict.error.details).toBe(
      "Idempotency key conflict: same key used with different body",
    );
  });
});
