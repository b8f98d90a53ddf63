/**
 * The embedded database's stand-in for autovacuum's ANALYZE (store/auto-analyze.ts):
 * tables changed past 50 rows plus a tenth of their size since their last analysis are
 * analyzed, the others left alone, and a table just analyzed is not again. Always on
 * PGlite, which is where the app runs it (PostgreSQL analyzes by itself).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { analyzeDueTables } from "../../src/store/auto-analyze.js";
import type { Db } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { createPgliteDb } from "../../src/store/pglite-driver.js";

let db: Db;
beforeAll(async () => {
  db = await createPgliteDb("memory://");
  await migrate(db);
});
afterAll(async () => {
  await db?.close();
});

const lastAnalyzed = async (table: string) => {
  const [row] = await db.query<{ at: Date | null; rows: string }>(
    "select last_analyze as at, n_mod_since_analyze::text as rows from pg_stat_user_tables where relname = $1",
    [table],
  );
  return row;
};

it("analyzes the tables changed past the threshold, and only those", async () => {
  await db.query(
    `insert into projects (id, name, plan, wrapped_index_key)
     select gen_random_uuid(), 'p' || n, 'free', '\\x00'::bytea from generate_series(1, 200) n`,
  );
  await db.query(
    `insert into usage_counters (project_id, environment, month, count)
     select id, 'test', date '2026-11-01', 1 from projects limit 10`,
  );
  expect((await lastAnalyzed("projects"))?.at).toBeNull();

  const analyzed = await analyzeDueTables(db);
  expect(analyzed).toContain("public.projects");
  // 10 rows changed: under 50 plus a tenth of the table.
  expect(analyzed).not.toContain("public.usage_counters");
  expect((await lastAnalyzed("projects"))?.at).toBeInstanceOf(Date);
  expect((await lastAnalyzed("projects"))?.rows).toBe("0");

  expect(await analyzeDueTables(db)).toEqual([]);
});
