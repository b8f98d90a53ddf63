/**
 * gRPC load generator (@grpc/grpc-js loading our protos, as an internal service would),
 * in its own process: keeps `concurrency` unary CreateEvent calls in flight over a few
 * channels for the duration, 127.0.0.1 only, and prints one JSON result line.
 */
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { sampleEvent } from "./event-body.js";

interface Job {
  address: string;
  keys: string[];
  concurrency: number;
  channels: number;
  durationSeconds: number;
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job;
if (!job.address.startsWith("127.")) throw new Error("load goes to 127.0.0.1 only");

const root = fileURLToPath(new URL("..", import.meta.url));
const definition = protoLoader.loadSync("audit/v1/ingest.proto", {
  includeDirs: [`${root}proto`, `${root}third_party/proto`],
  keepCase: false,
  defaults: false,
  oneofs: true,
});
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  audit: { v1: { IngestService: grpc.ServiceClientConstructor } };
};
const Client = loaded.audit.v1.IngestService;
const clients = Array.from(
  { length: job.channels },
  (_, i) =>
    new Client(job.address, grpc.credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
      "grpc.primary_user_agent": `bench-${i}`,
    }),
);

// Events as the request message (context as a Struct-compatible plain object).
const events = Array.from({ length: 256 }, (_, i) => {
  const event = sampleEvent(i);
  const changes = event.changes as { op: string; path: string; before: unknown; after: unknown }[];
  return {
    ...event,
    context: toStruct(event.context as Record<string, unknown>),
    changes: changes.map((change) => ({
      ...change,
      before: toValue(change.before),
      after: toValue(change.after),
    })),
  };
});

const latencies: number[] = [];
let ok = 0;
let failed = 0;
let sequence = 0;
const deadline = performance.now() + job.durationSeconds * 1000;

async function worker(): Promise<void> {
  while (performance.now() < deadline) {
    sequence++;
    const client = clients[sequence % clients.length];
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${job.keys[sequence % job.keys.length]}`);
    const started = performance.now();
    await new Promise<void>((resolve) => {
      client?.CreateEvent(events[sequence % events.length], metadata, (error: unknown) => {
        if (error) failed++;
        else ok++;
        latencies.push(performance.now() - started);
        resolve();
      });
    });
  }
}

const started = performance.now();
await Promise.all(Array.from({ length: job.concurrency }, () => worker()));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
for (const client of clients) client.close();
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: (ok + failed) / seconds,
    total: ok + failed,
    ok,
    non2xx: failed,
    errors: 0,
    timeouts: 0,
    latencyP50: at(0.5),
    latencyP99: at(0.99),
  })}\n`,
);

function toStruct(value: Record<string, unknown>): unknown {
  const fields: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) fields[key] = toValue(item);
  return { fields };
}

function toValue(value: unknown): unknown {
  if (value === null) return { nullValue: "NULL_VALUE" };
  if (typeof value === "number") return { numberValue: value };
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map(toValue) } };
  return { structValue: toStruct(value as Record<string, unknown>) };
}
