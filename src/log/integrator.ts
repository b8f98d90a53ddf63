/**
 * The integrator: behind the journal, it gives each acknowledged event its log index
 * and derives what filters and search read (docs/write-path.md). One loop per instance;
 * every instance runs one, and each log is worked by one pass at a time across them
 * (the SQL and its invariants: store/log-integration.ts).
 *
 * A pass, in one transaction: read the horizon; pick logs with journal rows below it
 * past their position; take their advisory locks (logs another pass holds are left to
 * it); read up to `maxEventsPerPass` rows, in (xid, id) order per log; open each payload
 * and derive its blind indexes; number the rows from the log's size; write the index
 * rows in one statement; run the stages (the verifiable log's leaves, in log-index
 * order); move each log's position. A crash anywhere rolls all of it back.
 *
 * Pacing: work appended here (`nudge`) is picked up after at most `minIntervalMs` (50 ms), so
 * that a pass integrates what many acknowledgement batches appended (the index and
 * search writes cost far less per event in large statements); a waiting reader
 * (`nudge(true)`) starts the next pass at once. With nothing to do the loop still looks
 * every `idleIntervalMs`, for what other instances appended (their integrator normally
 * takes it first).
 */
import type { Logger } from "pino";
import type { EventPayload, EventPlaintext } from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import type { Db, Queryable } from "../store/db.js";
import {
  advanceLogs,
  horizonAndWork,
  type IndexRow,
  type JournalPosition,
  type JournalRow,
  type LockedLog,
  type LogAdvance,
  lockLogs,
  NIL_UUID,
  reached,
  readJournal,
  writeIndex,
} from "../store/log-integration.js";
import type { DerivationRequest, DerivedEvent, DerivedLog } from "./derivation.js";
import { createDeriver, type Deriver, type LeafFailures } from "./deriver.js";
import type { PlaintextCache } from "./plaintext-cache.js";

/** One event as sequenced by a pass. */
export interface SequencedEvent {
  logIndex: bigint;
  eventId: string;
  occurredMicros: bigint;
  receivedAt: Date;
  keyVersion: number;
  /**
   * The event's fields, decrypted (strings as stored, HTML-encoded); undefined when the
   * derivation computed the leaf and left them out (log/derivation.ts DerivedEvent).
   */
  payload: EventPayload | undefined;
  salt: Buffer;
  /** The context's ciphertext (null without a context, or when no stage asked for it). */
  context: Buffer | null;
  /** The texts this instance sealed the event from, when it held them (then no ciphertext). */
  plaintext: EventPlaintext | undefined;
  /** The event's leaf in its log's tree, when the deriver computes leaves. */
  leaf: Uint8Array | undefined;
}

/** The events a pass sequenced in one log, in log-index order. */
export interface SequencedBatch {
  projectId: string;
  environment: string;
  /** The log's size before the batch: the first event's log index. */
  firstIndex: bigint;
  events: SequencedEvent[];
}

/**
 * Work done in a pass's transaction once its events are sequenced, before the logs'
 * positions move (the verifiable log appends its leaves here). A stage that throws fails
 * the pass, which is retried: nothing is sequenced without it. A stage reads and writes
 * through `tx` only (on PGlite the pass holds the one connection).
 */
export interface IntegrationStage {
  /** The stage reads the events' contexts (their ciphertext is then read too). */
  needsContext?: boolean;
  apply(tx: Queryable, batches: readonly SequencedBatch[]): Promise<void>;
}

/** What one pass did. */
export interface PassResult {
  /** Events sequenced. */
  integrated: number;
  /** Work was left for the next pass (a log over its share, or more logs than taken). */
  more: boolean;
  /** Logs with work were left because another pass held them. */
  busy: boolean;
}

/** Options of the integrator. */
export interface IntegratorOptions {
  db: Db;
  keyring: Keyring;
  logger: Logger;
  stages?: IntegrationStage[];
  /**
   * Where each event's payload is opened and its indexes (and leaf) derived; default: on
   * this thread, without leaves.
   */
  deriver?: Deriver;
  /**
   * The plaintexts of the events this instance is writing: rows found there are neither
   * read back nor opened (log/plaintext-cache.ts).
   */
  plaintexts?: PlaintextCache;
  /** Most events one pass sequences (shared between its logs). */
  maxEventsPerPass?: number;
  /** Most logs one pass takes. */
  maxLogsPerPass?: number;
  /** Least time between passes started by appends. */
  minIntervalMs?: number;
  /** Longest time between passes with nothing to do. */
  idleIntervalMs?: number;
  /** Called after each pass that committed. */
  onPass?: (result: PassResult, elapsedMs: number) => void;
}

/** The integrator of one instance. */
export interface Integrator {
  /** Starts the loop. */
  start(): void;
  /**
   * Says that work may be waiting: appended here (paced), or awaited by a reader
   * (`urgent`: the next pass starts at once).
   */
  nudge(urgent?: boolean): void;
  /** One pass now, outside the loop (tests, tools). */
  runPass(): Promise<PassResult>;
  /** Stops the loop after the pass in flight. */
  stop(): Promise<void>;
}

/** Creates the integrator; `start` runs it. */
export function createIntegrator(options: IntegratorOptions): Integrator {
  const { db, keyring, logger } = options;
  const stages = options.stages ?? [];
  const maxEvents = options.maxEventsPerPass ?? 5_000;
  const maxLogs = options.maxLogsPerPass ?? 64;
  const minInterval = options.minIntervalMs ?? 50;
  const idleInterval = options.idleIntervalMs ?? 250;
  const withContext = stages.some((stage) => stage.needsContext === true);
  const deriver = options.deriver ?? createDeriver({ logger });
  const { plaintexts } = options;
  const takePlaintext = (eventId: string) => plaintexts?.take(eventId);

  let running: Promise<void> | undefined;
  let stopped = false;
  let pending = false;
  let urgent = false;
  let wake: { on: "any" | "urgent"; done: () => void } | undefined;
  let lastFailureLog = 0;

  const runPass = () =>
    db.transaction(async (tx): Promise<PassResult> => {
      const { horizon, lockIds: candidates } = await horizonAndWork(tx, maxLogs);
      if (candidates.length === 0) return { integrated: 0, more: false, busy: false };
      const logs = await lockLogs(tx, candidates);
      const busy = logs.length < candidates.length;
      if (logs.length === 0) return { integrated: 0, more: false, busy };
      const perLog = Math.max(100, Math.floor(maxEvents / logs.length));
      const journal = await readJournal(tx, logs, horizon, perLog, withContext, takePlaintext);

      let more = candidates.length === maxLogs;
      const derivation = await deriveAll(tx, logs, journal);
      let sequenced: SequencedLog[] = [];
      for (const [l, log] of logs.entries()) {
        const rows = journal.get(log.lockId) ?? [];
        const outcome = derivation.logs[l];
        if (outcome === undefined || "error" in outcome) {
          // This log stays where it is (retried next pass); the others go on.
          reportUnderived(log, outcome?.error ?? "not derived");
          continue;
        }
        const full = rows.length >= perLog;
        if (full) more = true;
        const last = rows.at(-1);
        const end: JournalPosition =
          full && last ? { xid: last.xid, id: last.eventId } : { xid: horizon, id: NIL_UUID };
        // Another instance's pass may have gone further since the logs were picked.
        const position = reached(log.position, end) ? log.position : end;
        sequenced.push({
          ...sequence(log, rows, outcome.events),
          position: l,
          advance: { lockId: log.lockId, size: log.size + BigInt(rows.length), position },
        });
      }
      // The index rows are written while the leaves are derived (deriver.ts). A log whose
      // leaves failed is then taken out again, its index rows with it: it stays where it
      // is, as a log that could not be opened.
      await tx.query("savepoint before_index");
      // Both settle before the pass goes on or fails: nothing of the transaction in flight.
      const [leaves, written] = await Promise.allSettled([
        derivation.leaves,
        writeIndex(
          tx,
          sequenced.flatMap((log) => log.index),
        ),
      ]);
      if (written.status === "rejected") throw written.reason;
      if (leaves.status === "rejected") throw leaves.reason;
      const failures = leaves.value;
      if (failures.size > 0) {
        for (const log of sequenced) {
          const failed = failures.get(log.position);
          if (failed !== undefined) reportUnderived(logs[log.position] as LockedLog, failed);
        }
        sequenced = sequenced.filter((log) => !failures.has(log.position));
        await tx.query("rollback to savepoint before_index");
        await writeIndex(
          tx,
          sequenced.flatMap((log) => log.index),
        );
      }
      const batches = sequenced.filter((log) => log.batch.events.length > 0).map(withLeaves);
      if (batches.length > 0) for (const stage of stages) await stage.apply(tx, batches);
      await advanceLogs(
        tx,
        sequenced.map((log) => log.advance),
      );
      return { integrated: sequenced.reduce((n, log) => n + log.index.length, 0), more, busy };
    });

  /** A log left where it is this pass: logged, retried by the next. */
  const reportUnderived = (log: LockedLog, error: string) =>
    logger.error(
      { err: error, projectId: log.projectId, environment: log.environment },
      "integrator: a journal row could not be opened",
    );

  /**
   * Derives every log's rows in one call (on this thread or in the worker). The keys are
   * read here, in the pass's transaction (on PGlite it holds the one connection); a log
   * whose keys cannot be read fails alone, as a row that cannot be opened does.
   */
  const deriveAll = async (
    tx: Queryable,
    logs: readonly LockedLog[],
    journal: Map<number, JournalRow[]>,
  ): Promise<{ logs: (DerivedLog | undefined)[]; leaves: Promise<LeafFailures> }> => {
    const requests: DerivationRequest[] = [];
    const slots: (number | DerivedLog)[] = [];
    for (const log of logs) {
      const rows = journal.get(log.lockId) ?? [];
      try {
        const keys = await keyring.forProject(log.projectId, tx);
        const dataKeys = new Map<number, Buffer>();
        for (const row of rows) {
          if (!dataKeys.has(row.keyVersion)) {
            dataKeys.set(row.keyVersion, await keys.dataKey(row.keyVersion));
          }
        }
        slots.push(requests.length);
        requests.push({
          projectId: log.projectId,
          environment: log.environment,
          firstIndex: log.size,
          keys: { indexKey: keys.indexKey, dataKeys },
          rows,
        });
      } catch (error) {
        slots.push({ error: error instanceof Error ? error.message : String(error) });
      }
    }
    const derived =
      requests.length > 0
        ? await deriver.deriveStaged(requests)
        : { logs: [], leaves: Promise.resolve<LeafFailures>(new Map()) };
    // The failures by position among the pass's logs, not among the requests.
    const leaves = derived.leaves.then((failures) => {
      const byLog: LeafFailures = new Map();
      for (const [l, slot] of slots.entries()) {
        const failed = typeof slot === "number" ? failures.get(slot) : undefined;
        if (failed !== undefined) byLog.set(l, failed);
      }
      return byLog;
    });
    return {
      logs: slots.map((slot) => (typeof slot === "number" ? derived.logs[slot] : slot)),
      leaves,
    };
  };

  /** Numbers a log's rows from its size, with what was derived from each. */
  const sequence = (
    log: LockedLog,
    rows: readonly JournalRow[],
    derived: readonly DerivedEvent[],
  ): Sequenced => {
    if (derived.length !== rows.length) {
      throw new Error(`integrator: ${derived.length} events derived of ${rows.length}`);
    }
    const events: SequencedEvent[] = [];
    const index: IndexRow[] = [];
    for (const [i, row] of rows.entries()) {
      const { payload, salt, indexes } = derived[i] as DerivedEvent;
      const logIndex = log.size + BigInt(i);
      events.push({
        logIndex,
        eventId: row.eventId,
        occurredMicros: row.occurredMicros,
        receivedAt: row.receivedAt,
        keyVersion: row.keyVersion,
        payload,
        salt,
        context: row.context,
        plaintext: row.plaintext,
        leaf: undefined,
      });
      index.push({
        projectId: log.projectId,
        environment: log.environment,
        logIndex,
        eventId: row.eventId,
        xid: row.xid,
        occurredAtText: row.occurredAtText,
        receivedAtText: row.receivedAtText,
        retentionDays: row.retentionDays,
        indexes,
      });
    }
    const batch = {
      projectId: log.projectId,
      environment: log.environment,
      firstIndex: log.size,
      events,
    };
    return { batch, index, derived };
  };

  /** A log's batch with each event's leaf, once the derivation has set them. */
  const withLeaves = (log: SequencedLog): SequencedBatch => {
    for (const [i, event] of log.batch.events.entries()) event.leaf = log.derived[i]?.leaf;
    return log.batch;
  };

  /** Sleeps `ms`, or less when a nudge of the kind `wakeOn` names comes. */
  const sleep = (ms: number, wakeOn: "nothing" | "any" | "urgent") =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      if (wakeOn !== "nothing") wake = { on: wakeOn, done };
    });

  const loop = async () => {
    let failures = 0;
    while (!stopped) {
      pending = false;
      urgent = false;
      let result: PassResult;
      try {
        const started = performance.now();
        result = await runPass();
        failures = 0;
        options.onPass?.(result, performance.now() - started);
      } catch (error) {
        failures++;
        // The database away or a pass refused: nothing moved; try again, backing off.
        if (Date.now() - lastFailureLog > 60_000) {
          lastFailureLog = Date.now();
          logger.warn({ err: error }, "integrator: a pass failed; retrying");
        }
        await sleep(Math.min(50 * 2 ** failures, 2_000), "nothing");
        continue;
      }
      if (stopped) break;
      if (result.more) {
        // Let requests run between passes of a backlog.
        await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      if (result.busy) {
        // Another instance holds a log with work: look again soon, in case what it
        // holds arrived after its horizon.
        await sleep(minInterval, "urgent");
        continue;
      }
      if (!pending) await sleep(idleInterval, "any");
      if (pending && !urgent && !stopped) await sleep(minInterval, "urgent");
    }
  };

  return {
    start() {
      if (running || stopped) return;
      running = loop();
    },
    nudge(isUrgent = false) {
      pending = true;
      if (isUrgent) urgent = true;
      // A waiting reader cuts any sleep short; an append only the idle one.
      if (wake && (isUrgent || wake.on === "any")) wake.done();
    },
    runPass,
    async stop() {
      stopped = true;
      wake?.done();
      await running;
    },
  };
}

/** A log's part of a pass. */
interface Sequenced {
  batch: SequencedBatch;
  index: IndexRow[];
  /** What was derived from its rows (the leaves set there once derived). */
  derived: readonly DerivedEvent[];
}

/** A log's part of a pass, with where it was among the pass's logs and where it moves. */
interface SequencedLog extends Sequenced {
  position: number;
  advance: LogAdvance;
}
