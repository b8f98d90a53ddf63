/**
 * Migration 12 (time-partitioned content) on a database written by version 11, the schema
 * before it: every row is copied into the partitioned tables, stamped with its log's
 * period (0 for a log kept for ever), into its (period, day) partition, or the period's
 * default partition for a day older than the period; `event_contexts` and `event_index`
 * get the journal row's receivedAt. Then retention expires the default partition's rows
 * by the batched path and the rest by dropping their partitions. Runs on the suite's
 * driver.
 */
import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRetentionJob } from "../../src/lifecycle/retention-job.js";
import type { Db } from "../../src/store/db.js";
import { migrate, migrations } from "../../src/store/migrations.js";
import { createIsolatedDb } from "../support/isolated-storage.js";

const DAY = 86_400_000;
let db: Db;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
});

afterAll(async () => {
  await cleanup();
});

/** Writes one integrated event as version 11 stores it: journal, context, index row. */
async function writeVersion11Event(projectId: string, logIndex: number, receivedAt: Date) {
  const id = crypto.randomUUID();
  await db.query(
    `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                         payload)
     values ($1, 'live', $2, $3, $3, 1, $4)`,
    [projectId, id, receivedAt, randomBytes(64)],
  );
  await db.query(
    `insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
     values ($1, 'live', $2, 1, $3)`,
    [projectId, id, randomBytes(32)],
  );
  await db.query(
    `insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                              actor_idx, entity_type_idx, entity_id_idx, action_idx,
                              search_tokens)
     select $1, 'live', $2, e.id, e.xid, e.occurred_at, $4, $4, $4, $4, '{1,2,3}'
       from events e where e.project_id = $1 and e.id = $3`,
    [projectId, logIndex, id, randomBytes(16)],
  );
  return id;
}

describe("migration 12: time-partitioned content", () => {
  it("moves every row into its period's and day's partition, and retention then expires them", async () => {
    expect(await migrate(db, migrations.slice(0, 11))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const [retained, forEver] = [crypto.randomUUID(), crypto.randomUUID()];
    for (const id of [retained, forEver]) {
      await db.query(
        "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'p', 'pro', '\\x00')",
        [id],
      );
    }
    await db.query(
      "insert into log_retention (project_id, environment, retention_days) values ($1, 'live', 30)",
      [retained],
    );
    const now = Date.now();
    const received = [now - 40 * DAY, now - 2 * DAY, now - DAY, now].map((ms) => new Date(ms));
    const ids: string[] = [];
    for (const [i, at] of received.entries()) ids.push(await writeVersion11Event(retained, i, at));
    const kept = [await writeVersion11Event(forEver, 0, received[0] ?? new Date())];
    for (const projectId of [retained, forEver]) {
      await db.query(
        `insert into log_trees (project_id, environment, size)
         select $1, 'live', count(*) from event_index where project_id = $1`,
        [projectId],
      );
      await db.query(
        `update event_logs set size = (select count(*) from event_index where project_id = $1),
                integrated_xid = pg_current_xact_id()
          where project_id = $1 and environment = 'live'`,
        [projectId],
      );
    }

    expect(await migrate(db)).toEqual([12]);

    // Each row in its partition, stamped, with the journal row's receivedAt everywhere.
    const dayName = (at: Date) => at.toISOString().slice(0, 10).replaceAll("-", "");
    for (const table of ["events", "event_contexts", "event_index"]) {
      const idColumn = table === "event_contexts" ? "event_id" : "id";
      const rows = await db.query<{ id: string; part: string; days: number; received_at: Date }>(
        `select t.${idColumn} as id, c.relname as part, t.retention_days as days, t.received_at
           from ${table} t join pg_class c on c.oid = t.tableoid`,
      );
      const byId = new Map(rows.map((row) => [row.id, row]));
      expect(rows).toHaveLength(5);
      expect(byId.get(ids[0] ?? "")?.part).toBe(`${table}_r30_default`);
      for (const i of [1, 2, 3]) {
        const at = received[i] ?? new Date();
        expect(byId.get(ids[i] ?? "")?.part).toBe(`${table}_r30_${dayName(at)}`);
        expect(byId.get(ids[i] ?? "")?.received_at.getTime()).toBe(at.getTime());
      }
      expect(byId.get(kept[0] ?? "")).toMatchObject({ part: `${table}_r0`, days: 0 });
    }
    // Partitions exist up to three days ahead: new events never wait for the job.
    const ahead = dayName(new Date(now + 3 * DAY));
    const [found] = await db.query<{ n: number }>(
      "select count(*)::int as n from pg_class where relname = $1",
      [`event_index_r30_${ahead}`],
    );
    expect(found?.n).toBe(1);

    const job = (at: number) =>
      createRetentionJob({
        db,
        logger: pino({ level: "silent" }),
        intervalMs: 3_600_000,
        now: () => new Date(at),
      });
    // Today: the row 40 days old, in the default partition, goes by the batched path.
    expect((await job(now).runOnce()).expired).toBe(1);
    // 30 days after today began, the days of the next two have ended 30 days ago: their
    // partitions go; today's stays (its events are kept until their whole day has expired).
    const today = Math.floor(now / DAY) * DAY;
    expect((await job(today + 30 * DAY + 3_600_000).runOnce()).expired).toBe(2);
    const tombstones = await db.query<{ id: string }>(
      "select id from event_tombstones where project_id = $1 order by log_index",
      [retained],
    );
    expect(tombstones.map((t) => t.id)).toEqual(ids.slice(0, 3));
    const [partitions] = await db.query<{ n: number }>(
      "select count(*)::int as n from pg_class where relname = any($1::text[])",
      [
        [1, 2].flatMap((i) =>
          ["events", "event_contexts", "event_index"].map(
            (table) => `${table}_r30_${dayName(received[i] ?? new Date())}`,
          ),
        ),
      ],
    );
    expect(partitions?.n).toBe(0);
    const [left] = await db.query<{ n: number }>(
      "select count(*)::int as n from event_index where project_id = $1",
      [retained],
    );
    expect(left?.n).toBe(1);
  });
});
