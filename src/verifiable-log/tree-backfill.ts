/**
 * Backfills the trees of logs whose events were numbered before the tree existed (a
 * database migrated to the verifiable log), also when no new event comes to start an
 * integrator pass: every `intervalMs`, the tree stage's `catchUp` (tree-stage.ts) appends
 * their leaves one chunk a transaction, each under the integrator's lock of the log.
 * Every instance runs one; the lock keeps them, and the passes, from appending twice.
 */
import type { Logger } from "pino";
import { createPeriodicTask } from "../periodic-task.js";
import type { Db } from "../store/db.js";

/** The backfill loop of one instance. */
export interface TreeBackfill {
  start(): void;
  /** Catches up now; returns the leaves appended. */
  runNow(): Promise<number>;
  /** Stops after the chunk in flight. */
  stop(): Promise<void>;
}

/** Options of createTreeBackfill. */
export interface TreeBackfillOptions {
  db: Db;
  stage: { catchUp(db: Db, stop?: () => boolean): Promise<number> };
  logger: Logger;
  intervalMs: number;
}

/** Creates the loop; `start` runs it. */
export function createTreeBackfill(options: TreeBackfillOptions): TreeBackfill {
  const { db, stage, logger } = options;
  const task = createPeriodicTask(
    async () => {
      const appended = await stage.catchUp(db, () => task.stopped());
      if (appended > 0) logger.info({ appended }, "log tree backfill: leaves appended");
      return appended;
    },
    // The database away, or an event that cannot be opened: retried next tick.
    { intervalMs: options.intervalMs, logger, what: "log tree backfill" },
  );
  return { start: task.start, runNow: task.runNow, stop: task.stop };
}
