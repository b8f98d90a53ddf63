/**
 * The monthly event quota of a project's plan (spec 1.6, 7, 8), counted per UTC
 * calendar month and per environment, created events only. The count is taken in the
 * transaction that writes the events: the counter rows are locked (`for update`), as
 * many events as fit under the limit are admitted in arrival order, and the counter is
 * raised by that many, so concurrent requests on any number of instances can never pass
 * the limit, and an event that is not committed is not counted. The plan is read in the
 * same transaction, so a plan change takes effect on the next request.
 */
import { ServiceError } from "../errors.js";
import type { BatchCheck } from "../store/events.js";
import type { PlanName } from "../store/projects.js";

/** Events per month by plan. */
export const MONTHLY_LIMITS: Readonly<Record<PlanName, number>> = {
  free: 1_000,
  start: 25_000,
  pro: 150_000,
};

/** The message of a quota refusal: says the limit is reached and to upgrade. */
export function quotaMessage(plan: PlanName, limit: number): string {
  return `Monthly event limit reached: the ${plan} plan allows ${limit} events per month. Upgrade your plan to record more events.`;
}

/** The first day of `at`'s UTC month, as a SQL date. */
export function utcMonth(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, "0")}-01`;
}

/** The quota step, run inside the batch's transaction before the events are inserted. */
export function createMonthlyQuotaCheck(): BatchCheck {
  return async (tx, events) => {
    const refusals: (ServiceError | undefined)[] = events.map(() => undefined);
    if (events.length === 0) return refusals;

    // One counter per project, environment and month; events keep their order in it.
    const groups = new Map<
      string,
      { projectId: string; environment: string; month: string; members: number[] }
    >();
    events.forEach((event, index) => {
      const month = utcMonth(event.receivedAt);
      const key = `${event.projectId}|${event.environment}|${month}`;
      const group = groups.get(key) ?? {
        projectId: event.projectId,
        environment: event.environment,
        month,
        members: [],
      };
      group.members.push(index);
      groups.set(key, group);
    });
    // A fixed lock order (the counters' primary key) keeps concurrent batches from deadlocking.
    const ordered = [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const columns = [
      ordered.map(([, group]) => group.projectId),
      ordered.map(([, group]) => group.environment),
      ordered.map(([, group]) => group.month),
    ];
    await tx.query(
      `insert into usage_counters (project_id, environment, month, count)
       select project_id, environment, month, 0
         from unnest($1::uuid[], $2::text[], $3::date[]) as w(project_id, environment, month)
       order by 1, 2, 3
       on conflict (project_id, environment, month) do nothing`,
      columns,
    );
    const rows = await tx.query<{
      project_id: string;
      environment: string;
      month: string;
      count: number;
      plan: PlanName;
    }>(
      `select u.project_id, u.environment, u.month::text as month, u.count, p.plan
         from usage_counters u
         join unnest($1::uuid[], $2::text[], $3::date[]) as w(project_id, environment, month)
           on u.project_id = w.project_id and u.environment = w.environment and u.month = w.month
         join projects p on p.id = u.project_id
        order by u.project_id, u.environment, u.month
        for update of u`,
      columns,
    );
    const current = new Map(
      rows.map((row) => [`${row.project_id}|${row.environment}|${row.month}`, row]),
    );

    const added: number[] = [];
    for (const [key, group] of ordered) {
      const row = current.get(key);
      if (!row) throw new Error(`usage counter ${key} missing after insert`);
      const limit = MONTHLY_LIMITS[row.plan];
      const allowed = Math.max(0, Math.min(group.members.length, limit - row.count));
      added.push(allowed);
      const reached = row.count + allowed;
      for (const index of group.members.slice(allowed)) {
        refusals[index] = new ServiceError("quota_exceeded", quotaMessage(row.plan, limit), {
          quota: { current: reached, limit, plan: row.plan },
        });
      }
    }
    if (added.some((count) => count > 0)) {
      await tx.query(
        `update usage_counters u set count = u.count + w.added
           from unnest($1::uuid[], $2::text[], $3::date[], $4::int[])
             as w(project_id, environment, month, added)
          where u.project_id = w.project_id and u.environment = w.environment
            and u.month = w.month and w.added > 0`,
        [...columns, added],
      );
    }
    return refusals;
  };
}
