/**
 * List Events as a client sees it over REST and over Connect and gRPC: every filter
 * alone and combined, search, order, the shape of a listed event, paging.
 */
import { toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListEventsResponseSchema } from "../../gen/audit/v1/events_pb.js";
import { uint64AsNumbers } from "../../src/transport/rest-rendering.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import {
  bearer,
  createEvents,
  createEventsWithTimes,
  type EventClients,
  eventClients,
  inListOrder,
  listAll,
  listEvents,
  listedEvents,
} from "./events-client.js";

// 32 bytes in base64.
const SALT = /^[A-Za-z0-9+/]{43}=$/;

/** The RPC reply as REST shows it (REST writes unsigned 64-bit fields as numbers). */
const asRest = (reply: Parameters<typeof toJson<typeof ListEventsResponseSchema>>[1]) => {
  const json = toJson(ListEventsResponseSchema, reply);
  uint64AsNumbers(ListEventsResponseSchema, json);
  return json;
};

const minutesBefore = (minutes: number) =>
  new Date(Date.parse("2024-03-10T12:00:00.000Z") - minutes * 60_000).toISOString();

// The fixture, newest first: e1 occurred one minute before the base time, e6 six.
const FIXTURE = {
  e1: {
    actionKey: "invoice.paid",
    actionDescription: "Invoice paid by card",
    entityType: "invoice",
    entityId: "inv_001",
    actorType: "user",
    actorId: "alice",
    actorDisplay: "Alice Martin",
    tenantId: "acme",
    source: "billing-api",
    occurredAt: minutesBefore(1),
    context: { ip: "203.0.113.7", note: "zanzibar", nested: { ok: true, list: [1, "two", null] } },
    changes: [
      { op: "set", path: "status", before: "open", after: "paid" },
      { op: "set", path: "card", before: null, after: { last4: "4242" }, redacted: true },
    ],
  },
  e2: {
    actionKey: "invoice.created",
    entityType: "invoice",
    entityId: "inv_002",
    actorId: "bob",
    actorDisplay: "Bob Stone",
    tenantId: "acme",
    source: "billing-api",
    occurredAt: minutesBefore(2),
  },
  e3: {
    action: "user.login",
    entityType: "user",
    entityId: "alice",
    actorId: "alice",
    tenantId: "globex",
    source: "auth",
    occurredAt: minutesBefore(3),
  },
  e4: {
    actionKey: "user.logout",
    entityType: "user",
    entityId: "bob",
    actorType: "service",
    actorId: "svc-sync",
    actorDisplay: "Sync Service",
    tenantId: "globex",
    occurredAt: minutesBefore(4),
  },
  e5: {
    actionKey: "document.shared",
    actionDescription: "Shared the quarterly report with finance",
    entityType: "document",
    entityId: "doc-Quarterly",
    actorId: "carol",
    actorDisplay: "Carol <Admin>",
    occurredAt: minutesBefore(5),
  },
  e6: {
    actionKey: "invoice.paid",
    entityType: "invoice",
    entityId: "inv_003",
    actorId: "ALICE",
    tenantId: "initech",
    occurredAt: minutesBefore(6),
  },
} satisfies Record<string, Record<string, unknown>>;

type Name = keyof typeof FIXTURE;
const NAMES = Object.keys(FIXTURE) as Name[];

describe("List Events", () => {
  let server: TestServer;
  let secret: string;
  let ids: Record<Name, string>;
  let receivedAt: Record<Name, string>;
  let clients: EventClients;

  /** The fixture names of a listing, in the order listed. */
  const names = async (params: Record<string, string | number>): Promise<string[]> => {
    const events = await listedEvents(server, bearer(secret), params);
    return events.map((event) => NAMES.find((name) => ids[name] === event.eventId) ?? "?");
  };

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    clients = eventClients(server.url);
    secret = (await server.provision()).secret;
    // Created newest first: the listing's order must come from occurredAt, not insertion.
    const created = await createEventsWithTimes(
      server,
      secret,
      NAMES.map((name) => FIXTURE[name]),
      1,
    );
    const field = (key: "eventId" | "receivedAt") =>
      Object.fromEntries(NAMES.map((name, i) => [name, created[i]?.[key]])) as Record<Name, string>;
    ids = field("eventId");
    receivedAt = field("receivedAt");
  });
  afterAll(async () => {
    clients?.close();
    await server?.close();
  });

  describe("order and shape", () => {
    it("lists every event of the project newest occurredAt first", async () => {
      expect(await names({})).toEqual(["e1", "e2", "e3", "e4", "e5", "e6"]);
    });

    it("answers {events, nextCursor: null} on the last page", async () => {
      const response = await listEvents(server, bearer(secret));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      expect(Object.keys(response.body).sort()).toEqual(["events", "nextCursor"]);
      expect(response.body.nextCursor).toBeNull();
    });

    it("an event carries every field that was created, as stored, with its ids and times", async () => {
      const [event] = await listedEvents(server, bearer(secret), { entityId: "inv_001" });
      expect(event).toEqual({
        eventId: ids.e1,
        receivedAt: receivedAt.e1,
        logIndex: 0,
        salt: expect.stringMatching(SALT),
        ...FIXTURE.e1,
      });
      expect(Date.parse(receivedAt.e1)).toBeGreaterThan(Date.parse(FIXTURE.e1.occurredAt));
    });

    it("a field that was not sent is absent, and actorType defaults to user", async () => {
      const [event] = await listedEvents(server, bearer(secret), { entityId: "alice" });
      expect(event).toEqual({
        eventId: ids.e3,
        receivedAt: receivedAt.e3,
        logIndex: 2,
        salt: expect.stringMatching(SALT),
        actorType: "user",
        ...FIXTURE.e3,
      });
    });

    it("each event has its logIndex, from 0 in the order created, and a salt of its own", async () => {
      const events = await listedEvents(server, bearer(secret));
      const byIndex = [...events].sort((a, b) => a.logIndex - b.logIndex);
      expect(byIndex.map((event) => event.logIndex)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(byIndex.map((event) => event.eventId)).toEqual(NAMES.map((name) => ids[name]));
      expect(new Set(events.map((event) => event.salt)).size).toBe(6);
      for (const event of events) expect(Buffer.from(event.salt, "base64")).toHaveLength(32);
    });

    it("an event acknowledged before a list began is in it, every time", async () => {
      const key = await server.provision();
      for (let i = 0; i < 15; i++) {
        const [created] = await createEvents(server, key.secret, [
          validEvent({ entityId: `ryw-${i}` }),
        ]);
        const listed = await listedEvents(server, bearer(key.secret), { limit: 1 });
        expect(listed.map((event) => [event.eventId, event.logIndex])).toEqual([[created, i]]);
      }
    });

    it("strings come back HTML-encoded, as ingestion stored them", async () => {
      const [event] = await listedEvents(server, bearer(secret), { actorId: "carol" });
      expect(event?.actorDisplay).toBe("Carol &lt;Admin&gt;");
    });

    it("events with the same occurredAt are ordered by eventId, descending", async () => {
      const key = await server.provision();
      const at = "2024-01-01T00:00:00.000Z";
      const created = await createEvents(
        server,
        key.secret,
        Array.from({ length: 12 }, (_, i) => validEvent({ occurredAt: at, entityId: `e${i}` })),
        6,
      );
      const listed = await listedEvents(server, bearer(key.secret));
      expect(listed.map((event) => event.eventId)).toEqual([...created].sort().reverse());
      expect(inListOrder(listed)).toBe(true);
    });

    it("events before 1970 and far ahead page in order, one per page", async () => {
      const key = await server.provision();
      const times = [
        "2999-12-31T23:59:59.999Z",
        "1970-01-01T00:00:00.000Z",
        "1969-12-31T23:59:59.999Z",
        "1969-12-31T23:59:59.999Z",
        "1900-06-15T08:30:00.001Z",
      ];
      await createEvents(
        server,
        key.secret,
        times.map((at, i) => validEvent({ occurredAt: at, entityId: `t${i}` })),
        1,
      );
      const all = await listAll(server, bearer(key.secret), { limit: 1 });
      expect(all.pages).toBe(times.length);
      expect(all.events.map((event) => event.occurredAt)).toEqual(times);
      expect(inListOrder(all.events)).toBe(true);
    });

    it("an event without occurredAt is placed at the time it was received", async () => {
      const key = await server.provision();
      const [id] = await createEvents(server, key.secret, [validEvent()], 1);
      const [event] = await listedEvents(server, bearer(key.secret));
      expect(event?.eventId).toBe(id);
      expect(event?.occurredAt).toBe(event?.receivedAt);
    });

    it("a project without events lists {events: [], nextCursor: null}", async () => {
      const key = await server.provision();
      const response = await listEvents(server, bearer(key.secret));
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ events: [], nextCursor: null });
    });

    it("X-Project-Key works as well as Bearer", async () => {
      const events = await listedEvents(server, { "x-project-key": secret });
      expect(events).toHaveLength(6);
    });
  });

  describe("filters", () => {
    it.each([
      ["actorId", "alice", ["e1", "e3"]],
      ["actorId", "ALICE", ["e6"]],
      ["actorId", "svc-sync", ["e4"]],
      ["entityType", "invoice", ["e1", "e2", "e6"]],
      ["entityType", "user", ["e3", "e4"]],
      ["entityId", "inv_002", ["e2"]],
      ["entityId", "doc-Quarterly", ["e5"]],
      ["action", "invoice.paid", ["e1", "e6"]],
      ["action", "user.login", ["e3"]],
      ["tenantId", "globex", ["e3", "e4"]],
      ["tenantId", "acme", ["e1", "e2"]],
      ["from", minutesBefore(3), ["e1", "e2", "e3"]],
      ["to", minutesBefore(5), ["e5", "e6"]],
    ])("%s=%s alone matches exactly %j", async (name, value, expected) => {
      expect(await names({ [name]: value })).toEqual(expected);
    });

    it.each([
      ["actorId", "alic"],
      ["actorId", "Alice"],
      ["entityType", "Invoice"],
      ["entityId", "inv"],
      ["action", "invoice"],
      ["tenantId", "acm"],
      ["tenantId", "nobody"],
    ])("%s=%s matches nothing: filters are exact values", async (name, value) => {
      expect(await names({ [name]: value })).toEqual([]);
    });

    it.each([
      [{ entityType: "invoice", actorId: "alice" }, ["e1"]],
      [{ entityType: "invoice", entityId: "inv_003" }, ["e6"]],
      [{ entityType: "user", entityId: "inv_003" }, []],
      [{ tenantId: "acme", action: "invoice.created" }, ["e2"]],
      [{ actorId: "alice", tenantId: "globex" }, ["e3"]],
      [{ actorId: "bob", tenantId: "globex" }, []],
      [
        { action: "invoice.paid", tenantId: "acme", actorId: "alice", entityType: "invoice" },
        ["e1"],
      ],
      [{ from: minutesBefore(4), to: minutesBefore(2) }, ["e2", "e3", "e4"]],
      [{ from: minutesBefore(4), to: minutesBefore(4) }, ["e4"]],
      [{ entityType: "invoice", from: minutesBefore(2), to: minutesBefore(1) }, ["e1", "e2"]],
      [{ tenantId: "globex", q: "sync" }, ["e4"]],
      [{ entityType: "invoice", q: "alice", to: minutesBefore(2) }, ["e6"]],
    ])("%j matches exactly %j", async (params, expected) => {
      expect(await names(params)).toEqual(expected);
    });

    it("from and to accept other zone offsets and fractions", async () => {
      expect(
        await names({ from: "2024-03-10T07:57:00-04:00", to: "2024-03-10T12:58:30.500+01:00" }),
      ).toEqual(["e2", "e3"]);
    });

    it("query parameters may also be given by their proto names", async () => {
      expect(await names({ actor_id: "alice", tenant_id: "acme" })).toEqual(["e1"]);
    });
  });

  describe("search (q)", () => {
    it.each([
      ["a whole word", "alice", ["e1", "e3", "e6"]],
      ["a word in any case", "QUARTERLY", ["e5"]],
      ["a prefix of 3 characters", "qua", ["e5"]],
      ["a prefix of a longer word", "financ", ["e5"]],
      ["a word of a dotted actionKey", "logout", ["e4"]],
      ["the legacy action", "login", ["e3"]],
      ["actorDisplay", "martin", ["e1"]],
      ["actionDescription", "card", ["e1"]],
      ["tenantId", "initech", ["e6"]],
      ["source", "billing", ["e1", "e2"]],
      ["entityType", "document", ["e5"]],
      ["entityId", "inv_002", ["e2"]],
      ["a 2-character whole word", "by", ["e1"]],
      ["words found in different fields", "alice paid", ["e1", "e6"]],
      ["several words, all required", "sync service", ["e4"]],
      ["words in any order", "service sync", ["e4"]],
      ["a word within HTML-significant text", "<admin>", ["e5"]],
      ["punctuation between words", "invoice.created", ["e2"]],
    ])("finds %s (q=%s)", async (_what, q, expected) => {
      expect(await names({ q })).toEqual(expected);
    });

    it.each([
      ["the middle of a word", "voice"],
      ["the end of a word", "tin"],
      ["a word with an extra letter", "alicex"],
      ["a 2-character prefix", "qu"],
      ["words that are never in one event", "alice bob"],
      ["a word only in context", "zanzibar"],
      ["a word only in changes", "paid status"],
      ["the actorType, which is not searched", "user stone"],
      ["a word no event has", "nonexistent"],
    ])("finds nothing for %s (q=%s)", async (_what, q) => {
      expect(await names({ q })).toEqual([]);
    });

    it("an empty q is no search", async () => {
      expect(await names({ q: "" })).toHaveLength(6);
    });
  });

  describe("paging", () => {
    it("limit=2 pages through the fixture in three pages, then nextCursor is null", async () => {
      const first = await listEvents(server, bearer(secret), { limit: 2 });
      expect(first.body.events).toHaveLength(2);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const all = await listAll(server, bearer(secret), { limit: 2 });
      expect(all.pages).toBe(3);
      expect(all.events.map((event) => event.eventId)).toEqual(NAMES.map((name) => ids[name]));
    });

    it("a full last page has nextCursor null: there is no empty page after it", async () => {
      const response = await listEvents(server, bearer(secret), { limit: 6 });
      expect(response.body.events).toHaveLength(6);
      expect(response.body.nextCursor).toBeNull();
    });

    it("a cursor keeps the filters it is used with", async () => {
      const all = await listAll(server, bearer(secret), { entityType: "invoice", limit: 1 });
      expect(all.events.map((event) => event.eventId)).toEqual([ids.e1, ids.e2, ids.e6]);
      expect(all.pages).toBe(3);
    });

    it("limit 1 and limit 200 are accepted; 50 is the default", async () => {
      const key = await server.provision();
      await createEvents(
        server,
        key.secret,
        Array.from({ length: 51 }, (_, i) => validEvent({ entityId: `e${i}` })),
      );
      expect(await listedEvents(server, bearer(key.secret), { limit: 1 })).toHaveLength(1);
      expect(await listedEvents(server, bearer(key.secret), { limit: 200 })).toHaveLength(51);
      const byDefault = await listEvents(server, bearer(key.secret));
      expect(byDefault.body.events).toHaveLength(50);
      expect(byDefault.body.nextCursor).toEqual(expect.any(String));
    });
  });

  describe("Connect and gRPC", () => {
    it.each(["connect", "grpc"] as const)(
      "%s: ListEvents returns what REST returns, page by page, with the same cursors",
      async (protocol) => {
        const client = clients[protocol];
        const headers = bearer(secret);
        let rest = await listEvents(server, headers, { limit: 4, tenantId: "globex" });
        let rpc = await client.listEvents({ limit: 4, tenantId: "globex" }, { headers });
        expect(asRest(rpc)).toEqual({ events: rest.body.events });

        rest = await listEvents(server, headers, { limit: 4 });
        rpc = await client.listEvents({ limit: 4 }, { headers });
        expect(rest.body.nextCursor).toEqual(expect.any(String));
        expect(asRest(rpc)).toEqual(rest.body);

        // A cursor from REST continues over RPC, and the reverse.
        const cursor = rest.body.nextCursor as string;
        rpc = await client.listEvents({ limit: 4, cursor }, { headers });
        rest = await listEvents(server, headers, { limit: 4, cursor });
        expect(rpc.nextCursor).toBeUndefined();
        expect(rest.body.nextCursor).toBeNull();
        expect(asRest(rpc)).toEqual({ events: rest.body.events });
        expect(rpc.events.map((event) => event.eventId)).toEqual([ids.e5, ids.e6]);
      },
    );

    it.each(["connect", "grpc"] as const)(
      "%s: filters and search give the same events as REST",
      async (protocol) => {
        const rpc = await clients[protocol].listEvents(
          { entityType: "invoice", q: "ali", from: minutesBefore(6), to: minutesBefore(1) },
          { headers: bearer(secret) },
        );
        expect(rpc.events.map((event) => event.eventId)).toEqual([ids.e1, ids.e6]);
        expect(rpc.events[0]?.changes[1]?.redacted).toBe(true);
        expect(rpc.events[0]?.context).toEqual(FIXTURE.e1.context);
      },
    );
  });
});
