/**
 * Two service instances (two event stores on one database) write the same
 * Idempotency-Key at the same moment. One batch claims the key; on PostgreSQL the other
 * statement began before that claim committed, counted its event, and lost the key
 * ("lost" in write-outcomes.ts): it must answer with the winner's event (or a conflict when the
 * bodies differ), write nothing, and give its count back, so that the monthly counter
 * equals the events stored. On PGlite (one connection) the statements run one after the
 * other and the second finds the key held; the same answers must come out.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import { monthlyQuota } from "../../src/limits/monthly-quota.js";
import type { Db } from "../../src/store/db.js";
import { createEventStore, type EventStore, type NewEvent } from "../../src/store/events.js";
import { migrate } from "../../src/store/migrations.js";
import { createIsolatedDb } from "../support/isolated-storage.js";
import { newStoredEvent, recordingStatements } from "../support/store-fixtures.js";

let db: Db;
let cleanup: () => Promise<void>;
const statements: string[] = [];
const projectId = randomUUID();

beforeAll(async () => {
  const isolated = await createIsolatedDb();
  cleanup = isolated.cleanup;
  // Records each statement, to see which paths a write took.
  db = recordingStatements(isolated.db, statements);
  await migrate(db);
  await db.query(
    "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'race', 'pro', $2)",
    [projectId, randomBytes(60)],
  );
});

afterAll(async () => {
  await cleanup();
});

const newEvent = (keyHash: Buffer | undefined, bodyHash: Buffer): NewEvent =>
  newStoredEvent(projectId, { keyHash, bodyHash });

const count = async (sql: string) => (await db.query<{ n: number }>(sql, [projectId]))[0]?.n ?? -1;

describe("one Idempotency-Key from two instances at once", () => {
  it("creates one event per key, answers the other with it or a conflict, and counts exactly what is stored", async () => {
    const first: EventStore = createEventStore(db, { quota: monthlyQuota });
    const second: EventStore = createEventStore(db, { quota: monthlyQuota });
    statements.length = 0;
    const rounds = 20;
    for (let round = 0; round < rounds; round++) {
      const keyHash = randomBytes(32);
      const body = randomBytes(32);
      const sameBody = round % 2 === 0;
      const a = newEvent(keyHash, body);
      const b = newEvent(keyHash, sameBody ? body : randomBytes(32));
      // An event without a key in the second batch is written whatever happens to b.
      const unkeyed = newEvent(undefined, randomBytes(32));
      const [ra, rb, ru] = await Promise.allSettled([
        first.createEvent(a),
        second.createEvent(b),
        second.createEvent(unkeyed),
      ]);
      expect(ru).toMatchObject({ status: "fulfilled", value: { replayed: false } });
      const outcomes = [ra, rb];
      const created = outcomes.filter(
        (outcome) => outcome.status === "fulfilled" && !outcome.value.replayed,
      );
      expect(created).toHaveLength(1);
      const winner = created[0]?.status === "fulfilled" ? created[0].value : undefined;
      const other = outcomes.find((outcome) => outcome !== created[0]);
      if (sameBody) {
        expect(other).toMatchObject({
          status: "fulfilled",
          value: { replayed: true, eventId: winner?.eventId },
        });
      } else {
        expect(other?.status).toBe("rejected");
        const reason = other?.status === "rejected" ? other.reason : undefined;
        expect(reason).toBeInstanceOf(ServiceError);
        expect((reason as ServiceError).kind).toBe("conflict");
      }
    }
    await Promise.all([first.drain(), second.drain()]);

    const stored = await count("select count(*)::int as n from events where project_id = $1");
    expect(stored).toBe(rounds * 2);
    expect(await count("select count(*)::int as n from event_contexts where project_id = $1")).toBe(
      rounds * 2,
    );
    expect(
      await count("select count(*)::int as n from idempotency_keys where project_id = $1"),
    ).toBe(rounds);
    expect(
      await count("select sum(count)::int as n from usage_counters where project_id = $1"),
    ).toBe(stored);
    if (db.driver === "postgres") {
      // The lost-key path ran (its count given back), not only the held-key one.
      expect(
        statements.filter((sql) => sql.includes("update usage_counters set count = count -"))
          .length,
      ).toBeGreaterThan(0);
    }
  });
  it("on one instance, a request whose key is in a batch being written waits for it and replays it", async () => {
    const store = createEventStore(db, { quota: monthlyQuota });
    statements.length = 0;
    const keyHash = randomBytes(32);
    const body = randomBytes(32);
    // Three with one key: split over batches, each after the previous one has committed.
    const results = await Promise.all(
      [0, 1, 2].map(async () => {
        const first = store.createEvent(newEvent(keyHash, body));
        // A new turn for each, so that they would otherwise go out in concurrent batches.
        await new Promise((resolve) => setImmediate(resolve));
        return first;
      }),
    );
    expect(results.filter((result) => !result.replayed)).toHaveLength(1);
    expect(new Set(results.map((result) => result.eventId)).size).toBe(1);
    expect(
      statements.some((sql) => sql.includes("update usage_counters set count = count -")),
    ).toBe(false);
  });
});
