/**
 * The verifiable log's stage of the integrator (docs/write-path.md, docs/verifiable-log.md):
 * in the pass's transaction, after the events of a log are numbered, it computes each
 * event's leaf (commitment over the event as GET /api/events shows it) and appends the
 * leaves to the log's stored tree. Off the acknowledgement path, in bulk, and atomic with
 * the numbering: a pass that fails leaves neither. Every log of a pass together: one query
 * reads their tree sizes, one (rarely) the tiles their new leaves complete, one writes
 * their tiles and sizes (tree-append.ts), so a pass of a few events in each of many logs
 * costs about its leaves, not a dozen round trips per log. The work per event (render,
 * canonicalize, hash) lets requests run every EVENTS_PER_YIELD events, as the
 * integrator's own derivation does.
 *
 * Events numbered before the tree existed (a database migrated to the verifiable log) are
 * appended first, read back through `backfill`, so the tree holds a prefix of its log's
 * numbered events, in logIndex order, and catches up: at most `backfillChunk` of them per
 * transaction, in the integrator's pass (while the tree is behind, the pass's own events
 * are left to the backfill, which reads them back later) and, for logs no pass takes,
 * in `catchUp`'s own transactions under the integrator's lock of the log. Each chunk
 * commits its leaves with the tree's size, so a crash between chunks resumes where the
 * last one ended; a log of millions of events never holds a transaction or the
 * integrator for longer than a chunk.
 */
import type { Db, Queryable } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { encodeLeaf, eventCommitment } from "../tlog/leaf.js";
import { appendLeaves, appendToTrees, type TreeAppend } from "./tree-append.js";
import { type LogAddress, logsBehind, readTreeSize, readTreeSizes } from "./tree-store.js";

/** The part of an integrator batch the stage reads. */
export interface TreeBatch {
  readonly projectId: string;
  readonly environment: string;
  /** The first event's log index. */
  readonly firstIndex: bigint;
}

/**
 * An event as its leaf reads it: its JSON as GET /api/events lists it, and the fields the
 * leaf binds besides the commitment, taken from the event itself (the JSON must agree).
 */
export interface LeafSource {
  /** The listed event's JSON object. */
  readonly json: Readonly<Record<string, unknown>>;
  readonly logIndex: number;
  readonly eventId: string;
  readonly receivedAt: Date;
  readonly salt: Uint8Array;
}

/** Events between two yields to the event loop: requests run meanwhile (~10 ms). */
export const EVENTS_PER_YIELD = 100;

/** Lets requests run: awaited every EVENTS_PER_YIELD events of a long loop. */
export function yieldToRequests(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * The leaf of docs/verifiable-log.md for an event, exactly as a verifier recomputes it
 * from the listed JSON (tlog/leaf.ts `listedEventLeaf`), with the bound fields taken from
 * the event rather than parsed back out of its JSON, which must show the same.
 */
export async function leafOfSource(crypto: LogCrypto, event: LeafSource): Promise<Uint8Array> {
  const { json } = event;
  if (json.eventId !== event.eventId || json.receivedAt !== event.receivedAt.toISOString()) {
    throw new Error(`log tree: event ${event.eventId} is listed with another id or time`);
  }
  return encodeLeaf({
    logIndex: event.logIndex,
    receivedAtMs: event.receivedAt.getTime(),
    eventId: event.eventId,
    commitment: await eventCommitment(crypto, event.salt, json),
  });
}

/** Options of createTreeStage. */
export interface TreeStageOptions<B extends TreeBatch> {
  crypto: LogCrypto;
  /** Each event of the batch as its leaf reads it, in log-index order. */
  render(tx: Queryable, batch: B): Promise<LeafSource[]>;
  /**
   * The batch's leaves when they were computed already (by the integrator's derivation,
   * with leafOfSource), in log-index order; undefined to render them here.
   */
  computedLeaves?(batch: B): readonly Uint8Array[] | undefined;
  /** The events at log indexes [from, to) of a log, as render gives them. */
  backfill(tx: Queryable, log: LogAddress, from: number, to: number): Promise<LeafSource[]>;
  /** Most backfilled leaves appended in one transaction (default 5,000). */
  backfillChunk?: number;
  /**
   * Takes the integrator's lock of a log (by its lock id) in `tx`, as a pass does; returns
   * the log's integrated size (events numbered), or undefined when a pass holds it.
   */
  lockLog(tx: Queryable, lockId: number): Promise<number | undefined>;
}

/** An integration stage (the integrator's IntegrationStage shape). */
export interface TreeStage<B extends TreeBatch> {
  readonly needsContext: boolean;
  apply(tx: Queryable, batches: readonly B[]): Promise<void>;
  /**
   * Backfills the trees that are behind their logs, one chunk a transaction, until each
   * has caught up (or is held by a pass, which then backfills it itself) or `stop`
   * answers true between chunks; returns the leaves appended.
   */
  catchUp(db: Db, stop?: () => boolean): Promise<number>;
}

/** The stage that grows each log's tree. */
export function createTreeStage<B extends TreeBatch>(options: TreeStageOptions<B>): TreeStage<B> {
  const { crypto } = options;
  const chunk = options.backfillChunk ?? 5_000;

  /** The leaves of events at positions from, from + 1, ... (leafOfSource). */
  const leavesOf = async (events: readonly LeafSource[], from: number) => {
    const leaves: Uint8Array[] = [];
    for (const [i, event] of events.entries()) {
      if (i > 0 && i % EVENTS_PER_YIELD === 0) await yieldToRequests();
      if (event.logIndex !== from + i) {
        throw new Error(`log tree: event at position ${from + i} says logIndex ${event.logIndex}`);
      }
      leaves.push(await leafOfSource(crypto, event));
    }
    return leaves;
  };

  /** Appends up to one chunk of the leaves of [size, upTo); returns the new size. */
  const backfillChunk = async (tx: Queryable, log: LogAddress, size: number, upTo: number) => {
    const to = Math.min(upTo, size + chunk);
    const missing = await options.backfill(tx, log, size, to);
    if (missing.length !== to - size) {
      throw new Error(
        `log tree: ${missing.length} events to backfill at ${size}, not ${to - size}`,
      );
    }
    return appendLeaves(crypto, tx, log, size, await leavesOf(missing, size));
  };

  return {
    // The commitment covers the context, so its ciphertext must be read.
    needsContext: true,
    async apply(tx, batches) {
      // Every log of the pass in one read of the sizes and one write of the tiles.
      const logs = batches.map((b) => ({ projectId: b.projectId, environment: b.environment }));
      const sizes = await readTreeSizes(tx, logs);
      const appends: TreeAppend[] = [];
      for (const [i, batch] of batches.entries()) {
        const log = logs[i] as LogAddress;
        const first = Number(batch.firstIndex);
        let size = sizes[i] ?? 0;
        if (size > first) {
          throw new Error(`log tree: tree of size ${size} is ahead of the log at ${first}`);
        }
        if (size < first) size = await backfillChunk(tx, log, size, first);
        // Still behind: this batch's events are backfilled later, after those before them.
        if (size < first) continue;
        appends.push({
          log,
          oldSize: size,
          leaves:
            options.computedLeaves?.(batch) ??
            (await leavesOf(await options.render(tx, batch), first)),
        });
      }
      await appendToTrees(crypto, tx, appends);
    },
    async catchUp(db, stop = () => false) {
      let appended = 0;
      for (const log of await logsBehind(db)) {
        for (;;) {
          if (stop()) return appended;
          const grown = await db.transaction(async (tx) => {
            const logSize = await options.lockLog(tx, log.lockId);
            if (logSize === undefined) return 0;
            const size = await readTreeSize(tx, log);
            if (size >= logSize) return 0;
            return (await backfillChunk(tx, log, size, logSize)) - size;
          });
          if (grown === 0) break;
          appended += grown;
          // Let requests run between chunks.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      return appended;
    },
  };
}
