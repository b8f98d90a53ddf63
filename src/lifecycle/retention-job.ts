/**
 * The expiry job of retention (docs/lifecycle.md, "Retention"): every instance runs it at
 * start and then every RETENTION_INTERVAL_SECONDS (at most an hour). A run goes through
 * every log with a retention period and turns its integrated events received before
 * `now - period` into tombstones, in batches of one transaction each
 * (store/retention-expiry.ts), until a batch finds none.
 *
 * Invariants: a log is worked by one instance at a time (each batch takes the log's
 * retention lock; a log locked elsewhere is left to that instance); a crash (SIGKILL)
 * between batches loses nothing (each batch commits whole) and the next run resumes the
 * run it cut short, with the same cutoff; an event not yet integrated is never touched.
 */
import type { Logger } from "pino";
import { createPeriodicTask } from "../periodic-task.js";
import type { Db } from "../store/db.js";
import { expireBatch, type RetainedLog, retainedLogs } from "../store/retention-expiry.js";
import { expirePartitions } from "./retention-partitions.js";

const DAY_MS = 86_400_000;

/** Dependencies of the expiry job. */
export interface RetentionJobDeps {
  db: Db;
  logger: Pick<Logger, "info" | "warn">;
  /** Time between runs; a run also starts at `start()`. */
  intervalMs: number;
  /** Events per batch (one transaction). */
  batchSize?: number;
  /** The clock that sets each run's cutoff (tests move it). */
  now?: () => Date;
}

/** What one run did. */
export interface RetentionRunResult {
  /** Events turned into tombstones. */
  expired: number;
  /** Logs left to another instance, which held their lock. */
  skipped: number;
}

/** The expiry job. */
export interface RetentionJob {
  /** Runs once now (after the run in progress, if any). */
  runOnce(): Promise<RetentionRunResult>;
  /** Runs now and then every interval. */
  start(): void;
  /** Stops after the batch in progress; resolves when it has committed. */
  stop(): Promise<void>;
}

/** Creates the expiry job. */
export function createRetentionJob(deps: RetentionJobDeps): RetentionJob {
  const now = deps.now ?? (() => new Date());
  const batchSize = deps.batchSize ?? (deps.db.driver === "pglite" ? 1_000 : 5_000);

  const expireLog = async (log: RetainedLog): Promise<number | undefined> => {
    const cutoff = new Date(now().getTime() - log.retentionDays * DAY_MS);
    let expired = 0;
    while (!task.stopped()) {
      const batch = await deps.db.transaction((tx) => expireBatch(tx, log, cutoff, batchSize));
      if (!batch.locked) return expired > 0 ? expired : undefined;
      expired += batch.expired;
      if (batch.done) {
        // A resumed run had an older cutoff: go on with this run's.
        if (batch.run && batch.run.receivedBefore < cutoff) continue;
        break;
      }
    }
    return expired;
  };

  const run = async (): Promise<RetentionRunResult> => {
    const result = { expired: 0, skipped: 0 };
    const logs = await retainedLogs(deps.db);
    // Whole partitions first (docs/lifecycle.md, "Partitioned storage"); the batched path
    // below takes the rest and completes the runs the drops recorded.
    try {
      result.expired += await expirePartitions(
        deps,
        logs.map((log) => log.retentionDays),
        now(),
        () => task.stopped(),
      );
    } catch (error) {
      deps.logger.warn({ err: error }, "retention: partition path failed");
    }
    for (const log of logs) {
      if (task.stopped()) break;
      try {
        const expired = await expireLog(log);
        if (expired === undefined) result.skipped += 1;
        else result.expired += expired;
        if (expired) {
          deps.logger.info(
            { projectId: log.projectId, environment: log.environment, expired },
            "retention expired events",
          );
        }
      } catch (error) {
        // One log's failure does not stop the others; its next run resumes it.
        deps.logger.warn(
          { err: error, projectId: log.projectId, environment: log.environment },
          "retention run failed",
        );
      }
    }
    return result;
  };

  const task = createPeriodicTask(run, {
    intervalMs: deps.intervalMs,
    logger: deps.logger,
    what: "retention run",
    runAtStart: true,
  });
  return { runOnce: task.runNow, start: task.start, stop: task.stop };
}
