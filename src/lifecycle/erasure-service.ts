/**
 * Erasure (docs/lifecycle.md): AdminService's EraseEvents and ListErasures rules.
 *
 * An erasure selects, in one log, the events acknowledged before the call by exactly one
 * selector (up to 1,000 ids, an actor, a tenant) and turns each into a tombstone
 * (store/erasure-store.ts tombstoneEvents): content, context, blind indexes, search
 * tokens and salt destroyed; log index, id and receivedAt kept; the tree untouched.
 *
 * Order of work, and why:
 * 1. The journal's head is read: the request's **bound**. Events at or before it in the
 *    journal's (xid, id) order include every event acknowledged before the call; events
 *    acknowledged after it are never erased by it, even if ingested meanwhile.
 * 2. The request is **recorded** (pending) with its bound, before any work: a crash from
 *    here on leaves a pending record that `resumePending` (run at start and every
 *    `resumeIntervalMs`) completes, erasing exactly the same set.
 * 3. The log is **integrated** up to the bound: a leaf is computed from content when the
 *    integrator numbers an event, so content goes only after that.
 * 4. Matches are counted (`matched`), then tombstoned in transactions of `batchSize`,
 *    each adding its count to the record (`erased`), so a resumed erasure counts exactly.
 * 5. The record is marked done, and the space of the deleted rows is reclaimed
 *    (`reclaim`: "full" rewrites the tables so the bytes leave the files; "vacuum" only
 *    lets PostgreSQL reuse the space).
 *
 * A dry run does 1, 3 and the count, records nothing and erases nothing. Actor and
 * tenant selectors match the list's filters: the value's blind index under the project's
 * index key. The record keeps that blind index (to work with) and the value sealed under
 * the project's data key (to show it back), never the value in plaintext.
 */
import type { Logger } from "pino";
import { open, seal } from "../crypto/aead.js";
import { filterIndex } from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import { ServiceError } from "../errors.js";
import { uuidv7 } from "../ids.js";
import { createPeriodicTask } from "../periodic-task.js";
import type { Db } from "../store/db.js";
import {
  addErased,
  completeErasure,
  type ErasureBound,
  type ErasureRecord,
  type ErasureSelector,
  insertErasure,
  type LogRef,
  listErasures,
  matchLive,
  pendingErasures,
  reclaimErasedSpace,
  setErasureMatched,
  tombstoneEvents,
} from "../store/erasure-store.js";
import {
  NIL_UUID,
  reached,
  readIntegratedPosition,
  readLogProgress,
} from "../store/log-integration.js";
import type { ProjectStore } from "../store/projects.js";
import type { EnvironmentName } from "../vocabulary/tenancy.js";

/** Most event ids one request may name. */
export const MAX_ERASE_IDS = 1_000;

/** What an erasure selects: exactly one of these. */
export type EraseSelector =
  | { eventIds: readonly string[] }
  | { actorId: string }
  | { tenantId: string };

/** An EraseEvents request, its shape already checked (ids are UUIDs, at most 1,000). */
export interface EraseRequest {
  projectId: string;
  environment: EnvironmentName;
  selector: EraseSelector;
  dryRun: boolean;
  requestedBy: string;
}

/** What an erasure did. */
export interface EraseResult {
  matched: bigint;
  erased: bigint;
  /** The record's id; undefined on a dry run. */
  erasureId?: string;
}

/** An erasure record as shown: the selector's value opened. */
export interface ErasureView {
  id: string;
  projectId: string;
  environment: EnvironmentName;
  selector:
    | { eventIds: string[] }
    | { actorId: string }
    | { tenantId: string }
    | { receivedBefore: Date };
  requestedBy: string;
  requestedAt: Date;
  status: "pending" | "done";
  matched: bigint;
  erased: bigint;
  completedAt: Date | null;
}

/** Dependencies of the erasure service. */
export interface ErasureDeps {
  db: Db;
  projects: Pick<ProjectStore, "getProject">;
  keyring: Keyring;
  logger: Logger;
  /** Asks this instance's integrator for a pass now. */
  nudge: () => void;
  /** How deleted rows' space is reclaimed after an erasure (docs/lifecycle.md). */
  reclaim: "full" | "vacuum";
  /** Longest wait for the integrator before answering 503 (the erasure then completes later). */
  maxIntegrationWaitMs?: number;
  /** Events tombstoned per transaction. */
  batchSize?: number;
  /** How often pending erasures (of a crash, or another instance's) are looked for. */
  resumeIntervalMs?: number;
  now?: () => Date;
}

/** The erasure rules. */
export interface ErasureService {
  erase(request: EraseRequest): Promise<EraseResult>;
  /** A project's erasure records, newest first; 404 for an unknown project. */
  list(projectId: string): Promise<ErasureView[]>;
  /** Completes every pending erasure; returns how many it completed. */
  resumePending(): Promise<number>;
  /** Runs `resumePending` now and every `resumeIntervalMs`. */
  start(): void;
  stop(): Promise<void>;
}

/** The message of an erasure whose log could not be integrated in time. */
export const ERASURE_DELAYED =
  "Service temporarily unavailable: recent events are still being indexed; the erasure is recorded and will complete";

const sealedAt = (record: { projectId: string; id: string }, kind: string) =>
  `erasure:${record.projectId}:${record.id}:${kind}`;

/** Creates the erasure service. */
export function createErasureService(deps: ErasureDeps): ErasureService {
  const { db, keyring, logger } = deps;
  const batchSize = deps.batchSize ?? 1_000;
  const maxWait = deps.maxIntegrationWaitMs ?? 30_000;
  const resumeInterval = deps.resumeIntervalMs ?? 30_000;
  const now = deps.now ?? (() => new Date());
  // Pending erasures this instance is working now (not to be resumed twice here).
  const working = new Set<string>();

  const requireProject = async (id: string) => {
    const project = await deps.projects.getProject(id);
    if (!project) throw new ServiceError("not_found", `Project ${id} not found`);
    return project;
  };

  /** The journal's head: every event acknowledged so far is at or before it. */
  const boundOf = async (log: LogRef): Promise<ErasureBound> => {
    const progress = await readLogProgress(db, log.projectId, log.environment);
    return progress?.head ?? { xid: 0n, id: NIL_UUID };
  };

  /** Waits until the log's integrated position has reached `bound`. */
  const awaitIntegrated = async (log: LogRef, bound: ErasureBound) => {
    const started = performance.now();
    for (let delay = 2; ; delay = Math.min(delay * 2, 100)) {
      const position = await readIntegratedPosition(db, log.projectId, log.environment);
      if (!position || reached(position, bound)) return;
      deps.nudge();
      if (performance.now() - started > maxWait) {
        throw new ServiceError("unavailable", ERASURE_DELAYED, { retryAfterSeconds: 1 });
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  };

  /** Live matches of a selector at or before the bound, counted in pages. */
  const countMatches = async (log: LogRef, selector: ErasureSelector, bound: ErasureBound) => {
    // Counting by pages of log indexes keeps every read an index range.
    let count = 0n;
    let after = -1n;
    for (;;) {
      const page = await matchLive(db, log, selector, bound, 10_000, after);
      count += BigInt(page.length);
      const last = page.at(-1);
      if (page.length < 10_000 || last === undefined) return count;
      after = last;
    }
  };

  /** Steps 3 to 5 of an erasure recorded as pending. */
  const work = async (record: ErasureRecord): Promise<ErasureRecord> => {
    const log = { projectId: record.projectId, environment: record.environment };
    await awaitIntegrated(log, record.bound);
    if (record.matched === null) {
      await setErasureMatched(
        db,
        record.id,
        await countMatches(log, record.selector, record.bound),
      );
    }
    let erased = 0;
    for (;;) {
      const done = await db.transaction(async (tx) => {
        const indexes = await matchLive(tx, log, record.selector, record.bound, batchSize);
        const tombstoned = await tombstoneEvents(tx, log, indexes, {
          erasedAt: now(),
          erasureId: record.id,
        });
        await addErased(tx, record.id, tombstoned.length);
        return { read: indexes.length, tombstoned: tombstoned.length };
      });
      erased += done.tombstoned;
      if (done.read < batchSize) break;
    }
    const completed = await completeErasure(db, record.id);
    if (erased > 0) {
      try {
        const { snapshotsPassed } = await reclaimErasedSpace(db, deps.reclaim);
        if (!snapshotsPassed) {
          logger.warn(
            "erasure: a transaction older than the erasure was still open; the bytes it could see stay until the next erasure's clean-up",
          );
        }
      } catch (error) {
        // The rows are gone either way; their space is reclaimed by the next erasure.
        logger.warn({ err: error }, "erasure: reclaiming the space of erased rows failed");
      }
    }
    return completed;
  };

  const selectorOf = async (request: EraseRequest, id: string): Promise<ErasureSelector> => {
    const { selector } = request;
    if ("eventIds" in selector)
      return { kind: "event_ids", eventIds: [...new Set(selector.eventIds)] };
    const keys = await keyring.forProject(request.projectId);
    const [kind, column, value] =
      "actorId" in selector
        ? (["actor_id", "actorId", selector.actorId] as const)
        : (["tenant_id", "tenantId", selector.tenantId] as const);
    const dataKey = await keys.dataKey(keys.currentVersion);
    return {
      kind,
      matchIdx: filterIndex(keys, column, value),
      sealedValue: seal(
        dataKey,
        Buffer.from(value, "utf8"),
        sealedAt({ projectId: request.projectId, id }, kind),
      ),
      keyVersion: keys.currentVersion,
    };
  };

  const view = async (record: ErasureRecord): Promise<ErasureView> => {
    const s = record.selector;
    let selector: ErasureView["selector"];
    if (s.kind === "event_ids") selector = { eventIds: s.eventIds };
    else if (s.kind === "retention") selector = { receivedBefore: s.receivedBefore };
    else {
      const keys = await keyring.forProject(record.projectId);
      const value = open(
        await keys.dataKey(s.keyVersion),
        s.sealedValue,
        sealedAt(record, s.kind),
      ).toString("utf8");
      selector = s.kind === "actor_id" ? { actorId: value } : { tenantId: value };
    }
    return {
      id: record.id,
      projectId: record.projectId,
      environment: record.environment as EnvironmentName,
      selector,
      requestedBy: record.requestedBy,
      requestedAt: record.requestedAt,
      status: record.status,
      matched: record.matched ?? 0n,
      erased: record.erased,
      completedAt: record.completedAt,
    };
  };

  const resumePending = async (): Promise<number> => {
    let completed = 0;
    for (const record of await pendingErasures(db)) {
      if (resumeTask.stopped()) break;
      // Retention's records are its own to complete.
      if (record.selector.kind === "retention" || working.has(record.id)) continue;
      working.add(record.id);
      try {
        await work(record);
        completed++;
        logger.info({ erasureId: record.id }, "erasure: a pending erasure was completed");
      } catch (error) {
        logger.warn(
          { err: error, erasureId: record.id },
          "erasure: a pending erasure failed; retrying later",
        );
      } finally {
        working.delete(record.id);
      }
    }
    return completed;
  };

  const resumeTask = createPeriodicTask(resumePending, {
    intervalMs: resumeInterval,
    logger,
    what: "erasure: looking for pending erasures",
    runAtStart: true,
  });

  return {
    async erase(request) {
      await requireProject(request.projectId);
      const log = { projectId: request.projectId, environment: request.environment };
      const bound = await boundOf(log);
      const id = uuidv7();
      const selector = await selectorOf(request, id);
      if (request.dryRun) {
        await awaitIntegrated(log, bound);
        return { matched: await countMatches(log, selector, bound), erased: 0n };
      }
      const record = await insertErasure(db, {
        id,
        ...log,
        selector,
        requestedBy: request.requestedBy,
        bound,
      });
      logger.info(
        { erasureId: id, projectId: request.projectId, environment: request.environment },
        "erasure: recorded",
      );
      working.add(id);
      try {
        const completed = await work(record);
        return { matched: completed.matched ?? 0n, erased: completed.erased, erasureId: id };
      } finally {
        working.delete(id);
      }
    },
    async list(projectId) {
      await requireProject(projectId);
      return Promise.all((await listErasures(db, projectId)).map(view));
    },
    resumePending: resumeTask.runNow,
    start: resumeTask.start,
    stop: resumeTask.stop,
  };
}
