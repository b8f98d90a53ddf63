/**
 * Pages of large events. An event may be sent as a body of up to 1 MB, and its strings
 * are stored HTML-encoded (`&` becomes `&amp;`), so one event can list as several MB:
 * 200 of them in one page would be a response of hundreds of megabytes. A page therefore
 * stops before 2 MiB of stored events (always holding at least one), and its nextCursor
 * leads on to the rest: every event is still listed once, in order. Pages of many
 * mid-sized events stay under the 4 MiB gRPC clients receive by default.
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { bearer, createEvents, listAll, listEvents } from "./events-client.js";

const BASE = Date.parse("2025-03-01T00:00:00.000Z");
const at = (second: number) => new Date(BASE + second * 1000).toISOString();

/** About 1 MB as sent and about 3 MB as stored: every `&` is stored as `&amp;`. */
const largeEvent = (second: number) =>
  validEvent({
    entityId: "large",
    occurredAt: at(second),
    context: { note: "<".repeat(10_000) },
    changes: Array.from({ length: 100 }, (_, i) => ({
      op: "set",
      path: `field${i}`,
      before: "x".repeat(5_000),
      after: "&".repeat(5_000),
    })),
  });
const smallEvent = (second: number) => validEvent({ entityId: "small", occurredAt: at(second) });

const idsOf = (page: { body: Record<string, unknown> }) =>
  (page.body.events as { eventId: string }[]).map((event) => event.eventId);

describe("pages of large events", () => {
  let server: TestServer;
  let headers: Record<string, string>;
  let created: string[];

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000" });
    const { secret } = await server.provision();
    headers = bearer(secret);
    // Oldest first: two small, three large, two small.
    const bodies = [0, 1].map(smallEvent).concat([2, 3, 4].map(largeEvent), [5, 6].map(smallEvent));
    created = await createEvents(server, secret, bodies, 1);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it("a page stops before 2 MiB of events, and its cursor leads on to the rest", async () => {
    // Newest first: two small events (a few hundred bytes); the large one after them
    // (~3 MB) would take the page past the bound: it starts the next page.
    const first = await listEvents(server, headers, { limit: 200 });
    expect(first.status).toBe(200);
    expect(idsOf(first)).toEqual([created[6], created[5]]);
    expect(first.body.nextCursor).toEqual(expect.any(String));

    const pages: (string | undefined)[][] = [];
    let cursor = first.body.nextCursor as string | null;
    while (cursor !== null) {
      const page = await listEvents(server, headers, { limit: 200, cursor });
      expect(page.status).toBe(200);
      pages.push(idsOf(page));
      cursor = page.body.nextCursor as string | null;
    }
    // Each large event alone passes the bound: one per page, then the two small ones.
    expect(pages).toEqual([[created[4]], [created[3]], [created[2]], [created[1], created[0]]]);
  });

  it("each large event is listed whole, as stored", async () => {
    const page = await listEvents(server, headers, { entityId: "large", limit: 1 });
    const [event] = page.body.events as {
      context: { note: string };
      changes: { after: string }[];
    }[];
    expect(event?.context.note).toBe("&lt;".repeat(10_000));
    expect(event?.changes).toHaveLength(100);
    expect(event?.changes[99]?.after).toBe("&amp;".repeat(5_000));
  });

  it("the limit still bounds a page of small events", async () => {
    const { events, pages } = await listAll(server, headers, { entityId: "small", limit: 3 });
    expect(pages).toBe(2);
    expect(events.map((event) => event.eventId)).toEqual([
      created[6],
      created[5],
      created[1],
      created[0],
    ]);
  });

  it("200 events of ~25 KB list through a gRPC client that takes at most 4 MiB per message", async () => {
    const { secret } = await server.provision();
    // 6,000 characters of `<` store as 24,000 (`&lt;`): 200 of them are ~4.9 MB.
    const bodies = Array.from({ length: 200 }, (_, i) =>
      validEvent({ entityId: "mid", occurredAt: at(i), context: { note: "<".repeat(6_000) } }),
    );
    const ids = await createEvents(server, secret, bodies, 20);
    const session = new Http2SessionManager(server.url);
    const client = createClient(
      EventService,
      createGrpcTransport({
        baseUrl: server.url,
        sessionManager: session,
        readMaxBytes: 4 * 1024 * 1024,
      }),
    );
    try {
      const listed: string[] = [];
      const sizes: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listEvents(
          { limit: 200, ...(cursor ? { cursor } : {}) },
          { headers: bearer(secret) },
        );
        sizes.push(page.events.length);
        listed.push(...page.events.map((event) => event.eventId));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      expect(listed).toEqual([...ids].reverse());
      // Cut by bytes (at most ~85 events of ~24 KB in 2 MiB), not by the limit of 200.
      expect(sizes.length).toBe(3);
      expect(Math.max(...sizes)).toBeLessThan(100);
    } finally {
      session.abort();
    }
  }, 120_000);

  it("a search checked after decryption counts only the events it lists towards the bytes", async () => {
    const { secret } = await server.provision();
    // Newest first: a small match, a large event with the token of q=smallta (p:smallt) but
    // not the word, a small match. The large one is refused: both matches fit one page.
    const bodies = [
      validEvent({ occurredAt: at(0), actorDisplay: "Smalltalk" }),
      { ...largeEvent(1), actorDisplay: "Smalltown" },
      validEvent({ occurredAt: at(2), actorDisplay: "Smalltalk" }),
    ];
    const ids = await createEvents(server, secret, bodies, 1);
    const page = await listEvents(server, bearer(secret), { q: "smallta", limit: 200 });
    expect(page.status).toBe(200);
    expect(idsOf(page)).toEqual([ids[2], ids[0]]);
    expect(page.body.nextCursor).toBeNull();
    // The word the large event has: alone in its page, as the bytes bound wants it.
    const large = await listEvents(server, bearer(secret), { q: "smallto", limit: 200 });
    expect(idsOf(large)).toEqual([ids[1]]);
    expect(large.body.nextCursor).toBeNull();
  }, 120_000);
});
