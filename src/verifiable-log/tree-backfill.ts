/**
 * Backfills the trees of logs whose events were numbered before the tree existed (a
 * database migrated to the verifiable log), also when no new event comes to start an
 * integrator pass: every `intervalMs`, the tree stage's `catchUp` (tree-stage.ts) appends
 * their leaves one chunk a transaction, each under the integrator's lock of the log.
 * Every instance runs one; the lock keeps them, and the passes, from appending twice.
 */
import type { Logger } from "pino";
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
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let lastFailureLog = 0;

  const runNow = () => stage.catchUp(db, () => stopped);

  const tick = () => {
    running = runNow()
      .then((appended) => {
        if (appended > 0) logger.info({ appended }, "log tree backfill: leaves appended");
      })
      .catch((error: unknown) => {
        // The database away, or an event that cannot be opened: retried next tick.
        if (Date.now() - lastFailureLog > 60_000) {
          lastFailureLog = Date.now();
          logger.warn({ err: error }, "log tree backfill failed; retrying");
        }
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };

  return {
    start() {
      if (timer !== undefined || stopped) return;
      timer = setTimeout(tick, options.intervalMs);
    },
    runNow,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
