/**
 * Publishes checkpoints: every `intervalMs` (LOG_CHECKPOINT_INTERVAL_MS), each log whose
 * tree grew past its latest checkpoint gets a new one, signed and kept. Every instance
 * runs one; two signing the same size write the same bytes (Ed25519 is deterministic and
 * the root of a size never changes), and the second insert is ignored.
 *
 * On start it also signs every log's latest checkpoint with the current key when that
 * checkpoint lacks its signature (the key was rotated): the note keeps its old signature
 * and gains the new one, so that once every instance runs the new key,
 * `GET /api/log/checkpoint` verifies with the key `GET /api/log/key` serves, and still
 * with the key auditors pinned before.
 *
 * Invariant: a checkpoint is signed only over a root computed from the stored tiles of a
 * committed tree size, so it covers exactly the events numbered before it; a signature
 * added later is over the same text.
 */
import type { Logger } from "pino";
import { createPeriodicTask } from "../periodic-task.js";
import type { Db } from "../store/db.js";
import { formatCheckpoint, signCheckpoint } from "../tlog/checkpoint.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { TlogError } from "../tlog/errors.js";
import { cosignNote } from "../tlog/note.js";
import { treeHash } from "../tlog/tree.js";
import type { LogSigning } from "./log-signing.js";
import {
  cosignCheckpoint,
  insertCheckpoint,
  latestCheckpoints,
  logsToCheckpoint,
  tileHashReader,
} from "./tree-store.js";

/** The publisher of one instance. */
export interface CheckpointPublisher {
  start(): void;
  /** Publishes what is due now; returns the number of checkpoints written. */
  publishNow(): Promise<number>;
  /**
   * Adds the current key's signature to every log's latest checkpoint that lacks it;
   * returns how many it signed. `start` runs it once.
   */
  cosignLatest(): Promise<number>;
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

  const cosignLatest = async () => {
    let signed = 0;
    for (const latest of await latestCheckpoints(db)) {
      const origin = signing.origin(latest.projectId, latest.environment);
      // Only the stored checkpoint's own text is signed: the text rebuilt from its log, size
      // and root must be the note's (not so after LOG_ISSUER changed, say: it names another
      // origin, and stays as it is).
      const text = formatCheckpoint({ origin, size: latest.size, rootHash: latest.root });
      let note: string;
      try {
        note = await cosignNote(crypto, latest.note, await signing.signer(origin), text);
      } catch (error) {
        if (!(error instanceof TlogError)) throw error;
        logger.warn(
          { projectId: latest.projectId, environment: latest.environment, size: latest.size },
          "checkpoint publisher: the latest checkpoint is not this log's text; not signed again",
        );
        continue;
      }
      if (note === latest.note) continue;
      if (await cosignCheckpoint(db, latest, { was: latest.note, now: note })) signed++;
    }
    if (signed > 0) {
      logger.info({ checkpoints: signed }, "latest checkpoints signed with the current log key");
    }
    return signed;
  };

  // The database away: the next tick tries again.
  const task = createPeriodicTask(publishNow, {
    intervalMs: options.intervalMs,
    logger,
    what: "checkpoint publisher: publishing",
  });
  let cosigning: Promise<unknown> = Promise.resolve();
  return {
    start() {
      task.start();
      cosigning = cosignLatest().catch((error: unknown) => {
        logger.warn({ err: error }, "checkpoint publisher: signing the latest checkpoints failed");
      });
    },
    publishNow: task.runNow,
    cosignLatest,
    async stop() {
      await task.stop();
      await cosigning;
    },
  };
}
