/**
 * The verifiable log's stage of the integrator (docs/write-path.md, docs/verifiable-log.md):
 * in the pass's transaction, after the events of a log are numbered, it computes each
 * event's leaf (commitment over the event as GET /api/events shows it) and appends the
 * leaves to the log's stored tree. Off the acknowledgement path, in bulk, and atomic with
 * the numbering: a pass that fails leaves neither.
 *
 * Events numbered before the tree existed (a database migrated to the journal) are
 * appended first, read back through `backfill`, so the tree always holds every numbered
 * event of its log, in logIndex order.
 */
import type { Queryable } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { listedEventLeaf } from "../tlog/leaf.js";
import { appendLeaves } from "./tree-append.js";
import { type LogAddress, readTreeSize } from "./tree-store.js";

/** The part of an integrator batch the stage reads. */
export interface TreeBatch {
  readonly projectId: string;
  readonly environment: string;
  /** The first event's log index. */
  readonly firstIndex: bigint;
}

/** Options of createTreeStage. */
export interface TreeStageOptions<B extends TreeBatch> {
  crypto: LogCrypto;
  /**
   * Each event of the batch as GET /api/events lists it (with `logIndex` and `salt`), in
   * log-index order.
   */
  render(tx: Queryable, batch: B): Promise<Record<string, unknown>[]>;
  /** The events at log indexes [from, to) of a log, as render gives them. */
  backfill(
    tx: Queryable,
    log: LogAddress,
    from: number,
    to: number,
  ): Promise<Record<string, unknown>[]>;
}

/** An integration stage (the integrator's IntegrationStage shape). */
export interface TreeStage<B extends TreeBatch> {
  readonly needsContext: boolean;
  apply(tx: Queryable, batches: readonly B[]): Promise<void>;
}

/** The stage that grows each log's tree. */
export function createTreeStage<B extends TreeBatch>(options: TreeStageOptions<B>): TreeStage<B> {
  const { crypto } = options;

  const leavesOf = async (events: Record<string, unknown>[], from: number) =>
    Promise.all(
      events.map(async (event, i) => {
        const { leaf, logIndex } = await listedEventLeaf(crypto, event);
        if (logIndex !== from + i) {
          throw new Error(`log tree: event at position ${from + i} says logIndex ${logIndex}`);
        }
        return leaf;
      }),
    );

  return {
    // The commitment covers the context, so its ciphertext must be read.
    needsContext: true,
    async apply(tx, batches) {
      for (const batch of batches) {
        const log = { projectId: batch.projectId, environment: batch.environment };
        const first = Number(batch.firstIndex);
        let size = await readTreeSize(tx, log);
        if (size > first) {
          throw new Error(`log tree: tree of size ${size} is ahead of the log at ${first}`);
        }
        if (size < first) {
          const missing = await options.backfill(tx, log, size, first);
          size = await appendLeaves(crypto, tx, log, size, await leavesOf(missing, size));
        }
        await appendLeaves(
          crypto,
          tx,
          log,
          size,
          await leavesOf(await options.render(tx, batch), first),
        );
      }
    },
  };
}
