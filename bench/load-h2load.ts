/**
 * gRPC load from h2load (Debian package nghttp2-client), a C load generator that costs
 * far less CPU than a Node client, so the figure is the server's rather than the
 * client's. It replays one CreateEvent frame (bench/grpc-frame.ts) over HTTP/2 for the
 * duration, 127.0.0.1 only, and prints one JSON result line like the other loaders.
 * One h2load per connection, each with its own key (h2load sends the same headers on
 * every request), so that events spread over projects as in the REST scenarios.
 * h2load reports mean latency, not percentiles.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

interface Job {
  address: string;
  keys: string[];
  connections: number;
  streams: number;
  durationSeconds: number;
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job;
if (!job.address.startsWith("127.")) throw new Error("load goes to 127.0.0.1 only");

const frame = join(mkdtempSync(join(tmpdir(), "audit-h2load-")), "frame.bin");
execFileSync(process.execPath, ["--import", "tsx", "bench/grpc-frame.ts", frame]);
const runOne = async (key: string): Promise<string> =>
  (
    await promisify(execFile)(
      "h2load",
      [
        "-D",
        String(job.durationSeconds),
        "-c",
        "1",
        "-m",
        String(job.streams),
        "-d",
        frame,
        "-H",
        "content-type: application/grpc",
        "-H",
        "te: trailers",
        "-H",
        `authorization: Bearer ${key}`,
        `http://${job.address}/audit.v1.IngestService/CreateEvent`,
      ],
      { encoding: "utf8" },
    )
  ).stdout;
const outputs = await Promise.all(
  Array.from({ length: job.connections }, (_, i) => runOne(job.keys[i % job.keys.length] ?? "")),
);

const sum = (pattern: RegExp) =>
  outputs.reduce((total, output) => total + Number(pattern.exec(output)?.[1] ?? Number.NaN), 0);
const durationMs = (value: string, unit: string) =>
  unit === "us" ? Number(value) / 1000 : unit === "s" ? Number(value) * 1000 : Number(value);
const means = outputs.map((output) => {
  const timing =
    /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(output);
  return timing ? durationMs(timing[5] ?? "", timing[6] ?? "ms") : Number.NaN;
});
const succeeded = sum(/(\d+) succeeded/);
const failed = sum(/(\d+) failed/);
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: sum(/finished in [\d.]+s, ([\d.]+) req\/s/),
    total: succeeded + failed,
    ok: succeeded,
    non2xx: failed,
    errors: sum(/(\d+) errored/),
    timeouts: sum(/(\d+) timeout/),
    latencyP50: null,
    latencyP99: null,
    latencyMean: means.reduce((a, b) => a + b, 0) / means.length,
  })}\n`,
);
