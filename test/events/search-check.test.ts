/**
 * Search words whose token is not exact (a length other than the indexed prefix lengths,
 * crypto/blind-index.ts) are checked after decryption: an event that has the word's
 * token but not the word is never listed or exported, pages still fill to their limit,
 * and the last page has no cursor even when refused candidates follow it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { bearer, createEvents, listAll, listEvents } from "./events-client.js";
import { exportEvents, ndjson } from "./log-streams-client.js";

const BASE = Date.parse("2024-06-01T00:00:00.000Z");

/**
 * 60 events, newest first by index: "payment" (matches q=payme) and "paymaster" (has the
 * token p:paym of q=payme, not the word) alternate in runs of three, and the 12 oldest
 * are all "paymaster", so that refused candidates follow the last match.
 */
const EVENTS = 60;
const isPayment = (i: number) => i < EVENTS - 12 && Math.floor(i / 3) % 2 === 0;
const LONG = "y".repeat(33);

describe("search words checked after decryption", () => {
  let server: TestServer;
  let secret: string;
  let ids: string[];

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    secret = (await server.provision()).secret;
    const bodies = Array.from({ length: EVENTS }, (_, i) =>
      validEvent({
        occurredAt: new Date(BASE - i * 1000).toISOString(),
        entityId: `entity-${i}`,
        actorDisplay: isPayment(i) ? "Payment desk" : "Paymaster general",
        // Longer than 32 characters: whole words only, the 34-character one does not match.
        actionDescription: i % 2 === 0 ? `Reconciliation ${LONG}` : `Reconciling ${LONG}y`,
      }),
    );
    ids = await createEvents(server, secret, bodies, 20);
  });
  afterAll(async () => {
    await server?.close();
  });

  const expected = (match: (i: number) => boolean) =>
    ids.filter((_, i) => match(i)).map((id) => id);

  it("lists only the events with the word, in full pages, the last without a cursor", async () => {
    const matches = expected(isPayment);
    expect(matches).toHaveLength(24);
    for (const limit of [1, 5, 7, 24, 200]) {
      const { events, pages } = await listAll(server, bearer(secret), { q: "payme", limit });
      expect(events.map((event) => event.eventId)).toEqual(matches);
      // Every page but the last is full, and no empty page follows the last match.
      expect(pages).toBe(Math.ceil(matches.length / limit));
    }
    const first = await listEvents(server, bearer(secret), { q: "payme", limit: 24 });
    expect(first.body.events).toHaveLength(24);
    expect(first.body.nextCursor).toBeNull();
  });

  it("checks longer words too, and words shorter than 3 or longer than 32 as whole words", async () => {
    const reconciliation = expected((i) => i % 2 === 0);
    const reconciling = expected((i) => i % 2 === 1);
    const list = async (q: string) =>
      (await listAll(server, bearer(secret), { q, limit: 9 })).events.map((e) => e.eventId);
    expect(await list("reconciliation")).toEqual(reconciliation);
    expect(await list("reconcilin")).toEqual(reconciling);
    expect(await list("reconcil")).toEqual(ids);
    expect(await list(LONG)).toEqual(reconciliation);
    expect(await list(`${LONG}y`)).toEqual(reconciling);
    expect(await list("y".repeat(32))).toEqual(ids);
    expect(await list("reconciliation payme")).toEqual(
      expected((i) => i % 2 === 0 && isPayment(i)),
    );
    expect(await list("paymast")).toEqual(expected((i) => !isPayment(i)));
  });

  it("exports only the events with the word", async () => {
    const exported = ndjson((await exportEvents(server, bearer(secret), { q: "payme" })).text);
    expect(new Set(exported.map((event) => event.eventId))).toEqual(new Set(expected(isPayment)));
  });
});
