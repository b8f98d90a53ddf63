/**
 * Publishes checkpoints: every `intervalMs` (LOG_CHECKPOINT_INTERVAL_MS), each log whose
 * tree grew past its latest checkpoint gets a new one, signed and kept. Every instance
 * runs one; two signing the same size write the same bytes (Ed25519 is deterministic and
 * the root of a size never changes), and the second insert is ignored.
 *
 * Invariant: a checkpoint is signed only over a root computed from the stored tiles of a
 * committed tree size, so it covers exactly the events numbered before it.
 */
import type { Logger } from "pino";
import { createPeriodicTask } from "../periodic-task.js";
import type { Db } from "../store/db.js";
import { signCheckpoint } from "../tlog/checkpoint.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { treeHash } from "../tlog/tree.js";
import type { LogSigning } from "./log-signing.js";
import { insertCheckpoint, logsToCheckpoint, tileHashReader } from "./tree-store.js";

/** The publisher of one instance. */
export interface CheckpointPublisher {
  start(): void;
  /** Publishes what is due now; returns the number of checkpoints written. */
  publishNow(): Promise<number>;
  stop(): Promise<void>;
}

/** Options of createCheckpointPublisher. */
export interface CheckpointPublisherOptions {
  db: Db;
  crypto: LogCrypto;
  signing: LogSigning;
  logger: Logger;
  intervalMs: number;
}

/** Creates the publisher; `start` runs it. */
export function createCheckpointPublisher(
  options: CheckpointPublisherOptions,
): CheckpointPublisher {
  const { db, crypto, signing, logger } = options;
  const publishNow = async () => {
    let published = 0;
    for (const log of await logsToCheckpoint(db)) {
      const rootHash = await treeHash(crypto, log.size, tileHashReader(crypto, db, log));
      const origin = signing.origin(log.projectId, log.environment);
      const note = await signCheckpoint(
        crypto,
        { origin, size: log.size, rootHash },
        await signing.signer(origin),
      );
      await insertCheckpoint(db, log, { size: log.size, root: rootHash, note });
      published++;
    }
    return published;
  };

  // The database away: the next tick tries again.
  const task = createPeriodicTask(publishNow, {
    intervalMs: options.intervalMs,
    logger,
    what: "checkpoint publisher: publishing",
  });
  return { start: task.start, publishNow: task.runNow, stop: task.stop };
}
