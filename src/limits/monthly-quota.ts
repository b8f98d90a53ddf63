/**
 * The monthly event quota of a project's plan (spec 1.6, 7, 8): the limits and the
 * refusal. Events are counted per UTC calendar month and per environment, created
 * events only, by the event store in the statement that writes them (store/journal-append.ts),
 * so the count is exact under any concurrency and across instances, and the plan is
 * read there too, so a plan change takes effect on the next request.
 */
import { ServiceError } from "../errors.js";
import type { QuotaPolicy } from "../store/events.js";
import type { PlanName } from "../vocabulary/tenancy.js";

export { utcMonth } from "../store/events.js";

/** Events per month by plan. */
export const MONTHLY_LIMITS: Readonly<Record<PlanName, number>> = {
  free: 1_000,
  start: 25_000,
  pro: 150_000,
};

/** The message of a quota refusal: says the limit is reached and to upgrade. */
export function quotaMessage(plan: string, limit: number): string {
  return `Monthly event limit reached: the ${plan} plan allows ${limit} events per month. Upgrade your plan to record more events.`;
}

/** The quota as the event store applies it. */
export const monthlyQuota: QuotaPolicy = {
  limits: MONTHLY_LIMITS,
  refuse: (refusal) =>
    new ServiceError("quota_exceeded", quotaMessage(refusal.plan, refusal.limit), {
      quota: refusal,
    }),
};
