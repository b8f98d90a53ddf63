/**
 * A batch is written by one of two statements: with the Idempotency-Key claim steps when
 * one of its events has a key, without them otherwise. Both must give every event the
 * same outcome: written while the plan's monthly limit allows, refused with the quota's
 * figures past it, failed when its project is unknown. Runs on the suite's driver
 * (PostgreSQL with DATABASE_URL, PGlite otherwise).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import type { Db } from "../../src/store/db.js";
import { createEventStore, type QuotaRefusal } from "../../src/store/events.js";
import { migrate } from "../../src/store/migrations.js";
import { createIsolatedDb } from "../support/isolated-storage.js";
import { newStoredEvent, recordingStatements } from "../support/store-fixtures.js";

let db: Db;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
  await migrate(db);
});

afterAll(async () => {
  await cleanup();
});

async function newProject(plan: "free" | "pro"): Promise<string> {
  const id = randomUUID();
  await db.query(
    "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'p', $2, $3)",
    [id, plan, randomBytes(60)],
  );
  return id;
}

const newEvent = (projectId: string, keyed: boolean) =>
  newStoredEvent(projectId, { keyHash: keyed ? randomBytes(32) : undefined });

const countOf = async (sql: string, projectId: string) =>
  (await db.query<{ n: number }>(sql, [projectId]))[0]?.n ?? -1;

describe.each([
  { batch: "without Idempotency-Keys", keyed: false },
  { batch: "with one Idempotency-Key", keyed: true },
])("a batch $batch", ({ keyed }) => {
  it("writes what the quota allows, refuses the rest with its figures, fails an unknown project", async () => {
    // The statements the store sends, to see which one wrote the batch.
    const sent: string[] = [];
    const store = createEventStore(recordingStatements(db, sent), {
      quota: {
        limits: { free: 3, pro: 1_000_000 },
        refuse: (refusal: QuotaRefusal) =>
          new ServiceError("quota_exceeded", JSON.stringify(refusal)),
      },
    });
    const [small, large] = [await newProject("free"), await newProject("pro")];
    const events = [
      newEvent(small, false),
      newEvent(large, false),
      newEvent(small, false),
      newEvent(small, false),
      newEvent(small, false),
      newEvent(large, keyed),
      newEvent(randomUUID(), false),
      newEvent(small, false),
    ];
    // Queued in one turn of the event loop: one batch, one statement.
    const results = await Promise.allSettled(events.map((event) => store.createEvent(event)));

    expect(sent).toHaveLength(1);
    expect(sent[0]?.includes("insert into idempotency_keys")).toBe(keyed);

    const refused = { current: 3, limit: 3, plan: "free" };
    const outcomes = results.map((result) =>
      result.status === "fulfilled"
        ? result.value.eventId
        : `${(result.reason as ServiceError).kind} ${(result.reason as ServiceError).message}`,
    );
    expect(outcomes).toEqual([
      events[0]?.eventId,
      events[1]?.eventId,
      events[2]?.eventId,
      events[3]?.eventId,
      `quota_exceeded ${JSON.stringify(refused)}`,
      events[5]?.eventId,
      "unavailable event write left without an outcome",
      `quota_exceeded ${JSON.stringify(refused)}`,
    ]);
    const stored = "select count(*)::int as n from events where project_id = $1";
    const contexts = "select count(*)::int as n from event_contexts where project_id = $1";
    const counted =
      "select coalesce(sum(count), 0)::int as n from usage_counters where project_id = $1";
    const claims = "select count(*)::int as n from idempotency_keys where project_id = $1";
    expect(await countOf(stored, small)).toBe(3);
    expect(await countOf(contexts, small)).toBe(3);
    expect(await countOf(counted, small)).toBe(3);
    expect(await countOf(stored, large)).toBe(2);
    expect(await countOf(counted, large)).toBe(2);
    expect(await countOf(claims, large)).toBe(keyed ? 1 : 0);
    const written = await db.query<{ id: string }>(
      "select id from events where project_id = any($1::uuid[]) order by id",
      [`{${small},${large}}`],
    );
    expect(written.map((row) => row.id).sort()).toEqual(
      [0, 1, 2, 3, 5].map((i) => events[i]?.eventId).sort(),
    );
  });
});
