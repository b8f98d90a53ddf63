/**
 * Bulk ingestion load for one service: `connections` workers post batches of `batch`
 * ~1 KB events (bench/event-body.ts) to POST /api/ingest/events for `durationSeconds`,
 * rotating over `keys`. A 503 (the service's pushback or admission control) is retried
 * with the same batch after its Retry-After, as a well-behaved client does. Prints
 * {"acked", "seconds", "failures", "retried"} as one JSON line. 127.0.0.1 only (the caller
 * passes the URL).
 *
 * Usage: node --import tsx bench/load-bulk.ts '{"url", "keys", "connections",
 *        "durationSeconds", "batch"}'
 */
import { sampleEvent } from "./event-body.js";

const job = JSON.parse(process.argv[2] ?? "{}") as {
  url: string;
  keys: string[];
  connections: number;
  durationSeconds: number;
  batch: number;
};
let sequence = 0;
let acked = 0;
let failures = 0;
let retried = 0;
const started = Date.now();
const until = started + job.durationSeconds * 1000;
const worker = async (w: number) => {
  let body: string | undefined;
  while (Date.now() < until) {
    body ??= JSON.stringify({
      events: Array.from({ length: job.batch }, () => sampleEvent(sequence++)),
    });
    const response = await fetch(`${job.url}/api/ingest/events`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${job.keys[(w + sequence) % job.keys.length]}`,
      },
      body,
    });
    const text = await response.text();
    if (response.status === 503) {
      retried++;
      const wait = Number(response.headers.get("retry-after") ?? "1") * 1000;
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, until - Date.now())));
      continue;
    }
    body = undefined;
    if (response.status === 201) {
      acked += (JSON.parse(text) as { results: unknown[] }).results.length;
    } else if (++failures <= 3) {
      process.stderr.write(`  bulk ${response.status}: ${text.slice(0, 200)}\n`);
    }
  }
};
await Promise.all(Array.from({ length: job.connections }, (_, w) => worker(w)));
process.stdout.write(
  `${JSON.stringify({ acked, seconds: (Date.now() - started) / 1000, failures, retried })}\n`,
);
