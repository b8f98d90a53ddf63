/**
 * The typed client (client/audit-client.ts) against the live service, over Connect and
 * gRPC: plain JSON in `before`/`after` (`after: 2`, objects, null) goes in and comes back
 * as sent, idempotent replays are reported, cursors are followed, and the error helpers
 * read the field violations and the retry delay.
 */
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createAuditClient,
  fieldViolations,
  retryDelaySeconds,
} from "../../client/audit-client.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

const RATE_LIMIT_MAX = 8;

describe("the typed TypeScript client", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: String(RATE_LIMIT_MAX) });
  });
  afterAll(async () => {
    await server?.close();
  });

  const transports = [
    ["Connect", (url: string) => createConnectTransport({ baseUrl: url, httpVersion: "1.1" })],
    ["gRPC", (url: string) => createGrpcTransport({ baseUrl: url })],
  ] as const;

  describe.each(transports)("over %s", (_name, makeTransport) => {
    it("creates with plain values, replays, and lists them back as sent", async () => {
      const key = await server.provision();
      const client = createAuditClient(makeTransport(server.url), { credential: key.secret });
      const event = {
        actionKey: "plan.changed",
        entityType: "subscription",
        entityId: "sub_1",
        actorId: "user_1",
        context: { ip: "203.0.113.7", tags: ["a", 1, null] },
        changes: [
          { op: "set" as const, path: "seats", before: null, after: 2 },
          { op: "set" as const, path: "plan", before: { name: "free" }, after: "pro" },
        ],
      };
      const created = await client.createEvent(event, { idempotencyKey: "client-1" });
      expect(created.replayed).toBe(false);
      const again = await client.createEvent(event, { idempotencyKey: "client-1" });
      expect(again).toEqual({ ...created, replayed: true });

      const page = await client.listEvents({ entityId: "sub_1" });
      expect(page.nextCursor).toBeNull();
      expect(page.events).toHaveLength(1);
      const [listed] = page.events;
      expect(listed).toMatchObject({
        eventId: created.eventId,
        actorType: "user",
        context: event.context,
        changes: event.changes,
        logIndex: 0,
      });
      expect(Buffer.from(listed?.salt ?? "", "base64")).toHaveLength(32);
    });

    it("listAll follows the cursors to the end", async () => {
      const key = await server.provision();
      const client = createAuditClient(makeTransport(server.url), { credential: key.secret });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          (
            await client.createEvent({
              actionKey: "a.b",
              entityType: "t",
              entityId: `e${i}`,
              actorId: "u",
            })
          ).eventId,
        );
      }
      const seen: string[] = [];
      for await (const listed of client.listAll({ limit: 2 })) seen.push(listed.eventId);
      expect(seen).toEqual([...ids].reverse());
    });

    it("a frontend token made by the client reads through the client", async () => {
      const key = await server.provision();
      const writer = createAuditClient(makeTransport(server.url), { credential: key.secret });
      await writer.createEvent({
        actionKey: "a.b",
        entityType: "t",
        entityId: "x",
        actorId: "u",
        tenantId: "t1",
      });
      const { token } = await writer.createFrontendToken({ tenantId: "t1", expiresInSeconds: 60 });
      const reader = createAuditClient(makeTransport(server.url), { credential: token });
      expect((await reader.listEvents()).events.map((event) => event.tenantId)).toEqual(["t1"]);
    });

    it("fieldViolations and retryDelaySeconds read the service's error details", async () => {
      const key = await server.provision();
      const client = createAuditClient(makeTransport(server.url), { credential: key.secret });
      const invalid = await client
        .createEvent({ actionKey: "a.b", entityType: "", entityId: "x".repeat(129), actorId: "u" })
        .catch((error: unknown) => error);
      expect(fieldViolations(invalid)).toEqual([
        {
          field: "entityId",
          description: "String must contain at most 128 character(s)",
          reason: "too_big",
        },
      ]);
      expect(retryDelaySeconds(invalid)).toBeUndefined();

      let limited: unknown;
      for (let i = 0; i <= RATE_LIMIT_MAX && limited === undefined; i++) {
        await client
          .createEvent({ actionKey: "a.b", entityType: "t", entityId: "y", actorId: "u" })
          .catch((error: unknown) => {
            limited = error;
          });
      }
      expect(retryDelaySeconds(limited)).toBeGreaterThanOrEqual(1);
      expect(fieldViolations(limited)).toEqual([]);
    });
  });
});
