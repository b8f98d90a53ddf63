/**
 * The integrator's derivation worker (log/deriver.ts): a thread that opens the journal
 * rows of large passes and derives their blind indexes and leaves, with the same code as
 * the requests' thread (log/derivation.ts) and the same leaf (listed-event-leaf.ts).
 * Started by the deriver, never on its own.
 */
import { parentPort } from "node:worker_threads";
import { listedEventLeaf } from "./listed-event-leaf.js";
import { type DerivationRequest, errorText, indexLogs } from "./log/derivation.js";
import {
  asBuffer,
  deriveLeavesOf,
  type LeavesAnswer,
  packLeaves,
  packResults,
  type WorkerAnswer,
  type WorkerRequest,
} from "./log/deriver.js";

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
  answer(message).catch((error: unknown) => {
    const failed: WorkerAnswer = { id: message.id, error: errorText(error) };
    port.postMessage(failed);
  });
});

/**
 * The indexes first, then (when asked) the leaves, as two answers: the integrator writes
 * the index rows while the leaves are derived. Nothing else runs on this thread: no
 * yields within a pass.
 */
async function answer(message: WorkerRequest): Promise<void> {
  const indexed = await indexLogs(message.requests.map(revived), message.leaves, Infinity);
  const packed = packResults(
    indexed.map((log) => ("error" in log ? log : { events: log.events })),
    !message.leaves,
  );
  const first: WorkerAnswer = { id: message.id, results: packed.results };
  port?.postMessage(first, packed.transfer);
  if (!message.leaves) return;
  const failures = await deriveLeavesOf(indexed, leafOf, Infinity);
  const leaves = packLeaves(indexed, failures);
  const second: LeavesAnswer = { id: message.id, leaves: leaves.leaves };
  port?.postMessage(second, leaves.transfer);
}
