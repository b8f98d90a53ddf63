/**
 * The monthly event quota of a project's plan (spec 1.6, 7, 8), counted per UTC
 * calendar month and per environment, created events only. The count is taken in the
 * event's own transaction: the counter row is incremented only while it is below the
 * limit, under the row lock that `on conflict do update` takes, so concurrent requests
 * on any number of instances can never pass the limit, and an event that is not
 * committed is not counted. The plan is read in the same transaction, so a plan change
 * takes effect on the next request.
 */
import { ServiceError } from "../errors.js";
import type { InTransactionCheck } from "../store/events.js";
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

/** The quota step, run inside the event's transaction before its insert. */
export function createMonthlyQuotaCheck(): InTransactionCheck {
  return async (tx, event) => {
    const [project] = await tx.query<{ plan: PlanName }>(
      "select plan from projects where id = $1",
      [event.projectId],
    );
    if (!project) throw new Error(`project ${event.projectId} vanished during a write`);
    const limit = MONTHLY_LIMITS[project.plan];
    const month = utcMonth(event.receivedAt);
    const counted = await tx.query<{ count: number }>(
      `insert into usage_counters (project_id, environment, month, count)
       values ($1, $2, $3, 1)
       on conflict (project_id, environment, month)
       do update set count = usage_counters.count + 1
       where usage_counters.count < $4
       returning count`,
      [event.projectId, event.environment, month, limit],
    );
    if (counted.length > 0) return;
    const [row] = await tx.query<{ count: number }>(
      `select count from usage_counters where project_id = $1 and environment = $2 and month = $3`,
      [event.projectId, event.environment, month],
    );
    const current = row?.count ?? 0;
    throw new ServiceError("quota_exceeded", quotaMessage(project.plan, limit), {
      quota: { current, limit, plan: project.plan },
    });
  };
}
