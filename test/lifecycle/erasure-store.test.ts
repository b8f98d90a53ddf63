/**
 * The tombstone model's store function (src/store/erasure-store.ts tombstoneEvents), on
 * the suite's driver: the rows holding or derived from an event's content go, a
 * tombstone with its leaf's facts stays, the tree is untouched, and a second call (or a
 * position never integrated) changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tombstoneEvents } from "../../src/store/erasure-store.js";
import { bearer, createEventsWithTimes, listedEvents } from "../events/events-client.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

const count = async (sql: string, params: unknown[]) => {
  const [row] = await server.app.db.query<{ n: string }>(
    `select count(*)::text as n ${sql}`,
    params,
  );
  return Number(row?.n);
};

describe("tombstoneEvents", () => {
  it("destroys content rows of the given positions and leaves tombstones and the tree", async () => {
    const { projectId, secret } = await server.provision();
    const created = await createEventsWithTimes(
      server,
      secret,
      Array.from({ length: 4 }, (_, i) =>
        validEvent({ entityId: `doc_${i}`, tenantId: "t1", context: { i } }),
      ),
      1,
    );
    // Listing waits for the integrator: every event has its log index.
    const before = await listedEvents(server, bearer(secret));
    expect(before).toHaveLength(4);
    const byIndex = new Map(before.map((event) => [event.logIndex, event]));
    const log = { projectId, environment: "test" };
    const [tiles] = await server.app.db.query<{ data: string }>(
      "select string_agg(encode(data, 'hex'), ',' order by level, n) as data from log_tiles where project_id = $1",
      [projectId],
    );

    const erasedAt = new Date();
    const done = await tombstoneEvents(server.app.db, log, [1n, 2n, 9n], { erasedAt });
    expect(done).toEqual([1n, 2n]);

    const erasedIds = [byIndex.get(1)?.eventId, byIndex.get(2)?.eventId];
    for (const table of ["events", "event_index"]) {
      expect(
        await count(`from ${table} where project_id = $1 and id = any($2::uuid[])`, [
          projectId,
          erasedIds,
        ]),
      ).toBe(0);
    }
    expect(
      await count("from event_contexts where project_id = $1 and event_id = any($2::uuid[])", [
        projectId,
        erasedIds,
      ]),
    ).toBe(0);
    const tombstones = await server.app.db.query<{
      log_index: string;
      id: string;
      received_at: Date;
      erased_at: Date;
    }>(
      `select log_index::text as log_index, id, received_at, erased_at from event_tombstones
        where project_id = $1 order by log_index`,
      [projectId],
    );
    expect(tombstones.map((t) => [Number(t.log_index), t.id, t.received_at.toISOString()])).toEqual(
      [1, 2].map((i) => [i, byIndex.get(i)?.eventId, byIndex.get(i)?.receivedAt]),
    );
    expect(tombstones.every((t) => t.erased_at.getTime() === erasedAt.getTime())).toBe(true);
    expect(created.map((c) => c.eventId).sort()).toEqual(before.map((e) => e.eventId).sort());

    // The list no longer shows them; the tree did not change.
    const after = await listedEvents(server, bearer(secret));
    expect(after.map((e) => e.logIndex).sort()).toEqual([0, 3]);
    const [tilesAfter] = await server.app.db.query<{ data: string }>(
      "select string_agg(encode(data, 'hex'), ',' order by level, n) as data from log_tiles where project_id = $1",
      [projectId],
    );
    expect(tilesAfter?.data).toBe(tiles?.data);

    // Again: nothing left to do.
    expect(await tombstoneEvents(server.app.db, log, [1n, 2n], { erasedAt })).toEqual([]);
    expect(await count("from event_tombstones where project_id = $1", [projectId])).toBe(2);
  });
});
