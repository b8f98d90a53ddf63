/**
 * Bulk ingestion load for one service, as a process of its own (bench/log-cost.ts runs
 * it): bench/bulk-batches.ts's workers for `durationSeconds`. Prints {"acked", "seconds",
 * "failures", "retried"} as one JSON line. 127.0.0.1 only (the caller passes the URL).
 *
 * Usage: node --import tsx bench/load-bulk.ts '{"url", "keys", "connections",
 *        "durationSeconds", "batch"}'
 */
import { postBatches } from "./bulk-batches.js";

const job = JSON.parse(process.argv[2] ?? "{}") as {
  url: string;
  keys: string[];
  connections: number;
  durationSeconds: number;
  batch: number;
};
const started = Date.now();
const result = await postBatches({
  url: job.url,
  keys: job.keys,
  connections: job.connections,
  batch: job.batch,
  until: started + job.durationSeconds * 1000,
  label: "bulk",
});
process.stdout.write(`${JSON.stringify({ ...result, seconds: (Date.now() - started) / 1000 })}\n`);
