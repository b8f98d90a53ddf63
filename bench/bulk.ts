/**
 * `npm run bench:bulk`: bulk ingestion side by side in one run, on 127.0.0.1:
 *   plain bulk      bench/plain-bulk-server.ts: one key query and one multi-row INSERT
 *                   per batch (what a team would write themselves)
 *   service REST    POST /api/ingest/events, batches of 100 ~1 KB events
 *   service stream  the IngestEvents gRPC stream, the same events one message each
 * For each: acknowledged events/s and the server process's CPU per event (all its threads:
 * under load from other work on the machine, the figure that moves least); for the
 * service also events/s (and CPU per event) through to searchable
 * (until the integrator has indexed every acknowledged event), the server's memory (RSS)
 * and the integrator's lag (events acknowledged, not yet indexed), sampled every second.
 *
 * Options: --duration <s> (default 20 per scenario), --connections <n> (REST requests in
 * flight, default 8), --streams <n> (gRPC streams, default 4), --soak <s> (then load the
 * service over REST for that long, reported per 30 s window: memory and lag should stay
 * flat; 300 for the 5-minute soak). REST batches answered 503 (the pushback while the
 * integrator is behind, INGEST_MAX_LAG_SECONDS) are retried after their Retry-After and
 * counted. Writes bench/results/bulk-latest.json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { connect } from "node:http2";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { create, fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import postgres from "postgres";
import { Environment, Plan } from "../gen/audit/v1/admin_pb.js";
import { EventSchema } from "../gen/audit/v1/event_pb.js";
import {
  IngestEventsRequestSchema,
  IngestEventsResponseSchema,
} from "../gen/audit/v1/ingest_pb.js";
import { createAdminClient } from "../src/admin/admin-client.js";
import type { Db } from "../src/store/db.js";
import { readLagSummary } from "../src/store/log-integration.js";
import { createPostgresDb } from "../src/store/postgres-driver.js";
import { postBatches } from "./bulk-batches.js";
import { sampleEvent } from "./event-body.js";
import { cpuSeconds, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "20" },
    connections: { type: "string", default: "8" },
    streams: { type: "string", default: "4" },
    soak: { type: "string", default: "0" },
    rounds: { type: "string", default: "1" },
    only: { type: "string" },
    profile: { type: "string" },
  },
});
const duration = Number(values.duration) * 1000;
const connections = Number(values.connections);
const streamCount = Number(values.streams);
const BATCH = 100;
const root = new URL("..", import.meta.url).pathname;
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

/** Starts a node script; resolves with its port once `portOf` finds it on stdout. */
function start(
  args: string[],
  env: Record<string, string>,
  portOf: (line: string) => number | undefined,
) {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  return new Promise<{ child: ChildProcess; port: number }>((resolve, reject) => {
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      for (const line of buffer.split("\n")) {
        const port = line.startsWith("{") ? portOf(line) : undefined;
        if (port) resolve({ child, port });
      }
      buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
    });
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}`)));
  });
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  child.kill("SIGKILL");
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/** Batches answered 503 (pushback or admission control) and retried after Retry-After. */
let restRetried = 0;

/** Posts batches from `connections` workers until the deadline; returns events acknowledged. */
async function restLoad(url: string, keys: string[], until: number): Promise<number> {
  const result = await postBatches({ url, keys, connections, batch: BATCH, until, label: "REST" });
  restRetried += result.retried;
  return result.acked;
}

// The stream's requests, encoded once (the REST client's cost per batch is one
// JSON.stringify): a pool of distinct ~1 KB events, each a length-prefixed gRPC message.
const STREAM_POOL = Array.from({ length: 1000 }, (_, i) => {
  const message = toBinary(
    IngestEventsRequestSchema,
    create(IngestEventsRequestSchema, { event: fromJson(EventSchema, sampleEvent(i) as never) }),
  );
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
});

/**
 * Streams events on `streamCount` IngestEvents streams until the deadline; returns the
 * events acknowledged. A plain HTTP/2 gRPC client (node:http2): it writes BATCH messages
 * per write and waits only when HTTP/2 flow control says so, as gRPC clients of other
 * languages do; connect-node's client waits for each message's write callback before
 * the next, which bounds one stream to one message per turn of its event loop.
 */
async function streamLoad(url: string, keys: string[], until: number): Promise<number> {
  const session = connect(url);
  let acked = 0;
  let refused = 0;
  const one = (s: number) =>
    new Promise<void>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/audit.v1.IngestService/IngestEvents",
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${keys[s % keys.length]}`,
      });
      let pending: Buffer = Buffer.alloc(0);
      stream.on("data", (chunk: Buffer) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        while (pending.length >= 5) {
          const length = pending.readUInt32BE(1);
          if (pending.length < 5 + length) break;
          const reply = fromBinary(IngestEventsResponseSchema, pending.subarray(5, 5 + length));
          if (reply.result?.eventId) acked++;
          else if (++refused <= 3) {
            process.stderr.write(`  stream: ${reply.result?.error ?? "no result"}\n`);
          }
          pending = pending.subarray(5 + length);
        }
      });
      stream.on("trailers", (trailers) => {
        const status = trailers["grpc-status"];
        if (status !== undefined && status !== "0") {
          process.stderr.write(`  stream ended: ${status} ${trailers["grpc-message"] ?? ""}\n`);
        }
      });
      stream.on("error", reject);
      stream.on("close", resolve);
      let next = s * 250;
      const write = () => {
        while (Date.now() < until) {
          const frames = Array.from(
            { length: BATCH },
            () => STREAM_POOL[next++ % STREAM_POOL.length] as Buffer,
          );
          if (!stream.write(Buffer.concat(frames))) {
            stream.once("drain", write);
            return;
          }
        }
        stream.end();
      };
      write();
    });
  await Promise.all(Array.from({ length: streamCount }, (_, s) => one(s)));
  session.close();
  return acked;
}

interface Sample {
  second: number;
  rssMb: number;
  lag: number;
  /** Age of the oldest event not yet indexed, over the logs (what the pushback bounds). */
  lagSeconds: number;
}

/** Samples the server's RSS and the integrator's lag every second until `done` settles. */
function sampler(pid: number, db: Db, done: Promise<unknown>): Promise<Sample[]> {
  const samples: Sample[] = [];
  const started = Date.now();
  let finished = false;
  void done.finally(() => {
    finished = true;
  });
  return (async () => {
    while (!finished) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // The service's own figures (its /metrics lag gauges read the same).
      const summary = await readLagSummary(db);
      samples.push({
        second: Math.round((Date.now() - started) / 1000),
        rssMb: await rssMb(pid),
        lag: Number(summary.head - summary.integrated),
        lagSeconds: summary.oldestPending
          ? Math.max(0, (Date.now() - summary.oldestPending.getTime()) / 1000)
          : 0,
      });
    }
    return samples;
  })();
}

/** Waits until every acknowledged event is indexed; returns the seconds waited. */
async function searchable(db: Db): Promise<number> {
  const started = Date.now();
  for (;;) {
    const { head, integrated } = await readLagSummary(db);
    if (head === integrated) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (Date.now() - started) / 1000;
}

interface Row {
  name: string;
  round: number;
  seconds: number;
  acked: number;
  ackedPerSecond: number;
  /** Acknowledged events/s over that of the plain run of the same round. */
  vsPlain: number;
  /** The server process's CPU (all threads) per acknowledged event, during the load. */
  serverCpuUsPerEvent: number;
  /** The same through to searchable: the load and the catch-up after it. */
  serverCpuUsPerSearchable?: number;
  searchablePerSecond?: number;
  catchUpSeconds?: number;
  rssMbFirst?: number;
  rssMbLast?: number;
  rssMbMax?: number;
  lagMax?: number;
  /** REST batches answered 503 and retried (the pushback while the integrator is behind). */
  retried?: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

async function main() {
  const rounds = Math.max(1, Number(values.rounds));
  process.stderr.write(
    `bench:bulk: ${cpus().length} cores, ${values.duration} s per scenario, ${rounds} round(s), load average ${loadavg()
      .map((n) => n.toFixed(1))
      .join(" ")}\n`,
  );
  await new Promise<void>((resolve, reject) => {
    const build = spawn("npm", ["run", "--silent", "build"], { cwd: root, stdio: "inherit" });
    build.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`build ${code}`))));
  });
  const rows: Row[] = [];

  // The plain reference, up for the whole run (idle while the service is measured).
  const plainUrl = await recreateDatabase("audit_bench_plain_bulk");
  const plain = await start(
    ["--import", "tsx", "bench/plain-bulk-server.ts", "0", plainUrl],
    {},
    (line) => (JSON.parse(line) as { port?: number }).port,
  );
  const plainKeys = Array.from({ length: 8 }, () => `pk_live_${randomBytes(24).toString("hex")}`);
  const plainSql = postgres(plainUrl, { max: 1, onnotice: () => {} });
  for (const key of plainKeys) {
    await plainSql`insert into plain_keys values (${createHash("sha256").update(key).digest("hex")}, ${randomUUID()})`;
  }
  await plainSql.end();

  // The service on PostgreSQL.
  const databaseUrl = await recreateDatabase("audit_bench_bulk");
  const adminToken = randomBytes(24).toString("hex");
  if (values.profile) await mkdir(values.profile, { recursive: true });
  const service = await start(
    [
      ...(values.profile ? ["--cpu-prof", "--cpu-prof-dir", values.profile] : []),
      "dist/src/main.js",
    ],
    {
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      ADMIN_TOKEN: adminToken,
      RATE_LIMIT_MAX: "1000000000",
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
      REDIS_KEY_PREFIX: `audit-bench-bulk-${randomBytes(4).toString("hex")}:`,
      MASTER_KEY: randomBytes(32).toString("base64"),
      TOKEN_SIGNING_KEY: randomBytes(32).toString("hex"),
    },
    (line) => {
      const parsed = JSON.parse(line) as { msg?: string; port?: number };
      return parsed.msg === "audit event service listening" ? parsed.port : undefined;
    },
  );
  const url = `http://127.0.0.1:${service.port}`;
  const admin = createAdminClient(url, adminToken);
  // Pro projects (150,000 events a month each), enough that no quota is reached.
  const keys: string[] = [];
  for (let i = 0; i < 16; i++) {
    const { project } = await admin.createProject({ name: `bulk ${i}`, plan: Plan.PRO });
    const created = await admin.createApiKey({
      projectId: project?.id ?? "",
      environment: Environment.LIVE,
    });
    keys.push(created.secret);
  }
  const db = createPostgresDb({ url: databaseUrl, maxConnections: 2 });
  const pid = service.child.pid ?? 0;

  const measure = async (
    name: string,
    round: number,
    plainRate: number,
    load: (until: number) => Promise<number>,
    ms: number,
  ) => {
    process.stderr.write(`  ${name} (round ${round}) ...\n`);
    await searchable(db);
    const retried0 = restRetried;
    const cpu0 = await cpuSeconds(pid);
    const t0 = Date.now();
    const running = load(t0 + ms);
    const samples = sampler(pid, db, running);
    const acked = await running;
    const seconds = (Date.now() - t0) / 1000;
    const cpu1 = await cpuSeconds(pid);
    const catchUp = await searchable(db);
    const cpu2 = await cpuSeconds(pid);
    const seen = await samples;
    rows.push({
      name,
      round,
      seconds,
      acked,
      ackedPerSecond: acked / seconds,
      vsPlain: acked / seconds / plainRate,
      serverCpuUsPerEvent: ((cpu1 - cpu0) / acked) * 1e6,
      serverCpuUsPerSearchable: ((cpu2 - cpu0) / acked) * 1e6,
      searchablePerSecond: acked / (seconds + catchUp),
      catchUpSeconds: catchUp,
      rssMbFirst: seen[0]?.rssMb ?? 0,
      rssMbLast: seen.at(-1)?.rssMb ?? 0,
      rssMbMax: Math.max(...seen.map((s) => s.rssMb)),
      lagMax: Math.max(...seen.map((s) => s.lag)),
      retried: restRetried - retried0,
    });
    return seen;
  };

  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`  plain bulk (round ${round}) ...\n`);
    const plainPid = plain.child.pid ?? 0;
    const cpu0 = await cpuSeconds(plainPid);
    const t0 = Date.now();
    const plainAcked = await restLoad(`http://127.0.0.1:${plain.port}`, plainKeys, t0 + duration);
    const seconds = (Date.now() - t0) / 1000;
    const cpu1 = await cpuSeconds(plainPid);
    const plainRate = plainAcked / seconds;
    rows.push({
      name: "plain bulk (REST, 1 INSERT per batch)",
      round,
      seconds,
      acked: plainAcked,
      ackedPerSecond: plainRate,
      vsPlain: 1,
      serverCpuUsPerEvent: ((cpu1 - cpu0) / plainAcked) * 1e6,
    });
    if (values.only !== "stream")
      await measure(
        `service REST batches of ${BATCH}`,
        round,
        plainRate,
        (until) => restLoad(url, keys, until),
        duration,
      );
    if (values.only !== "rest")
      await measure(
        "service gRPC IngestEvents stream",
        round,
        plainRate,
        (until) => streamLoad(url, keys, until),
        duration,
      );
  }
  await stop(plain.child);
  let soak: Sample[] = [];
  if (Number(values.soak) > 0) {
    soak = await measure(
      `soak: service REST for ${values.soak} s`,
      0,
      Number.NaN,
      (until) => restLoad(url, keys, until),
      Number(values.soak) * 1000,
    );
  }
  await db.close();
  await stop(service.child);

  const table = rows.map((row) => ({
    scenario: row.name,
    round: row.round || "soak",
    "acked ev/s": Math.round(row.ackedPerSecond),
    "vs plain": Number.isNaN(row.vsPlain) ? "" : row.vsPlain.toFixed(2),
    "server CPU µs/ev": Math.round(row.serverCpuUsPerEvent),
    "searchable ev/s": row.searchablePerSecond ? Math.round(row.searchablePerSecond) : "",
    "server CPU µs/searchable ev": row.serverCpuUsPerSearchable
      ? Math.round(row.serverCpuUsPerSearchable)
      : "",
    "catch-up s": row.catchUpSeconds?.toFixed(1) ?? "",
    "RSS MB first/last/max": row.rssMbMax
      ? `${row.rssMbFirst?.toFixed(0)}/${row.rssMbLast?.toFixed(0)}/${row.rssMbMax.toFixed(0)}`
      : "",
    "max lag (events)": row.lagMax ?? "",
    "503 retried": row.retried ?? "",
  }));
  console.table(table);
  const names = [...new Set(rows.filter((row) => row.round > 0).map((row) => row.name))];
  const medians = names.map((name) => {
    const mine = rows.filter((row) => row.name === name && row.round > 0);
    return {
      scenario: name,
      "median acked ev/s": Math.round(median(mine.map((row) => row.ackedPerSecond))),
      "median vs plain": median(mine.map((row) => row.vsPlain)).toFixed(2),
      "median server CPU µs/ev": Math.round(median(mine.map((row) => row.serverCpuUsPerEvent))),
      "median searchable ev/s": mine[0]?.searchablePerSecond
        ? Math.round(median(mine.map((row) => row.searchablePerSecond ?? 0)))
        : "",
    };
  });
  if (rounds > 1) console.table(medians);
  if (soak.length > 0) {
    const windows = [];
    for (let at = 0; at < soak.length; at += 30) {
      const part = soak.slice(at, at + 30);
      windows.push({
        window: `${part[0]?.second ?? 0}-${part.at(-1)?.second ?? 0} s`,
        "RSS MB min/max": `${Math.min(...part.map((s) => s.rssMb)).toFixed(0)}/${Math.max(...part.map((s) => s.rssMb)).toFixed(0)}`,
        "lag min/max": `${Math.min(...part.map((s) => s.lag))}/${Math.max(...part.map((s) => s.lag))}`,
        "lag s max": Math.max(...part.map((s) => s.lagSeconds)).toFixed(1),
      });
    }
    console.table(windows);
  }
  process.stderr.write(
    `load average at the end: ${loadavg()
      .map((n) => n.toFixed(1))
      .join(" ")}\n`,
  );
  await mkdir(`${root}bench/results`, { recursive: true });
  await writeFile(
    `${root}bench/results/bulk-latest.json`,
    `${JSON.stringify({ loadavg: loadavg(), rows, medians, soak }, null, 2)}\n`,
  );
}

await main();
process.exit(0);
