/**
 * Retention's partition path (docs/lifecycle.md, "Partitioned storage"): each run first
 * creates the partitions of every period in use ahead of time, then drops each (period,
 * day) partition whose day ended before `now - period`, its tombstones written in the same
 * transaction (store/retention-partitions.ts). What it cannot drop yet (rows not yet in
 * the tree, a lock held elsewhere) waits for the next run; rows of logs whose period
 * became longer are moved to their new period first. The batched path
 * (store/retention-expiry.ts) then takes what no partition drop covers.
 */
import type { Logger } from "pino";
import type { Db } from "../store/db.js";
import { utcDayStart } from "../store/retention-expiry.js";
import {
  createAhead,
  dropExpiredDay,
  partitionDays,
  partitionedPeriods,
  restampLog,
} from "../store/retention-partitions.js";

const DAY_MS = 86_400_000;

/** Dependencies of the partition path. */
export interface PartitionExpiryDeps {
  db: Db;
  logger: Pick<Logger, "info" | "warn">;
}

/**
 * Creates partitions ahead for `periodsInUse` and drops the expired ones of every
 * partitioned period, at `now`; returns the events expired (tombstones written). Stops
 * early when `stopping()` turns true.
 */
export async function expirePartitions(
  deps: PartitionExpiryDeps,
  periodsInUse: readonly number[],
  now: Date,
  stopping: () => boolean,
): Promise<number> {
  for (const days of new Set(periodsInUse)) {
    try {
      await createAhead(deps.db, days, now);
    } catch (error) {
      // Rows meanwhile go to the period's default partition: nothing is refused.
      deps.logger.warn({ err: error, retentionDays: days }, "retention: partitions not created");
    }
  }
  let expired = 0;
  for (const days of await partitionedPeriods(deps.db)) {
    const dayCutoff = utcDayStart(new Date(now.getTime() - days * DAY_MS)).getTime();
    for (const day of await partitionDays(deps.db, days)) {
      if (stopping() || day.getTime() + DAY_MS > dayCutoff) break;
      try {
        expired += await dropDay(deps, days, day, now);
      } catch (error) {
        deps.logger.warn(
          { err: error, retentionDays: days, day: day.toISOString().slice(0, 10) },
          "retention: partition not dropped",
        );
      }
    }
  }
  return expired;
}

async function dropDay(deps: PartitionExpiryDeps, days: number, day: Date, now: Date) {
  let result = await deps.db.transaction((tx) => dropExpiredDay(tx, days, day, now));
  if (result.kind === "keepers") {
    // Logs whose period became longer keep these rows: moved once, then the drop again.
    for (const log of result.logs) {
      const moved = await deps.db.transaction((tx) => restampLog(tx, log, days, now));
      deps.logger.info(
        { projectId: log.projectId, environment: log.environment, from: days, moved },
        "retention: rows moved to the log's new period",
      );
    }
    result = await deps.db.transaction((tx) => dropExpiredDay(tx, days, day, now));
  }
  const at = { retentionDays: days, day: day.toISOString().slice(0, 10) };
  if (result.kind === "dropped") {
    deps.logger.info({ ...at, expired: result.expired }, "retention: partition dropped");
    return result.expired;
  }
  if (result.kind !== "gone")
    deps.logger.info({ ...at, reason: result.kind }, "retention: partition kept for now");
  return 0;
}
