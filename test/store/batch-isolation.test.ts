/**
 * Events of concurrent requests share one statement (group commit). A value the
 * database refuses fails that statement: the other events of the batch, from other
 * requests and other projects, must still be written and acknowledged, and only the
 * event that holds the value fails. Validation keeps such values out (an occurredAt
 * outside years 0001 to 9999 gets 422); this is the store's own guard behind it. Runs on
 * the suite's driver (PostgreSQL with DATABASE_URL, PGlite otherwise).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import type { Db } from "../../src/store/db.js";
import { createEventStore } from "../../src/store/events.js";
import { migrate } from "../../src/store/migrations.js";
import { createIsolatedDb } from "../support/isolated-storage.js";
import { newStoredEvent } from "../support/store-fixtures.js";

let db: Db;
let cleanup: () => Promise<void>;
const projects = [randomUUID(), randomUUID()];

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
  await migrate(db);
  for (const id of projects) {
    await db.query(
      "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'p', 'pro', $2)",
      [id, randomBytes(60)],
    );
  }
});

afterAll(async () => {
  await cleanup();
});

const count = async (sql: string, projectId: string) =>
  (await db.query<{ n: number }>(sql, [projectId]))[0]?.n ?? -1;

describe("a batch with a value the database refuses", () => {
  it("writes every other event of the batch and fails only that one", async () => {
    const store = createEventStore(db, {
      quota: { limits: { pro: 1_000_000 }, refuse: () => new ServiceError("quota_exceeded", "") },
    });
    // Year 10000 in UTC is written as +010000-01-01T..., which PostgreSQL refuses.
    const refused = new Date(Date.parse("9999-12-31T23:59:59Z") + 2_000);
    const [sharedKey, sharedBody] = [randomBytes(32), randomBytes(32)];
    const events = [
      newStoredEvent(projects[0] as string),
      newStoredEvent(projects[1] as string, { keyHash: sharedKey, bodyHash: sharedBody }),
      newStoredEvent(projects[1] as string, { occurredAt: refused, keyHash: randomBytes(32) }),
      newStoredEvent(projects[0] as string, { keyHash: randomBytes(32) }),
      newStoredEvent(projects[1] as string),
      // The same key as the second event: it waits for that event's write, through the
      // failed statement and the retries, and then replays it.
      newStoredEvent(projects[1] as string, { keyHash: sharedKey, bodyHash: sharedBody }),
    ];
    // Queued in one turn of the event loop: one batch (and the repeated key in the next).
    const results = await Promise.allSettled(events.map((event) => store.createEvent(event)));

    expect(results.map((result) => result.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
      "fulfilled",
    ]);
    const [, keyed, , , , repeated] = results;
    expect(repeated).toEqual({
      status: "fulfilled",
      value: {
        eventId: keyed?.status === "fulfilled" ? keyed.value.eventId : "",
        receivedAt: expect.any(Date),
        replayed: true,
      },
    });
    const [firstProject, secondProject] = projects as [string, string];
    expect(
      await count("select count(*)::int as n from events where project_id = $1", firstProject),
    ).toBe(2);
    expect(
      await count("select count(*)::int as n from events where project_id = $1", secondProject),
    ).toBe(2);
    // The refused event was not counted against the quota, and its key was not claimed.
    const counted =
      "select coalesce(sum(count), 0)::int as n from usage_counters where project_id = $1";
    expect(await count(counted, firstProject)).toBe(2);
    expect(await count(counted, secondProject)).toBe(2);
    const keys = "select count(*)::int as n from idempotency_keys where project_id = $1";
    expect(await count(keys, firstProject)).toBe(1);
    expect(await count(keys, secondProject)).toBe(1);
  });
});
