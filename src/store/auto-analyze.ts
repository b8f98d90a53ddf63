/**
 * ANALYZE for the embedded database. PostgreSQL's autovacuum keeps each table's planner
 * statistics fresh; PGlite runs no autovacuum, so its tables were never analyzed and the
 * planner costed every statement as if they held a few rows (a join that scanned the
 * whole log per page read: store/event-reads.ts `EVENT_ROW_JOINS`). This task analyzes,
 * every interval, the tables changed past autovacuum's own threshold since their last
 * analysis: 50 rows plus a tenth of the table (`autovacuum_analyze_threshold`,
 * `autovacuum_analyze_scale_factor`). It holds PGlite's one connection while it runs
 * (measured: 0.8 s for every table of a 66,000-event database), which the threshold
 * makes rare as tables grow.
 */
import type { Logger } from "pino";
import { createPeriodicTask, type PeriodicTask } from "../periodic-task.js";
import type { Queryable } from "./db.js";

/** autovacuum_analyze_threshold and autovacuum_analyze_scale_factor, PostgreSQL's defaults. */
const BASE_THRESHOLD = 50;
const SCALE_FACTOR = 0.1;

/** Analyzes the tables due now; returns their names. */
export async function analyzeDueTables(db: Queryable): Promise<string[]> {
  // A session's table counters reach pg_stat_user_tables at most once a second; this one's
  // own recent changes are sent now, so that the choice sees them.
  await db.query("select pg_stat_force_next_flush()");
  const due = await db.query<{ name: string }>(
    `select quote_ident(schemaname) || '.' || quote_ident(relname) as name
       from pg_stat_user_tables
      where n_mod_since_analyze > $1::int8 + $2::float8 * n_live_tup
      order by relname`,
    [BASE_THRESHOLD, SCALE_FACTOR],
  );
  for (const { name } of due) await db.query(`analyze ${name}`);
  return due.map((table) => table.name);
}

/** The task, every `intervalMs` (default a minute); started by the app on PGlite. */
export function createAutoAnalyze(
  db: Queryable,
  logger: Logger,
  intervalMs = 60_000,
): PeriodicTask<string[]> {
  return createPeriodicTask(
    async () => {
      const analyzed = await analyzeDueTables(db);
      if (analyzed.length > 0) logger.debug({ tables: analyzed }, "analyzed tables");
      return analyzed;
    },
    { intervalMs, logger, what: "auto-analyze", runAtStart: true },
  );
}
