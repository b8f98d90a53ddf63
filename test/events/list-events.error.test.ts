/**
 * List Events refusals: bad parameters (400 with a message naming the parameter),
 * tampered and foreign cursors (400), missing or refused credentials (401, 403), the
 * same over Connect and gRPC.
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { rpcFailure } from "../support/rpc.js";
import { type ProvisionedKey, startTestServer, type TestServer } from "../support/test-server.js";
import {
  bearer,
  createEvents,
  type EventClients,
  eventClients,
  listEvents,
} from "./events-client.js";

const INVALID_CURSOR = "Invalid cursor: use the nextCursor of a previous page";
const MISSING_KEY = "Missing API key. Provide a Bearer token or X-Project-Key header";

describe("List Events refusals", () => {
  let server: TestServer;
  let key: ProvisionedKey;
  let cursor: string;
  let clients: EventClients;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    clients = eventClients(server.url);
    key = await server.provision();
    await createEvents(
      server,
      key.secret,
      Array.from({ length: 5 }, (_, i) => ({
        actionKey: "doc.viewed",
        entityType: "doc",
        entityId: `d${i}`,
        actorId: "u1",
      })),
    );
    const page = await listEvents(server, bearer(key.secret), { limit: 2 });
    cursor = page.body.nextCursor as string;
  });
  afterAll(async () => {
    clients?.close();
    await server?.close();
  });

  const expect400 = async (params: Record<string, string>, error: string | RegExp) => {
    const response = await listEvents(server, bearer(key.secret), params);
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual(
      typeof error === "string" ? error : expect.stringMatching(error),
    );
  };

  describe("bad parameters: 400 with a clear error", () => {
    it.each(["0", "201", "-1", "abc", "1.5", "1e2", "", " 5", "99999999999"])(
      "limit=%j",
      async (limit) => {
        await expect400({ limit }, "limit must be an integer from 1 to 200");
      },
    );

    it.each(["yesterday", "2024-03-10", "2024-03-10T12:00:00", "2024-13-01T00:00:00Z", ""])(
      "from=%j",
      async (from) => {
        await expect400(
          { from },
          "from must be an ISO 8601 date-time with a time zone, like 2024-05-01T00:00:00Z, between years 0001 and 9999 in UTC",
        );
      },
    );

    it("to that is not a date-time", async () => {
      await expect400({ to: "now" }, /^to must be an ISO 8601 date-time/);
    });

    it("from later than to", async () => {
      await expect400(
        { from: "2024-03-10T12:00:00Z", to: "2024-03-10T11:59:59.999Z" },
        "from must not be later than to",
      );
    });

    it.each(["actorId", "entityType", "entityId", "action", "tenantId"])(
      "an empty %s (an empty filter would widen the result)",
      async (name) => {
        await expect400({ [name]: "" }, `${name} must not be empty`);
      },
    );

    it.each([
      ["limit", "limit=1&limit=2"],
      ["actorId", "actorId=u1&actorId=u2"],
      ["tenantId", "tenantId=a&tenantId=a"],
    ])("%s given twice (which one is meant is not said)", async (name, query) => {
      for (const path of ["/api/events", "/api/events/export", "/api/events/stream"]) {
        const response = await fetch(`${server.url}${path}?${query}`, {
          headers: bearer(key.secret),
        });
        expect(response.status, path).toBe(400);
        expect(await response.json()).toEqual({
          error: `${name} must be given once in the query string`,
        });
      }
    });

    it.each([
      ["entityId", "entity_id", "entityId=inv_1001&entity_id=order_7"],
      ["tenantId", "tenant_id", "tenant_id=a&tenantId=a"],
    ])(
      "%s given also as %s (one parameter under both its names)",
      async (name, protoName, query) => {
        for (const path of ["/api/events", "/api/events/export", "/api/events/stream"]) {
          const response = await fetch(`${server.url}${path}?${query}`, {
            headers: bearer(key.secret),
          });
          expect(response.status, path).toBe(400);
          expect(await response.json()).toEqual({
            error: `${name} must be given once in the query string (${name} and ${protoName} are one parameter)`,
          });
        }
      },
    );

    it.each([
      ["tenant", "tenant=acme"],
      ["actorID", "actorID=user_42"],
      ["", "=1"],
    ])(
      "a parameter the route does not take (%j) is refused, not ignored (it would widen the answer)",
      async (name, query) => {
        const LIST = "actorId, entityType, entityId, action, tenantId, q, from, to";
        const takes = {
          "/api/events": `${LIST}, limit, cursor`,
          "/api/events/export": `${LIST}, fromIndex, toIndex, format`,
          "/api/events/stream": `${LIST}, fromIndex`,
        };
        for (const [path, taken] of Object.entries(takes)) {
          const response = await fetch(`${server.url}${path}?${query}`, {
            headers: bearer(key.secret),
          });
          expect(response.status, path).toBe(400);
          expect(await response.json()).toEqual({
            error: `Unknown query parameter ${JSON.stringify(name)}: this endpoint takes ${taken}`,
          });
        }
        // Without a credential, the 401 comes first, as for every other parameter.
        expect((await fetch(`${server.url}/api/events?${query}`)).status).toBe(401);
      },
    );

    it("q without letters or digits", async () => {
      await expect400({ q: "!!! --" }, "q must contain at least one letter or digit");
    });

    it("q over 512 characters", async () => {
      await expect400({ q: "a".repeat(513) }, "q must be at most 512 characters");
    });

    // Lengths count code points (src/vocabulary/text-length.ts), as the spec's "characters":
    // an ideograph outside the BMP (U+20000, a letter: one search word) is one character
    // though JavaScript counts it as two UTF-16 units.
    const IDEOGRAPH = "\u{20000}";
    it("q of 512 astral characters (1,024 UTF-16 units) is accepted; 513 is refused", async () => {
      const ok = await listEvents(server, bearer(key.secret), { q: IDEOGRAPH.repeat(512) });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      await expect400({ q: IDEOGRAPH.repeat(513) }, "q must be at most 512 characters");
    });

    it.each(["connect", "grpc"] as const)(
      "%s: q counts characters the same (512 astral accepted, 513 InvalidArgument)",
      async (protocol) => {
        const client = clients[protocol];
        const page = await client.listEvents(
          { q: IDEOGRAPH.repeat(512) },
          { headers: bearer(key.secret) },
        );
        expect(page.events).toEqual([]);
        const failure = await rpcFailure(
          client.listEvents({ q: IDEOGRAPH.repeat(513) }, { headers: bearer(key.secret) }),
        );
        expect(failure.code).toBe(Code.InvalidArgument);
        expect(failure.rawMessage).toBe("q must be at most 512 characters");
      },
    );

    it("q with more than 16 words", async () => {
      const q = Array.from({ length: 17 }, (_, i) => `word${i}`).join(" ");
      await expect400({ q }, "q must have at most 16 words");
    });
  });

  describe("cursors", () => {
    it("a cursor from a previous page is accepted", async () => {
      const response = await listEvents(server, bearer(key.secret), { cursor, limit: 2 });
      expect(response.status).toBe(200);
      expect(response.body.events).toHaveLength(2);
    });

    it("every single-character change of a cursor is refused with 400", async () => {
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      const tampered = new Set<string>();
      for (let i = 0; i < cursor.length; i++) {
        const current = cursor[i] ?? "";
        const other = alphabet[(alphabet.indexOf(current) + 17) % alphabet.length] ?? "A";
        tampered.add(cursor.slice(0, i) + other + cursor.slice(i + 1));
      }
      tampered.delete(cursor);
      const statuses = await Promise.all(
        [...tampered].map(async (value) => {
          const response = await listEvents(server, bearer(key.secret), { cursor: value });
          return `${response.status} ${response.body.error}`;
        }),
      );
      expect(new Set(statuses)).toEqual(new Set([`400 ${INVALID_CURSOR}`]));
    });

    it.each([
      ["garbage", "abc"],
      ["null as text", "null"],
      ["a truncated cursor", "TRUNCATED"],
      ["a cursor with extra characters", "EXTENDED"],
      ["a base64 cursor with padding", "PADDED"],
    ])("%s is refused with 400", async (_what, value) => {
      const given =
        value === "TRUNCATED"
          ? cursor.slice(0, -1)
          : value === "EXTENDED"
            ? `${cursor}A`
            : value === "PADDED"
              ? `${cursor}=`
              : value;
      await expect400({ cursor: given }, INVALID_CURSOR);
    });

    it("a cursor of another project is refused with 400", async () => {
      const other = await server.provision();
      const response = await listEvents(server, bearer(other.secret), { cursor });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe(INVALID_CURSOR);
    });

    it("a cursor of the same project's other environment is refused with 400", async () => {
      const live = await server.admin.createApiKey({
        projectId: key.projectId,
        environment: Environment.LIVE,
      });
      const response = await listEvents(server, bearer(live.secret), { cursor });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe(INVALID_CURSOR);
    });
  });

  describe("credentials", () => {
    it("no credentials: 401 with the spec's message", async () => {
      const response = await listEvents(server, {});
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ error: MISSING_KEY });
    });

    it("a malformed key: 401 Invalid API key format", async () => {
      const response = await listEvents(server, bearer("sk_nope"));
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ error: "Invalid API key format" });
    });

    it("an unknown key: 401 Invalid API key", async () => {
      const response = await listEvents(server, bearer("pk_test_unknownunknownunknown"));
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ error: "Invalid API key" });
    });

    it("a revoked key: 403 API key has been revoked", async () => {
      const revoked = await server.provision();
      await server.admin.revokeApiKey({ id: revoked.keyId });
      const response = await listEvents(server, bearer(revoked.secret));
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ error: "API key has been revoked" });
    });

    it("credentials are checked before parameters", async () => {
      const response = await listEvents(server, {}, { limit: "0" });
      expect(response.status).toBe(401);
    });

    it("POST /api/events is 405", async () => {
      const response = await fetch(`${server.url}/api/events`, {
        method: "POST",
        headers: bearer(key.secret),
      });
      expect(response.status).toBe(405);
    });
  });

  describe("what is decrypted", () => {
    // Rows whose ciphertext no longer opens show what the service decrypts: a read that
    // touched one would fail with 500.
    let reader: ProvisionedKey;
    beforeAll(async () => {
      reader = await server.provision();
      const ids = await createEvents(
        server,
        reader.secret,
        Array.from({ length: 6 }, (_, i) => ({
          actionKey: "doc.viewed",
          entityType: "doc",
          entityId: `kept-${i}`,
          actorId: i < 2 ? "intact" : "broken",
          occurredAt: new Date(Date.UTC(2024, 0, 10 - i)).toISOString(),
        })),
        1,
      );
      // Listed once first: the integrator has then derived their index rows, from the
      // intact payloads (it would stop at a row it cannot open).
      expect((await listEvents(server, bearer(reader.secret), {})).status).toBe(200);
      await server.app.db.query("update events set payload = $1 where id = any($2::uuid[])", [
        Buffer.from([1, 2, 3]),
        ids.slice(2),
      ]);
    });

    it("only the events of the page are decrypted, not the row that tells a page follows", async () => {
      const response = await listEvents(server, bearer(reader.secret), { limit: 2 });
      expect(response.status).toBe(200);
      expect((response.body.events as { entityId: string }[]).map((e) => e.entityId)).toEqual([
        "kept-0",
        "kept-1",
      ]);
      expect(response.body.nextCursor).toEqual(expect.any(String));
    });

    it("filters and search select rows in the database: non-matching rows are never opened", async () => {
      for (const params of [{ actorId: "intact" }, { q: "intact" }, { entityId: "kept-1" }]) {
        const response = await listEvents(server, bearer(reader.secret), params);
        expect(response.status).toBe(200);
        expect((response.body.events as unknown[]).length).toBeGreaterThan(0);
      }
    });

    it("a page that holds an unreadable event fails with 500, and says nothing more", async () => {
      const response = await listEvents(server, bearer(reader.secret), { limit: 3 });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({ error: "Internal server error" });
    });
  });

  describe("a log the integrator cannot pass", () => {
    // A journal row whose payload does not open stops its log's integrator there (it
    // skips nothing): a list cannot show every acknowledged event, so after waiting
    // (5 s) it says so rather than answer without them.
    it("answers 503 with Retry-After, not a page that leaves acknowledged events out; lists again once it can", async () => {
      const stuck = await server.provision();
      const [listed] = await createEvents(server, stuck.secret, [
        { actionKey: "doc.viewed", entityType: "doc", entityId: "first", actorId: "u1" },
      ]);
      expect((await listEvents(server, bearer(stuck.secret), {})).status).toBe(200);
      await server.app.db.query(
        `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                             payload)
         values ($1, 'test', '01a20000-0000-7000-8000-0000000000aa', now(), now(), 1, $2)`,
        [stuck.projectId, Buffer.from([1, 2, 3])],
      );
      const refused = await listEvents(server, bearer(stuck.secret), {});
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.body).toEqual({
        error: "Service temporarily unavailable: recent events are still being indexed",
      });
      const rpc = await rpcFailure(
        clients.connect.listEvents({}, { headers: bearer(stuck.secret) }),
      );
      expect(rpc.code).toBe(Code.Unavailable);

      await server.app.db.query("delete from events where project_id = $1 and id <> $2", [
        stuck.projectId,
        listed,
      ]);
      const again = await listEvents(server, bearer(stuck.secret), {});
      expect(again.status).toBe(200);
      expect((again.body.events as { eventId: string }[]).map((e) => e.eventId)).toEqual([listed]);
    });
  });

  describe.each(["connect", "grpc"] as const)("%s", (protocol) => {
    it("a bad limit is InvalidArgument with the same message", async () => {
      const error = await rpcFailure(
        clients[protocol].listEvents({ limit: 0 }, { headers: bearer(key.secret) }),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe("limit must be an integer from 1 to 200");
    });

    it("a tampered cursor is InvalidArgument", async () => {
      const error = await rpcFailure(
        clients[protocol].listEvents(
          { cursor: `${cursor.slice(0, 20)}${cursor[20] === "A" ? "B" : "A"}${cursor.slice(21)}` },
          { headers: bearer(key.secret) },
        ),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe(INVALID_CURSOR);
    });

    it("no credentials is Unauthenticated", async () => {
      const error = await rpcFailure(clients[protocol].listEvents({}));
      expect(error.code).toBe(Code.Unauthenticated);
      expect(error.rawMessage).toBe(MISSING_KEY);
    });
  });
});
