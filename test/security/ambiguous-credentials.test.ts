/**
 * Ambiguous requests are refused, never resolved silently: an Authorization and an
 * X-Project-Key that present different credentials (which project would the event go
 * to?), a repeated Authorization or X-Project-Key (node keeps the first, or joins them),
 * and a repeated Idempotency-Key (node joins them into a new key "k, other"). The answer
 * is the same on every protocol: REST 400 `{"error": ...}`, Connect invalid_argument,
 * gRPC INVALID_ARGUMENT, each with the same message; nothing is written.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIngestClient, type IngestClient } from "../support/grpc-ingest-client.js";
import {
  type ProvisionedKey,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import { rawRequest, totalEvents } from "./raw-client.js";

const TWO_CREDENTIALS =
  "Ambiguous credentials: Authorization and X-Project-Key present different credentials";
const TWO_AUTHORIZATIONS = "Ambiguous credentials: more than one Authorization header";
const TWO_PROJECT_KEYS = "Ambiguous credentials: more than one X-Project-Key header";
const TWO_IDEMPOTENCY_KEYS = "Ambiguous request: more than one Idempotency-Key header";
const CONNECT_CREATE = "/audit.v1.IngestService/CreateEvent";

describe("ambiguous credentials and keys", () => {
  let server: TestServer;
  let a: ProvisionedKey;
  let b: ProvisionedKey;
  let grpcClient: IngestClient;

  beforeAll(async () => {
    server = await startTestServer();
    a = await server.provision();
    b = await server.provision();
    grpcClient = createIngestClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    grpcClient?.close();
    await server?.close();
  });

  const body = JSON.stringify(validEvent());
  /** Sends raw header lines to `path`; the status and parsed JSON body. */
  const send = async (headers: [string, string][], path = "/api/ingest/event", method = "POST") => {
    const response = await rawRequest(server.port, {
      method,
      path,
      headers: [["content-type", "application/json"], ...headers],
      ...(method === "POST" ? { body } : {}),
    });
    return { status: response.status, body: JSON.parse(response.body) as Record<string, unknown> };
  };

  describe("REST", () => {
    it.each([
      [
        "Bearer key of A with X-Project-Key of B",
        () => [
          ["authorization", `Bearer ${a.secret}`],
          ["x-project-key", b.secret],
        ],
        TWO_CREDENTIALS,
      ],
      [
        "two Authorization headers",
        () => [
          ["authorization", `Bearer ${a.secret}`],
          ["authorization", `Bearer ${b.secret}`],
        ],
        TWO_AUTHORIZATIONS,
      ],
      [
        "two X-Project-Key headers",
        () => [
          ["x-project-key", a.secret],
          ["x-project-key", b.secret],
        ],
        TWO_PROJECT_KEYS,
      ],
      [
        "two Idempotency-Key headers",
        () => [
          ["authorization", `Bearer ${a.secret}`],
          ["idempotency-key", "k"],
          ["idempotency-key", "other"],
        ],
        TWO_IDEMPOTENCY_KEYS,
      ],
    ] as [string, () => [string, string][], string][])(
      "Create Event with %s: 400 naming the ambiguity, nothing written",
      async (_what, headers, message) => {
        const before = await totalEvents(server);
        const response = await send(headers());
        expect(response).toEqual({ status: 400, body: { error: message } });
        expect(await totalEvents(server)).toBe(before);
      },
    );

    it("List Events and Create Frontend Token refuse two credentials too", async () => {
      const headers: [string, string][] = [
        ["authorization", `Bearer ${a.secret}`],
        ["x-project-key", b.secret],
      ];
      expect(await send(headers, "/api/events", "GET")).toEqual({
        status: 400,
        body: { error: TWO_CREDENTIALS },
      });
      const token = await rawRequest(server.port, {
        path: "/api/tokens/frontend",
        headers: [["content-type", "application/json"], ...headers],
        body: "{}",
      });
      expect(token.status).toBe(400);
      expect(JSON.parse(token.body)).toEqual({ error: TWO_CREDENTIALS });
    });

    it("the same key in Authorization and X-Project-Key is no ambiguity: 201", async () => {
      const response = await send([
        ["authorization", `Bearer ${a.secret}`],
        ["x-project-key", a.secret],
      ]);
      expect(response.status).toBe(201);
    });
  });

  describe("Connect", () => {
    it.each([
      [
        "Bearer key of A with X-Project-Key of B",
        () => [
          ["authorization", `Bearer ${a.secret}`],
          ["x-project-key", b.secret],
        ],
        TWO_CREDENTIALS,
      ],
      [
        "two Authorization headers",
        () => [
          ["authorization", `Bearer ${a.secret}`],
          ["authorization", `Bearer ${b.secret}`],
        ],
        TWO_AUTHORIZATIONS,
      ],
      [
        "two Idempotency-Key headers",
        () => [
          ["x-project-key", a.secret],
          ["idempotency-key", "k"],
          ["idempotency-key", "other"],
        ],
        TWO_IDEMPOTENCY_KEYS,
      ],
    ] as [string, () => [string, string][], string][])(
      "CreateEvent with %s: invalid_argument with the same message",
      async (_what, headers, message) => {
        const before = await totalEvents(server);
        const response = await send(headers(), CONNECT_CREATE);
        expect(response).toEqual({
          status: 400,
          body: { code: "invalid_argument", message },
        });
        expect(await totalEvents(server)).toBe(before);
      },
    );
  });

  describe("gRPC", () => {
    it("CreateEvent with Bearer key of A and X-Project-Key of B: INVALID_ARGUMENT", async () => {
      const before = await totalEvents(server);
      const outcome = await grpcClient.createEvent(validEvent(), {
        authorization: `Bearer ${a.secret}`,
        "x-project-key": b.secret,
      });
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) {
        expect(outcome.error.code).toBe(grpc.status.INVALID_ARGUMENT);
        expect(outcome.error.details).toBe(TWO_CREDENTIALS);
      }
      expect(await totalEvents(server)).toBe(before);
    });

    it("CreateEvent with two idempotency-key entries: INVALID_ARGUMENT", async () => {
      const before = await totalEvents(server);
      const metadata = new grpc.Metadata();
      metadata.set("x-project-key", a.secret);
      metadata.add("idempotency-key", "k");
      metadata.add("idempotency-key", "other");
      const outcome = await grpcClient.createEvent(validEvent(), metadata);
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) {
        expect(outcome.error.code).toBe(grpc.status.INVALID_ARGUMENT);
        expect(outcome.error.details).toBe(TWO_IDEMPOTENCY_KEYS);
      }
      expect(await totalEvents(server)).toBe(before);
    });
  });
});
