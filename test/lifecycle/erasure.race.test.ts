/**
 * Erasing an actor while the same actor's events are being ingested erases the events
 * acknowledged before the call and none acknowledged after it; and an erasure made
 * through one instance is seen by every other (PostgreSQL: two instances, one database).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { bearer, listAll, listedEvents } from "../events/events-client.js";
import {
  postEvent,
  startTestServer,
  type TestServer,
  usingPostgres,
  validEvent,
} from "../support/test-server.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
});

afterAll(async () => {
  await server?.close();
});

interface Sent {
  startedAt: number;
  answeredAt: number;
  eventId: string;
}

describe("erasing an actor while its events are ingested", () => {
  it("erases what was acknowledged before the call and loses nothing after it", async () => {
    const { projectId, secret } = await server.provision();
    const sent: Sent[] = [];
    let stop = false;
    const writer = async () => {
      for (let i = 0; !stop; i++) {
        const startedAt = performance.now();
        const response = await postEvent(
          server,
          validEvent({ actorId: "racer", entityId: `doc_${i}` }),
          bearer(secret),
        );
        if (response.status !== 201) throw new Error(`Create Event answered ${response.status}`);
        sent.push({
          startedAt,
          answeredAt: performance.now(),
          eventId: String(response.body.eventId),
        });
      }
    };
    const writers = Array.from({ length: 6 }, writer);
    while (sent.length < 150) await new Promise((resolve) => setTimeout(resolve, 10));

    const callAt = performance.now();
    const result = await server.admin.eraseEvents({
      projectId,
      environment: Environment.TEST,
      actorId: "racer",
    });
    const answeredAt = performance.now();
    // Keep ingesting a while after the erasure answered.
    const countAtAnswer = sent.length;
    while (sent.length < countAtAnswer + 60)
      await new Promise((resolve) => setTimeout(resolve, 10));
    stop = true;
    await Promise.all(writers);

    const before = sent.filter((s) => s.answeredAt < callAt);
    const after = sent.filter((s) => s.startedAt > answeredAt);
    expect(before.length).toBeGreaterThanOrEqual(150);
    expect(after.length).toBeGreaterThanOrEqual(50);
    const listed = new Set(
      (await listAll(server, bearer(secret), { limit: 200 })).events.map((e) => e.eventId),
    );
    // Acknowledged before the call: erased. Sent after it answered: all kept.
    expect(before.filter((s) => listed.has(s.eventId))).toEqual([]);
    expect(after.filter((s) => !listed.has(s.eventId))).toEqual([]);
    // Exactly what it erased is gone: the rest of the log is listed.
    expect(listed.size).toBe(sent.length - Number(result.erased));
    expect(result.erased).toBe(result.matched);
    expect(result.erased).toBeGreaterThanOrEqual(BigInt(before.length));
  }, 120_000);
});

describe.runIf(usingPostgres)("across instances", () => {
  it("an erasure through one instance is seen by the other", async () => {
    const peer = await startTestServer({}, { peerOf: server });
    try {
      const { projectId, secret } = await server.provision();
      const created = await Promise.all(
        [0, 1, 2].map(() => postEvent(peer, validEvent({ actorId: "shared" }), bearer(secret))),
      );
      expect(created.map((c) => c.status)).toEqual([201, 201, 201]);
      expect(await listedEvents(peer, bearer(secret))).toHaveLength(3);
      const result = await server.admin.eraseEvents({
        projectId,
        environment: Environment.TEST,
        eventIds: [String(created[0]?.body.eventId)],
      });
      expect(result.erased).toBe(1n);
      expect((await listedEvents(peer, bearer(secret))).map((e) => e.eventId).sort()).toEqual(
        created
          .slice(1)
          .map((c) => String(c.body.eventId))
          .sort(),
      );
      const { erasures } = await peer.admin.listErasures({ projectId });
      expect(erasures.map((e) => e.status)).toEqual(["done"]);
    } finally {
      await peer.close();
    }
  });
});
