/**
 * HTTP load generator, run in its own process so that it does not share the event loop
 * of what it measures. Reads its job as JSON from argv, drives autocannon for the given
 * duration against 127.0.0.1 only, and prints one JSON result line.
 */
import { randomUUID } from "node:crypto";
import autocannon from "autocannon";
import { sampleEvent } from "./event-body.js";

interface Job {
  url: string;
  keys: string[];
  connections: number;
  durationSeconds: number;
  idempotency: boolean;
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job;
if (!new URL(job.url).hostname.startsWith("127.")) throw new Error("load goes to 127.0.0.1 only");

// A pool of pre-serialised bodies: building JSON per request would load the generator.
const bodies = Array.from({ length: 512 }, (_, i) => JSON.stringify(sampleEvent(i)));
let sequence = 0;

const result = await autocannon({
  url: job.url,
  connections: job.connections,
  duration: job.durationSeconds,
  requests: [
    {
      method: "POST",
      path: "/api/ingest/event",
      setupRequest: (request) => {
        sequence++;
        const headers: Record<string, string> = {
          "content-type": "application/json",
          authorization: `Bearer ${job.keys[sequence % job.keys.length]}`,
        };
        if (job.idempotency) headers["idempotency-key"] = randomUUID();
        return { ...request, headers, body: bodies[sequence % bodies.length] };
      },
    },
  ],
});

process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: result.requests.average,
    total: result.requests.total,
    ok: result["2xx"],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    statusCodes: result.statusCodeStats,
  })}\n`,
);
