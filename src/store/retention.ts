/**
 * How long each log (a project's environment) keeps its events: `log_retention`, one row
 * per log whose retention was ever set. A log without a row keeps its events for ever
 * (0 days), as does one set to 0. docs/lifecycle.md, "Retention".
 */
import type { EnvironmentName } from "../vocabulary/tenancy.js";
import type { Queryable } from "./db.js";

/**
 * SQL for the retention period to stamp on a log's new content rows (events,
 * event_contexts, event_index): the partition they go to (migration 12,
 * docs/lifecycle.md). `projectId` and `environment` are SQL expressions of the row's log.
 */
export function retentionStamp(projectId: string, environment: string): string {
  return `coalesce((select r.retention_days from log_retention r
                     where r.project_id = ${projectId} and r.environment = ${environment}), 0)`;
}

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
 * The retention of each of `projectIds`' logs; a project without rows keeps its events for
 * ever (0 days in both environments).
 */
export async function readRetention(
  db: Queryable,
  projectIds: readonly string[],
): Promise<Map<string, RetentionDays>> {
  const found = new Map<string, RetentionDays>(projectIds.map((id) => [id, { test: 0, live: 0 }]));
  if (projectIds.length === 0) return found;
  const rows = await db.query<{
    project_id: string;
    environment: EnvironmentName;
    retention_days: number;
  }>(
    `select project_id, environment, retention_days from log_retention
      where project_id = any($1::uuid[])`,
    [`{${projectIds.join(",")}}`],
  );
  for (const row of rows) {
    const days = found.get(row.project_id);
    if (days) days[row.environment] = row.retention_days;
  }
  return found;
}
