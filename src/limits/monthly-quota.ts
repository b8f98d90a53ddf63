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

/**
 * The quota step, run in the batch's transaction after the events are inserted. One
 * upsert per batch locks each counter row (in a fixed order, so batches never
 * deadlock), admits as many events as fit under the plan's limit and raises the count
 * by that many; the locks are held until COMMIT, which follows at once.
 */
export function createMonthlyQuotaCheck(): BatchCheck {
  const plans = Object.keys(MONTHLY_LIMITS) as PlanName[];
  const limits = plans.map((plan) => MONTHLY_LIMITS[plan]);
  return async (tx, events) => {
    const refusals: (ServiceError | undefined)[] = events.map(() => undefined);
    if (events.length === 0) return refusals;

    // One counter per project, environment and month; events keep their order in it.
    const groups = new Map<string, CounterGroup>();
    events.forEach((event, index) => {
      const month = utcMonth(event.receivedAt);
      const key = counterKey(event.projectId, event.environment, month);
      const group = groups.get(key) ?? {
        projectId: event.projectId,
        environment: event.environment,
        month,
        members: [],
      };
      group.members.push(index);
      groups.set(key, group);
    });
    const ordered = [...groups.values()];
    const rows = await tx.query<CounterRow>(
      `insert into usage_counters as u (project_id, environment, month, count, last_added)
       select w.project_id, w.environment, w.month, least(w.n, l.lim), least(w.n, l.lim)
         from unnest($1::uuid[], $2::text[], $3::date[], $4::int[])
              as w(project_id, environment, month, n)
         join projects p on p.id = w.project_id
         join unnest($5::text[], $6::int[]) as l(plan, lim) on l.plan = p.plan
        order by w.project_id, w.environment, w.month
       on conflict (project_id, environment, month) do update
         set count = u.count + greatest(0, least(excluded.count, (${LIMIT_OF_ROW}) - u.count)),
             last_added = greatest(0, least(excluded.count, (${LIMIT_OF_ROW}) - u.count))
       returning u.project_id, u.environment, u.month::text as month, u.count, u.last_added`,
      [
        ordered.map((group) => group.projectId),
        ordered.map((group) => group.environment),
        ordered.map((group) => group.month),
        ordered.map((group) => group.members.length),
        plans,
        limits,
      ],
    );
    const admitted = new Map(
      rows.map((row) => [counterKey(row.project_id, row.environment, row.month), row]),
    );
    const short = ordered.filter((group) => {
      const row = admitted.get(counterKey(group.projectId, group.environment, group.month));
      return (row?.last_added ?? 0) < group.members.length;
    });
    if (short.length === 0) return refusals;

    // Some events did not fit: name the plan and its limit in their refusals.
    const projectPlans = await tx.query<{ id: string; plan: PlanName }>(
      "select id, plan from projects where id = any($1::uuid[])",
      [short.map((group) => group.projectId)],
    );
    const planOf = new Map(projectPlans.map((row) => [row.id, row.plan]));
    for (const group of short) {
      const row = admitted.get(counterKey(group.projectId, group.environment, group.month));
      const plan = planOf.get(group.projectId);
      if (!plan) throw new Error(`project ${group.projectId} vanished during a write`);
      const limit = MONTHLY_LIMITS[plan];
      for (const index of group.members.slice(row?.last_added ?? 0)) {
        refusals[index] = new ServiceError("quota_exceeded", quotaMessage(plan, limit), {
          quota: { current: row?.count ?? limit, limit, plan },
        });
      }
    }
    return refusals;
  };
}

// The monthly limit of a counter row's project (for the upsert's conflict branch).
const LIMIT_OF_ROW = `select l2.lim from projects p2
  join unnest($5::text[], $6::int[]) as l2(plan, lim) on l2.plan = p2.plan
  where p2.id = u.project_id`;

interface CounterGroup {
  projectId: string;
  environment: string;
  month: string;
  members: number[];
}

interface CounterRow {
  project_id: string;
  environment: string;
  month: string;
  count: number;
  last_added: number;
}

function counterKey(projectId: string, environment: string, month: string): string {
  return `${projectId}|${environment}|${month}`;
}
