/**
 * The integrator's derivation worker (log/deriver.ts): a thread that opens the journal
 * rows of large passes and derives their blind indexes and leaves, with the same code as
 * the requests' thread (log/derivation.ts) and the same leaf (listed-event-leaf.ts).
 * Started by the deriver, never on its own.
 */
import { parentPort } from "node:worker_threads";
import { listedEventLeaf } from "./listed-event-leaf.js";
import { type DerivationRequest, deriveLogs } from "./log/derivation.js";
import { asBuffer, packResults, type WorkerAnswer, type WorkerRequest } from "./log/deriver.js";

const port = parentPort;
if (!port) throw new Error("derivation-worker.ts runs as a worker thread");

const leafOf = listedEventLeaf();

/** A request as postMessage delivered it: its Buffers back from Uint8Arrays. */
function revived(request: DerivationRequest): DerivationRequest {
  return {
    ...request,
    keys: {
      indexKey: asBuffer(request.keys.indexKey),
      dataKeys: new Map(
        [...request.keys.dataKeys].map(([version, key]) => [version, asBuffer(key)]),
      ),
    },
  };
}

port.on("message", (message: WorkerRequest) => {
  // Nothing else runs on this thread: no yields within a pass.
  deriveLogs(message.requests.map(revived), message.leaves ? leafOf : undefined, Infinity).then(
    (results) => {
      const packed = packResults(results);
      const answer: WorkerAnswer = { id: message.id, results: packed.results };
      port.postMessage(answer, packed.transfer);
    },
    (error: unknown) => {
      const answer: WorkerAnswer = {
        id: message.id,
        error: error instanceof Error ? error.message : String(error),
      };
      port.postMessage(answer);
    },
  );
});
