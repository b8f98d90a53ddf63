/**
 * Where the integrator's per-event work runs (log/derivation.ts: decrypt, blind indexes,
 * leaf). On the requests' thread it costs ~150-250 µs an event that requests then wait
 * for; a pass large enough goes to one worker thread instead, so that acknowledgements and
 * derivation use both cores (docs/write-path.md). Small passes stay here: a round trip to
 * the worker costs more than a few events, and an idle service never starts the worker.
 *
 * A pass is derived in two steps (`deriveStaged`): the indexes are answered first and the
 * leaves after, so that the integrator writes its index rows while the leaves are derived.
 *
 * The worker is started at the first large pass and kept; it holds nothing between
 * messages. If it dies, the passes it held fail (the integrator retries them: nothing is
 * sequenced without its derivation) and the next large pass starts a new one. If it
 * cannot start at all (its module missing, say), derivation stays on this thread, with
 * one error logged.
 */
import { Worker, type WorkerOptions } from "node:worker_threads";
import type { Logger } from "pino";
import type { EventPayload } from "../crypto/event-cipher.js";
import { LEAF_SIZE } from "../tlog/leaf.js";
import {
  type DerivationRequest,
  type DerivedEvent,
  type DerivedLog,
  deriveLeaves,
  errorText,
  type IndexedLogOutcome,
  indexLogs,
  type LeafOf,
} from "./derivation.js";

/**
 * Why the leaves of some logs of a pass could not be derived, by the log's position in
 * the pass's requests (empty when every leaf was).
 */
export type LeafFailures = Map<number, string>;

/**
 * A pass's derivation in two steps, so that the pass writes its index rows while the
 * leaves are derived (with the verifiable log on, the leaves cost about as much as the
 * indexes; docs/write-path.md).
 */
export interface StagedDerivation {
  /** Each log's opened and indexed events (their `leaf` not yet set), or why not. */
  logs: DerivedLog[];
  /**
   * Settles once the leaves are derived: every event's `leaf` is then set, except in the
   * logs it names. Rejects only when the derivation itself failed (its worker died).
   */
  leaves: Promise<LeafFailures>;
}

/** Derives the logs of a pass, here or in the worker. */
export interface Deriver {
  /** Every log's events with their leaves (when the deriver has a leaf function). */
  derive(requests: readonly DerivationRequest[]): Promise<DerivedLog[]>;
  /** The same, the indexes answered before the leaves. */
  deriveStaged(requests: readonly DerivationRequest[]): Promise<StagedDerivation>;
  /** Stops the worker, if one runs; passes in flight there fail. */
  close(): Promise<void>;
  /** Passes derived in the worker so far (tests, metrics). */
  readonly workerPasses: number;
}

/** The worker's module and how to start it (composition root: derivation-worker.ts). */
export interface DerivationWorker {
  /** The module's URL, or code when `options.eval` is set. */
  script: URL | string;
  options?: WorkerOptions;
}

/** Options of createDeriver. */
export interface DeriverOptions {
  logger: Logger;
  /** The leaf of a listed event, on this thread; the worker has its own. */
  leafOf?: LeafOf | undefined;
  /** The worker; without it, every pass is derived on this thread. */
  worker?: DerivationWorker | undefined;
  /** Fewest events in a pass that go to the worker (default 32). */
  minEventsForWorker?: number;
}

/** A message to the worker. */
export interface WorkerRequest {
  id: number;
  requests: readonly DerivationRequest[];
  /** Whether leaves are computed (answered after the indexes, LeavesAnswer). */
  leaves: boolean;
}

/**
 * One log's derived events as the worker sends them. Cloning a pass's results as objects
 * (seven small byte arrays and the opened payload per event) cost the requests' thread
 * ~100 ms per 5,000 events to receive (measured with structuredClone), so the bytes travel
 * in one transferred buffer and the payloads only when no leaf was derived.
 */
export interface PackedLog {
  /** Every event's byte fields (PACKED_FIELDS), one after another. */
  bytes: Uint8Array;
  /** Per event and field: its start and length in `bytes`, length -1 when absent. */
  spans: Int32Array;
  searchTokenText: string[];
  searchTokenCount: number[];
  /** The opened payloads, sent only when the leaves were not derived. */
  payloads: EventPayload[] | undefined;
}

/** The worker's first answer: the indexes, or why it could not derive. */
export type WorkerAnswer =
  | { id: number; results: (PackedLog | { error: string })[] }
  | { id: number; error: string };

/**
 * The worker's second answer, when leaves were asked for: per log of the request, its
 * leaves one after another (LEAF_SIZE bytes each, one transferred buffer) or why not.
 */
export interface LeavesAnswer {
  id: number;
  leaves: (Uint8Array | { error: string })[];
}

/** A Uint8Array that came through postMessage, as the Buffer it was sent as (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * A copy holding only the view's bytes, in an ArrayBuffer of its own that postMessage can
 * move (a Buffer is often a slice of an 8 KB pool or of a whole database reply).
 */
function compact(bytes: Uint8Array, transfer: ArrayBuffer[]): Uint8Array {
  const copy = new Uint8Array(bytes);
  transfer.push(copy.buffer);
  return copy;
}

/** The byte fields of a derived event, in their packed order (its leaf travels apart). */
const PACKED_FIELDS = 7;
const packedFields = (event: DerivedEvent): (Uint8Array | undefined)[] => [
  event.salt,
  event.indexes.actorIdx,
  event.indexes.entityTypeIdx,
  event.indexes.entityIdIdx,
  event.indexes.actionIdx,
  event.indexes.tenantIdx,
  event.indexes.legacyActionIdx,
];

/**
 * Packs a pass's indexed logs for postMessage; `transfer` lists the buffers to move, not
 * copy. The opened payloads go only `withPayloads` (when no leaf is derived, the tree
 * stage would read them).
 */
export function packResults(
  results: readonly ({ events: DerivedEvent[] } | { error: string })[],
  withPayloads: boolean,
): {
  results: (PackedLog | { error: string })[];
  transfer: ArrayBuffer[];
} {
  const transfer: ArrayBuffer[] = [];
  const packed = results.map((log): PackedLog | { error: string } => {
    if ("error" in log) return log;
    const spans = new Int32Array(log.events.length * PACKED_FIELDS * 2);
    let size = 0;
    for (const [i, event] of log.events.entries()) {
      for (const [f, field] of packedFields(event).entries()) {
        const at = (i * PACKED_FIELDS + f) * 2;
        spans[at] = size;
        spans[at + 1] = field === undefined ? -1 : field.length;
        size += field?.length ?? 0;
      }
    }
    const bytes = new Uint8Array(size);
    for (const [i, event] of log.events.entries()) {
      for (const [f, field] of packedFields(event).entries()) {
        if (field !== undefined) bytes.set(field, spans[(i * PACKED_FIELDS + f) * 2] as number);
      }
    }
    transfer.push(bytes.buffer, spans.buffer);
    return {
      bytes,
      spans,
      searchTokenText: log.events.map((event) => event.indexes.searchTokenText),
      searchTokenCount: log.events.map((event) => event.indexes.searchTokenCount),
      payloads: withPayloads ? log.events.map((event) => event.payload as EventPayload) : undefined,
    };
  });
  return { results: packed, transfer };
}

/** The derived events of a packed log, their bytes as Buffers viewing its one buffer. */
export function unpackLog(log: PackedLog | { error: string }): DerivedLog {
  if ("error" in log) return log;
  const { bytes, spans } = log;
  const field = (i: number, f: number): Buffer | undefined => {
    const at = (i * PACKED_FIELDS + f) * 2;
    const length = spans[at + 1] as number;
    if (length < 0) return undefined;
    return Buffer.from(bytes.buffer, bytes.byteOffset + (spans[at] as number), length);
  };
  const required = (i: number, f: number): Buffer => {
    const bytesOf = field(i, f);
    if (bytesOf === undefined)
      throw new Error(`derivation worker: field ${f} of event ${i} missing`);
    return bytesOf;
  };
  return {
    events: log.searchTokenText.map((searchTokenText, i) => ({
      payload: log.payloads?.[i],
      salt: required(i, 0),
      indexes: {
        actorIdx: required(i, 1),
        entityTypeIdx: required(i, 2),
        entityIdIdx: required(i, 3),
        actionIdx: required(i, 4),
        tenantIdx: field(i, 5),
        legacyActionIdx: field(i, 6),
        searchTokenText,
        searchTokenCount: log.searchTokenCount[i] as number,
      },
      leaf: undefined,
    })),
  };
}

/** Packs each log's leaves into one buffer of its own (moved to the requests' thread). */
export function packLeaves(
  logs: readonly IndexedLogOutcome[],
  failures: ReadonlyMap<number, string>,
): { leaves: LeavesAnswer["leaves"]; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const leaves = logs.map((log, l): Uint8Array | { error: string } => {
    if ("error" in log) return log;
    const failed = failures.get(l);
    if (failed !== undefined) return { error: failed };
    const bytes = new Uint8Array(log.events.length * LEAF_SIZE);
    for (const [i, event] of log.events.entries()) {
      if (event.leaf === undefined) return { error: `event ${i} has no leaf` };
      bytes.set(event.leaf, i * LEAF_SIZE);
    }
    transfer.push(bytes.buffer);
    return bytes;
  });
  return { leaves, transfer };
}

/**
 * Sets the leaves of a pass's logs from the worker's second answer; the failures, by
 * the log's position.
 */
function placeLeaves(logs: readonly DerivedLog[], answer: LeavesAnswer): LeafFailures {
  const failures: LeafFailures = new Map();
  for (const [l, log] of logs.entries()) {
    if ("error" in log) continue;
    const bytes = answer.leaves[l];
    if (bytes === undefined || "error" in bytes) {
      failures.set(l, bytes?.error ?? "no leaves answered");
      continue;
    }
    if (bytes.length !== log.events.length * LEAF_SIZE) {
      failures.set(l, `${bytes.length / LEAF_SIZE} leaves answered for ${log.events.length}`);
      continue;
    }
    for (const [i, event] of log.events.entries()) {
      event.leaf = bytes.subarray(i * LEAF_SIZE, (i + 1) * LEAF_SIZE);
    }
  }
  return failures;
}

/** Derives each indexed log's leaves; the logs whose leaves failed, by position. */
export async function deriveLeavesOf(
  logs: readonly IndexedLogOutcome[],
  leafOf: LeafOf,
  yieldEvery?: number,
): Promise<LeafFailures> {
  const failures: LeafFailures = new Map();
  for (const [l, log] of logs.entries()) {
    if ("error" in log) continue;
    try {
      await deriveLeaves(log, leafOf, yieldEvery);
    } catch (error) {
      failures.set(l, errorText(error));
    }
  }
  return failures;
}

/** A staged derivation's results once its leaves are in: failed logs as errors. */
async function settled(staged: StagedDerivation): Promise<DerivedLog[]> {
  const failures = await staged.leaves;
  return staged.logs.map((log, l) => {
    const failed = failures.get(l);
    return failed === undefined ? log : { error: failed };
  });
}

/** Indexed logs as derived logs (the leaves, if any, set later on the same events). */
function asDerived(logs: readonly IndexedLogOutcome[]): DerivedLog[] {
  return logs.map((log) => ("error" in log ? log : { events: log.events }));
}

/**
 * Requests with only their own bytes, moved to the worker rather than copied again: every
 * row's payload and context copied into one buffer (each row keeps a view of its part),
 * transferred whole. Transferring a buffer per row cost the requests' thread 58-89 ms for
 * 5,000 rows against 16-28 ms for one buffer (measured with postMessage to a worker).
 */
function compactRequests(requests: readonly DerivationRequest[]): {
  requests: DerivationRequest[];
  transfer: ArrayBuffer[];
} {
  const transfer: ArrayBuffer[] = [];
  let total = 0;
  for (const request of requests) {
    for (const row of request.rows) {
      total += (row.payload?.length ?? 0) + (row.context?.length ?? 0);
    }
  }
  const rowBytes = new Uint8Array(total);
  transfer.push(rowBytes.buffer);
  let used = 0;
  const place = (bytes: Uint8Array): Uint8Array => {
    const view = rowBytes.subarray(used, used + bytes.length);
    view.set(bytes);
    used += bytes.length;
    return view;
  };
  const compacted = requests.map((request) => ({
    ...request,
    keys: {
      indexKey: compact(request.keys.indexKey, transfer) as Buffer,
      dataKeys: new Map(
        [...request.keys.dataKeys].map(([version, key]) => [
          version,
          compact(key, transfer) as Buffer,
        ]),
      ),
    },
    rows: request.rows.map((row) => ({
      ...row,
      payload: row.payload && place(row.payload),
      context: row.context && place(row.context),
    })),
  }));
  return { requests: compacted, transfer };
}

/** What waits for the worker's answers to one message. */
interface Waiter {
  indexed(logs: DerivedLog[]): void;
  leaves(answer: LeavesAnswer): void;
  fail(error: Error): void;
}

/** Creates the deriver. */
export function createDeriver(options: DeriverOptions): Deriver {
  const { logger, leafOf } = options;
  const minEvents = options.minEventsForWorker ?? 32;
  let worker: Worker | undefined;
  let broken = options.worker === undefined;
  let answered = false;
  let nextId = 0;
  let workerPasses = 0;
  const pending = new Map<number, Waiter>();

  const failAll = (error: Error) => {
    for (const waiter of pending.values()) waiter.fail(error);
    pending.clear();
  };

  const start = (spec: DerivationWorker): Worker => {
    const started = new Worker(spec.script, spec.options);
    // The worker does not keep the process alive: stopping is the app's business.
    started.unref();
    started.on("message", (answer: WorkerAnswer | LeavesAnswer) => {
      answered = true;
      const waiter = pending.get(answer.id);
      if (!waiter) return;
      if ("leaves" in answer) {
        pending.delete(answer.id);
        waiter.leaves(answer);
      } else if ("error" in answer) {
        pending.delete(answer.id);
        waiter.fail(new Error(`derivation worker: ${answer.error}`));
      } else {
        // With leaves asked for, the waiter stays for the second answer.
        if (leafOf === undefined) pending.delete(answer.id);
        waiter.indexed(answer.results.map(unpackLog));
      }
    });
    started.on("error", (error) => {
      if (!answered) {
        // It never answered: it cannot start here. Derive on this thread from now on.
        broken = true;
        logger.error({ err: error }, "derivation worker could not start; deriving in process");
      } else {
        logger.error({ err: error }, "derivation worker failed; a new one starts at need");
      }
      failAll(error);
      if (worker === started) worker = undefined;
    });
    started.on("exit", (code) => {
      failAll(new Error(`derivation worker exited with code ${code}`));
      if (worker === started) worker = undefined;
    });
    return started;
  };

  const inWorker = (requests: readonly DerivationRequest[]) =>
    new Promise<StagedDerivation>((resolve, reject) => {
      if (!options.worker) throw new Error("no derivation worker configured");
      worker ??= start(options.worker);
      const id = nextId++;
      let logs: DerivedLog[] = [];
      let leavesSettled: { resolve(f: LeafFailures): void; reject(e: Error): void } | undefined;
      const leaves = new Promise<LeafFailures>((resolveLeaves, rejectLeaves) => {
        leavesSettled = { resolve: resolveLeaves, reject: rejectLeaves };
      });
      // Rejected only with the indexes already answered; until then `reject` says it.
      leaves.catch(() => {});
      pending.set(id, {
        indexed(derived) {
          logs = derived;
          if (leafOf === undefined) leavesSettled?.resolve(new Map());
          resolve({ logs, leaves });
        },
        leaves(answer) {
          leavesSettled?.resolve(placeLeaves(logs, answer));
        },
        fail(error) {
          reject(error);
          leavesSettled?.reject(error);
        },
      });
      const compacted = compactRequests(requests);
      const message: WorkerRequest = {
        id,
        requests: compacted.requests,
        leaves: leafOf !== undefined,
      };
      worker.postMessage(message, compacted.transfer);
      workerPasses++;
    });

  /** On this thread: the indexes, then the leaves (begun at once, between requests). */
  const here = async (requests: readonly DerivationRequest[]): Promise<StagedDerivation> => {
    const indexed = await indexLogs(requests, leafOf !== undefined);
    const leaves = leafOf ? deriveLeavesOf(indexed, leafOf) : Promise.resolve(new Map());
    return { logs: asDerived(indexed), leaves };
  };

  const deriveStaged = (requests: readonly DerivationRequest[]) => {
    const events = requests.reduce((sum, request) => sum + request.rows.length, 0);
    return broken || events < minEvents ? here(requests) : inWorker(requests);
  };

  return {
    deriveStaged,
    async derive(requests) {
      return settled(await deriveStaged(requests));
    },
    async close() {
      const running = worker;
      worker = undefined;
      if (running) await running.terminate();
      failAll(new Error("derivation worker stopped"));
    },
    get workerPasses() {
      return workerPasses;
    },
  };
}
