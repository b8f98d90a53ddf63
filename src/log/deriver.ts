/**
 * Where the integrator's per-event work runs (log/derivation.ts: decrypt, blind indexes,
 * leaf). On the requests' thread it costs ~150-250 µs an event that requests then wait
 * for; a pass large enough goes to one worker thread instead, so that acknowledgements and
 * derivation use both cores (docs/write-path.md). Small passes stay here: a round trip to
 * the worker costs more than a few events, and an idle service never starts the worker.
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
import {
  type DerivationRequest,
  type DerivedEvent,
  type DerivedLog,
  deriveLogs,
  type LeafOf,
} from "./derivation.js";

/** Derives the logs of a pass, here or in the worker. */
export interface Deriver {
  derive(requests: readonly DerivationRequest[]): Promise<DerivedLog[]>;
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
  /** Whether leaves are computed. */
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

/** The worker's answer. */
export type WorkerAnswer =
  | { id: number; results: (PackedLog | { error: string })[] }
  | { id: number; error: string };

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

/** The byte fields of a derived event, in their packed order. */
const PACKED_FIELDS = 8;
const packedFields = (event: DerivedEvent): (Uint8Array | undefined)[] => [
  event.salt,
  event.indexes.actorIdx,
  event.indexes.entityTypeIdx,
  event.indexes.entityIdIdx,
  event.indexes.actionIdx,
  event.indexes.tenantIdx,
  event.indexes.legacyActionIdx,
  event.leaf,
];

/** Packs a pass's results for postMessage; `transfer` lists the buffers to move, not copy. */
export function packResults(results: readonly DerivedLog[]): {
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
    const withLeaves = log.events.every((event) => event.leaf !== undefined);
    return {
      bytes,
      spans,
      searchTokenText: log.events.map((event) => event.indexes.searchTokenText),
      searchTokenCount: log.events.map((event) => event.indexes.searchTokenCount),
      payloads: withLeaves ? undefined : log.events.map((event) => event.payload as EventPayload),
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
  // The leaf as derived: plain bytes, not a Buffer.
  const leafOf = (i: number): Uint8Array | undefined => {
    const leaf = field(i, 7);
    return leaf && new Uint8Array(leaf.buffer, leaf.byteOffset, leaf.byteLength);
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
      leaf: leafOf(i),
    })),
  };
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

/** Creates the deriver. */
export function createDeriver(options: DeriverOptions): Deriver {
  const { logger, leafOf } = options;
  const minEvents = options.minEventsForWorker ?? 32;
  let worker: Worker | undefined;
  let broken = options.worker === undefined;
  let answered = false;
  let nextId = 0;
  let workerPasses = 0;
  const pending = new Map<
    number,
    { resolve: (results: DerivedLog[]) => void; reject: (error: Error) => void }
  >();

  const failAll = (error: Error) => {
    for (const waiter of pending.values()) waiter.reject(error);
    pending.clear();
  };

  const start = (spec: DerivationWorker): Worker => {
    const started = new Worker(spec.script, spec.options);
    // The worker does not keep the process alive: stopping is the app's business.
    started.unref();
    started.on("message", (answer: WorkerAnswer) => {
      answered = true;
      const waiter = pending.get(answer.id);
      if (!waiter) return;
      pending.delete(answer.id);
      if ("error" in answer) waiter.reject(new Error(`derivation worker: ${answer.error}`));
      else waiter.resolve(answer.results.map(unpackLog));
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
    new Promise<DerivedLog[]>((resolve, reject) => {
      if (!options.worker) throw new Error("no derivation worker configured");
      worker ??= start(options.worker);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      const compacted = compactRequests(requests);
      const message: WorkerRequest = {
        id,
        requests: compacted.requests,
        leaves: leafOf !== undefined,
      };
      worker.postMessage(message, compacted.transfer);
      workerPasses++;
    });

  return {
    derive(requests) {
      const events = requests.reduce((sum, request) => sum + request.rows.length, 0);
      if (broken || events < minEvents) return deriveLogs(requests, leafOf);
      return inWorker(requests);
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
