/**
 * Read-your-writes for lists (docs/write-path.md): an event acknowledged before a list
 * request began is in its results, on every instance. Lists read only what the
 * integrator derived; so a list first reads its log's journal head (the last row, one
 * step of the journal's index) and, while the log's integrated position is behind it,
 * nudges this instance's integrator and polls the position, up to `maxWaitMs`. Past that
 * bound the list is refused with 503 and `Retry-After` rather than answered without
 * events it must hold: the journal is never scanned to hide a backlog.
 *
 * The head read covers every event acknowledged before the request: its transaction has
 * committed, so its row is visible, at or before the head in (xid, id) order, and the
 * integrator passes the head only once every row at or before it has its index row.
 */
import { Messages, ServiceError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import { reached, readIntegratedPosition, readLogProgress } from "../store/log-integration.js";

/** Waits until a log's integrator has passed what its journal holds now. */
export interface ReadYourWrites {
  /** Resolves once every event acknowledged so far in the log is listable. */
  awaitIntegrated(projectId: string, environment: string): Promise<void>;
}

/** Options of the wait. */
export interface ReadYourWritesOptions {
  db: Queryable;
  /** Asks this instance's integrator for a pass now. */
  nudge: () => void;
  /** Longest wait before a 503 (default 5 s). */
  maxWaitMs?: number;
  /** Called with how long a list waited, when it had to (one refused after it too). */
  onWaited?: (seconds: number) => void;
}

/** Creates the wait. */
export function createReadYourWrites(options: ReadYourWritesOptions): ReadYourWrites {
  const maxWait = options.maxWaitMs ?? 5_000;
  return {
    async awaitIntegrated(projectId, environment) {
      const progress = await readLogProgress(options.db, projectId, environment);
      const head = progress?.head;
      if (!progress || !head || reached(progress.integrated, head)) return;
      const started = performance.now();
      options.nudge();
      // Polls every 2 ms at first, then less often: a pass usually lands within tens
      // of milliseconds, and the poll is one primary-key read.
      for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        const position = await readIntegratedPosition(options.db, projectId, environment);
        if (!position || reached(position, head)) break;
        if (performance.now() - started > maxWait) {
          // The longest waits belong in the histogram too, not only those that ended well.
          options.onWaited?.((performance.now() - started) / 1000);
          throw new ServiceError("unavailable", Messages.integrationBehind, {
            retryAfterSeconds: 1,
          });
        }
      }
      options.onWaited?.((performance.now() - started) / 1000);
    },
  };
}
