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

/** The worker's answer. */
export type WorkerAnswer = { id: number; results: DerivedLog[] } | { id: number; error: string };

/** A Uint8Array that came through postMessage, as the Buffer it was sent as (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * A copy holding only the view's bytes: postMessage copies a view's whole ArrayBuffer, and
 * a Buffer is often a slice of an 8 KB pool or of a whole database reply.
 */
export function compact(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

/** Derived events as the worker sends them: their bytes compacted. */
export function compactResults(results: readonly DerivedLog[]): DerivedLog[] {
  return results.map((log) =>
    "error" in log
      ? log
      : {
          events: log.events.map((event) => ({
            payload: event.payload,
            salt: compact(event.salt) as Buffer,
            indexes: {
              ...event.indexes,
              actorIdx: compact(event.indexes.actorIdx) as Buffer,
              entityTypeIdx: compact(event.indexes.entityTypeIdx) as Buffer,
              entityIdIdx: compact(event.indexes.entityIdIdx) as Buffer,
              actionIdx: compact(event.indexes.actionIdx) as Buffer,
              tenantIdx: event.indexes.tenantIdx && (compact(event.indexes.tenantIdx) as Buffer),
              legacyActionIdx:
                event.indexes.legacyActionIdx && (compact(event.indexes.legacyActionIdx) as Buffer),
            },
            leaf: event.leaf,
          })),
        },
  );
}

function revivedEvent(event: DerivedEvent): DerivedEvent {
  const { indexes } = event;
  return {
    payload: event.payload,
    salt: asBuffer(event.salt),
    indexes: {
      actorIdx: asBuffer(indexes.actorIdx),
      entityTypeIdx: asBuffer(indexes.entityTypeIdx),
      entityIdIdx: asBuffer(indexes.entityIdIdx),
      actionIdx: asBuffer(indexes.actionIdx),
      tenantIdx: indexes.tenantIdx && asBuffer(indexes.tenantIdx),
      legacyActionIdx: indexes.legacyActionIdx && asBuffer(indexes.legacyActionIdx),
      searchTokenText: indexes.searchTokenText,
      searchTokenCount: indexes.searchTokenCount,
    },
    leaf: event.leaf,
  };
}

/** Requests with only their own bytes, for postMessage. */
function compactRequests(requests: readonly DerivationRequest[]): DerivationRequest[] {
  return requests.map((request) => ({
    ...request,
    keys: {
      indexKey: compact(request.keys.indexKey) as Buffer,
      dataKeys: new Map(
        [...request.keys.dataKeys].map(([version, key]) => [version, compact(key) as Buffer]),
      ),
    },
    rows: request.rows.map((row) => ({
      ...row,
      payload: compact(row.payload),
      context: row.context && compact(row.context),
    })),
  }));
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
      else waiter.resolve(answer.results.map(revived));
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

  const revived = (log: DerivedLog): DerivedLog =>
    "error" in log ? log : { events: log.events.map(revivedEvent) };

  const inWorker = (requests: readonly DerivationRequest[]) =>
    new Promise<DerivedLog[]>((resolve, reject) => {
      if (!options.worker) throw new Error("no derivation worker configured");
      worker ??= start(options.worker);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      const message: WorkerRequest = {
        id,
        requests: compactRequests(requests),
        leaves: leafOf !== undefined,
      };
      worker.postMessage(message);
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
