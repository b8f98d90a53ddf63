/**
 * How long each log (a project's environment) keeps its events: `log_retention`, one row
 * per log whose retention was ever set. A log without a row keeps its events for ever
 * (0 days), as does one set to 0. docs/lifecycle.md, "Retention".
 */
import type { EnvironmentName } from "../vocabulary/tenancy.js";
import type { Queryable } from "./db.js";

/** The longest retention that can be set: 100 years. */
export const MAX_RETENTION_DAYS = 36_500;

/** Days each environment of a project keeps its events; 0 is for ever. */
export type RetentionDays = Record<EnvironmentName, number>;

/**
 * Sets the retention of `environments` of a project, in one statement. Returns false
 * when the project does not exist (nothing is written then).
 */
export async function writeRetention(
  db: Queryable,
  projectId: string,
  environments: readonly EnvironmentName[],
  days: number,
): Promise<boolean> {
  const rows = await db.query(
    `insert into log_retention (project_id, environment, retention_days)
     select p.id, e.environment, $3
       from projects p cross join unnest($2::text[]) as e(environment)
      where p.id = $1
     on conflict (project_id, environment)
       do update set retention_days = excluded.retention_days, changed_at = now()
     returning project_id`,
    [projectId, `{${environments.join(",")}}`, days],
  );
  return rows.length > 0;
}

/**
 * The columns a project query adds to read its retention: `retention_test` and
 * `retention_live`, for `from projects p`.
 */
export const RETENTION_COLUMNS = `
  coalesce((select r.retention_days from log_retention r
             where r.project_id = p.id and r.environment = 'test'), 0)::int as retention_test,
  coalesce((select r.retention_days from log_retention r
             where r.project_id = p.id and r.environment = 'live'), 0)::int as retention_live`;
