/**
 * gRPC load from h2load (Debian package nghttp2-client), a C load generator that costs
 * far less CPU than a Node client, so the figure is the server's rather than the
 * client's. It replays one CreateEvent frame (bench/grpc-frame.ts) over HTTP/2 for the
 * duration, 127.0.0.1 only, and prints one JSON result line like the other loaders.
 * h2load reports mean latency, not percentiles.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

interface Job {
  address: string;
  key: string;
  connections: number;
  streams: number;
  durationSeconds: number;
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job;
if (!job.address.startsWith("127.")) throw new Error("load goes to 127.0.0.1 only");

const frame = join(mkdtempSync(join(tmpdir(), "audit-h2load-")), "frame.bin");
execFileSync(process.execPath, ["--import", "tsx", "bench/grpc-frame.ts", frame]);
const output = execFileSync(
  "h2load",
  [
    "-D",
    String(job.durationSeconds),
    "-c",
    String(job.connections),
    "-m",
    String(job.streams),
    "-d",
    frame,
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    "-H",
    `authorization: Bearer ${job.key}`,
    `http://${job.address}/audit.v1.IngestService/CreateEvent`,
  ],
  { encoding: "utf8" },
);

const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? Number.NaN);
const durationMs = (value: string, unit: string) =>
  unit === "us" ? Number(value) / 1000 : unit === "s" ? Number(value) * 1000 : Number(value);
const timing = /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(
  output,
);
const succeeded = number(/(\d+) succeeded/);
const failed = number(/(\d+) failed/);
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: number(/finished in [\d.]+s, ([\d.]+) req\/s/),
    total: succeeded + failed,
    ok: succeeded,
    non2xx: failed,
    errors: number(/(\d+) errored/),
    timeouts: number(/(\d+) timeout/),
    latencyP50: null,
    latencyP99: null,
    latencyMean: timing ? durationMs(timing[5] ?? "", timing[6] ?? "ms") : null,
  })}\n`,
);
