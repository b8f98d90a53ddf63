/**
 * Pages of large events. An event may be sent as a body of up to 1 MB, and its strings
 * are stored HTML-encoded (`&` becomes `&amp;`), so one event can list as about 3 MB:
 * 200 of them in one page would be a response of hundreds of megabytes. A page therefore
 * stops after about 4 MiB of stored events (always holding at least one), and its
 * nextCursor leads on to the rest: every event is still listed once, in order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { bearer, createEvents, inListOrder, listAll, listEvents } from "./events-client.js";

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

describe("pages of large events", () => {
  let server: TestServer;
  let headers: Record<string, string>;
  let created: string[];

  beforeAll(async () => {
    server = await startTestServer();
    const { secret } = await server.provision();
    headers = bearer(secret);
    // Oldest first: two small, three large, two small.
    const bodies = [0, 1].map(smallEvent).concat([2, 3, 4].map(largeEvent), [5, 6].map(smallEvent));
    created = await createEvents(server, secret, bodies, 1);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it("a page stops after about 4 MiB of events, and its cursor leads on to the rest", async () => {
    const first = await listEvents(server, headers, { limit: 200 });
    expect(first.status).toBe(200);
    const page = first.body.events as { eventId: string }[];
    // Newest first: two small (a few hundred bytes), then two large (~3 MB each: the
    // second starts under the bound), and the third large one is left for the next page.
    expect(page.map((event) => event.eventId)).toEqual([
      created[6],
      created[5],
      created[4],
      created[3],
    ]);
    expect(first.body.nextCursor).toEqual(expect.any(String));

    const second = await listEvents(server, headers, {
      limit: 200,
      cursor: first.body.nextCursor as string,
    });
    expect(second.status).toBe(200);
    expect((second.body.events as { eventId: string }[]).map((event) => event.eventId)).toEqual([
      created[2],
      created[1],
      created[0],
    ]);
    expect(second.body.nextCursor).toBeNull();
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

  it("a page holds one event when that event alone passes the bound", async () => {
    const { events, pages } = await listAll(server, headers, { entityId: "large", limit: 200 });
    // 3 MB, 3 MB (starts at 3 MB, under 4 MiB), then 3 MB alone.
    expect(pages).toBe(2);
    expect(events.map((event) => event.eventId)).toEqual([created[4], created[3], created[2]]);
    expect(inListOrder(events)).toBe(true);
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
});
