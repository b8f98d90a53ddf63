/**
 * The bulk benches' REST client: `connections` workers post batches of `batch` ~1 KB
 * events (bench/event-body.ts) to POST /api/ingest/events until `until`, rotating over
 * `keys`. A 503 (the service's pushback or admission control) is retried with the same
 * batch after its Retry-After, as a well-behaved client does. Shared by bench/bulk.ts (in
 * process) and bench/load-bulk.ts (a separate process).
 */
import { sampleEvent } from "./event-body.js";

/** What to post, where, and until when. */
export interface BatchLoad {
  url: string;
  keys: readonly string[];
  connections: number;
  batch: number;
  /** Date.now() at which the workers stop. */
  until: number;
  /** Written before the first failures (at most 3), e.g. "bulk". */
  label: string;
}

/** What the load got: events acknowledged, batches that failed, 503s retried. */
export interface BatchLoadResult {
  acked: number;
  failures: number;
  retried: number;
}

let sequence = 0;

/** Posts batches until `until`; resolves once every worker has its last answer. */
export async function postBatches(load: BatchLoad): Promise<BatchLoadResult> {
  const result: BatchLoadResult = { acked: 0, failures: 0, retried: 0 };
  const worker = async (w: number) => {
    let body: string | undefined;
    while (Date.now() < load.until) {
      body ??= JSON.stringify({
        events: Array.from({ length: load.batch }, () => sampleEvent(sequence++)),
      });
      const response = await fetch(`${load.url}/api/ingest/events`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${load.keys[(w + sequence) % load.keys.length]}`,
        },
        body,
      });
      const text = await response.text();
      if (response.status === 503) {
        result.retried++;
        const wait = Number(response.headers.get("retry-after") ?? "1") * 1000;
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(wait, load.until - Date.now())),
        );
        continue;
      }
      body = undefined;
      if (response.status === 201) {
        result.acked += (JSON.parse(text) as { results: unknown[] }).results.length;
      } else if (++result.failures <= 3) {
        process.stderr.write(`  ${load.label} ${response.status}: ${text.slice(0, 200)}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: load.connections }, (_, w) => worker(w)));
  return result;
}
