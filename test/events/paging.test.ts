/**
 * Keyset paging over a few thousand events while other events keep arriving: every
 * event that existed when paging began is listed exactly once, nothing is repeated,
 * and the order holds across page boundaries, ties on occurredAt included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import {
  bearer,
  createEvents,
  inListOrder,
  type ListedEventJson,
  listEvents,
} from "./events-client.js";

const EVENTS = 2000;
const BASE = Date.parse("2024-06-01T00:00:00.000Z");
/** Four events share each occurredAt, so ties fall across page boundaries. */
const occurredAt = (i: number) => new Date(BASE - Math.floor(i / 4) * 1000).toISOString();

/** Events created while paging: newer than all, older than all, or inside the range. */
const lateOccurredAt = (round: number) => {
  if (round % 3 === 0) return new Date().toISOString();
  if (round % 3 === 1) return new Date(BASE - 30 * 86_400_000).toISOString();
  return occurredAt((round * 997) % EVENTS);
};

describe("paging a few thousand events while others arrive", () => {
  let server: TestServer;
  let secret: string;
  let existing: string[];

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    secret = (await server.provision()).secret;
    const bodies = Array.from({ length: EVENTS }, (_, i) =>
      validEvent({
        occurredAt: occurredAt(i),
        entityId: `entity-${i}`,
        tenantId: i % 2 === 0 ? "even" : "odd",
        actorDisplay: i % 5 === 0 ? "Fifth Walker" : "Someone Else",
      }),
    );
    existing = await createEvents(server, secret, bodies, 40);
  });
  afterAll(async () => {
    await server?.close();
  });

  /**
   * Pages through a listing while `concurrent` events are created in the background:
   * some newer than everything, some older, some inside the range being paged.
   */
  const pageWhileInserting = async (params: Record<string, string | number>, limit: number) => {
    let inserting = true;
    let inserted = 0;
    const writer = (async () => {
      for (let round = 0; inserting && round < 400; round++) {
        await createEvents(
          server,
          secret,
          Array.from({ length: 5 }, (_, i) =>
            validEvent({
              occurredAt: lateOccurredAt(round),
              entityId: `late-${round}-${i}`,
              tenantId: i % 2 === 0 ? "even" : "odd",
              actorDisplay: "Fifth Walker",
            }),
          ),
          5,
        );
        inserted += 5;
      }
    })();

    const pages: ListedEventJson[][] = [];
    let cursor: string | null = null;
    try {
      do {
        const response = await listEvents(server, bearer(secret), {
          ...params,
          limit,
          ...(cursor ? { cursor } : {}),
        });
        expect(response.status).toBe(200);
        pages.push(response.body.events as ListedEventJson[]);
        cursor = response.body.nextCursor as string | null;
      } while (cursor !== null);
    } finally {
      inserting = false;
      await writer;
    }
    return { pages, inserted };
  };

  const check = (pages: ListedEventJson[][], limit: number, expected: string[]) => {
    const listed = pages.flat();
    const ids = listed.map((event) => event.eventId);
    // No repeats, within or across pages.
    expect(new Set(ids).size).toBe(ids.length);
    // No gaps: every event that existed before paging began is there.
    const seen = new Set(ids);
    expect(expected.filter((id) => !seen.has(id))).toEqual([]);
    // One order across page boundaries.
    expect(inListOrder(listed)).toBe(true);
    // Every page but the last is full.
    for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
  };

  it("all events, 37 a page: no gaps, no repeats, ordered", async () => {
    const { pages, inserted } = await pageWhileInserting({}, 37);
    expect(inserted).toBeGreaterThan(0);
    check(pages, 37, existing);
    expect(pages.length).toBeGreaterThanOrEqual(Math.ceil(EVENTS / 37));
  });

  it("one tenant, 200 a page: no gaps, no repeats, ordered", async () => {
    const { pages } = await pageWhileInserting({ tenantId: "even" }, 200);
    check(
      pages,
      200,
      existing.filter((_, i) => i % 2 === 0),
    );
    expect(pages.flat().every((event) => event.tenantId === "even")).toBe(true);
  });

  it("a search with a time window, 23 a page: no gaps, no repeats, ordered", async () => {
    const from = occurredAt(1599);
    const to = occurredAt(400);
    const { pages } = await pageWhileInserting({ q: "fifth walk", from, to }, 23);
    const expected = existing.filter((_, i) => i % 5 === 0 && i >= 400 && i <= 1599);
    check(pages, 23, expected);
    for (const event of pages.flat()) {
      expect(event.actorDisplay).toBe("Fifth Walker");
      expect(Date.parse(event.occurredAt)).toBeGreaterThanOrEqual(Date.parse(from));
      expect(Date.parse(event.occurredAt)).toBeLessThanOrEqual(Date.parse(to));
    }
  });

  it("a listing without concurrent writes returns exactly the events there are", async () => {
    const project = await server.provision();
    const ids = await createEvents(
      server,
      project.secret,
      Array.from({ length: 120 }, (_, i) =>
        validEvent({ occurredAt: occurredAt(i), entityId: `x${i}` }),
      ),
    );
    const pages: ListedEventJson[][] = [];
    let cursor: string | null = null;
    do {
      const response = await listEvents(server, bearer(project.secret), {
        limit: 50,
        ...(cursor ? { cursor } : {}),
      });
      pages.push(response.body.events as ListedEventJson[]);
      cursor = response.body.nextCursor as string | null;
    } while (cursor !== null);
    expect(pages.map((page) => page.length)).toEqual([50, 50, 20]);
    expect(new Set(pages.flat().map((event) => event.eventId))).toEqual(new Set(ids));
  });
});
