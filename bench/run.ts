/**
 * `npm run bench`: measures Create Event throughput, latency, CPU (the server's and
 * PostgreSQL's, and the two per event) and memory of the
 * service against two references on the same machine, all on 127.0.0.1:
 *   bare   a node:http server that parses the JSON and answers 201 (Node's ceiling)
 *   plain  one handler, one key query, one INSERT per request (what a team would write)
 *   service  this service with everything on (auth, rate limit, quota, validation,
 *            encryption, blind indexes, durable commit), over REST and gRPC, and with an
 *            Idempotency-Key on every request.
 * The rate limit is raised for the run (RATE_LIMIT_MAX) because what is measured is
 * the cost per event, not the limit; quotas stay on (projects on the pro plan).
 * Prints a table and writes bench/results/latest.json.
 *
 * Options: --duration <s> (default 15), --connections <n> (default 64),
 * --embedded (the service on PGlite instead of PostgreSQL), --only <name,...>,
 * --workers <n> (service processes; default from WORKERS or 1), --soak <s> (after the
 * scenarios, keep loading the service over REST for that long, reported per window),
 * --profile <dir> (write a V8 CPU profile of the service there; summarise it with
 * `node --import tsx bench/profile-summary.ts <file>`), --rounds <n> (at the end, n more
 * rounds of plain REST then service REST, back to back, and the median of their ratios:
 * on a machine whose speed drifts, the fairest comparison).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { Environment, Plan } from "../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../src/admin/admin-client.js";
import { commandCpuSeconds, cpuSeconds, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "15" },
    connections: { type: "string", default: "64" },
    embedded: { type: "boolean", default: false },
    only: { type: "string" },
    workers: { type: "string", default: process.env.WORKERS ?? "1" },
    soak: { type: "string", default: "0" },
    profile: { type: "string" },
    rounds: { type: "string", default: "0" },
  },
});
const durationSeconds = Number(values.duration);
const connections = Number(values.connections);
const only = values.only?.split(",");
const REDIS = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const root = new URL("..", import.meta.url).pathname;

interface LoadResult {
  requestsPerSecond: number;
  total: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  latencyP50: number | null;
  latencyP99: number | null;
  /** Only from h2load, which reports no percentiles. */
  latencyMean?: number | null;
}

interface Row extends LoadResult {
  name: string;
  /** Cores used by the server process(es) on average during the run. */
  serverCpuCores: number;
  /** Cores used by PostgreSQL (all its processes) on average during the run. */
  databaseCpuCores: number;
  /** Cores used by Redis (the rate limits) on average during the run. */
  redisCpuCores: number;
  peakRssMb: number;
}

const rows: Row[] = [];
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

/** Starts a child process and resolves with its first JSON stdout line that has `port`. */
function startProcess(
  args: string[],
  env: Record<string, string> = {},
  waitFor: (line: string) => number | undefined = jsonPort,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`${args.join(" ")} did not start`)), 60_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      for (const line of buffer.split("\n")) {
        const port = waitFor(line);
        if (port) {
          clearTimeout(timer);
          resolve({ child, port });
        }
      }
      buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
    });
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}`)));
  });
}

function jsonPort(line: string): number | undefined {
  if (!line.startsWith("{")) return undefined;
  const parsed = JSON.parse(line) as { port?: number };
  return parsed.port;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  child.kill("SIGKILL");
}

async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) / 1024 : 0;
}

/** Runs a load generator against servers with the given pids and records a row. */
async function measure(name: string, pids: number[], loader: string, job: unknown): Promise<void> {
  if (only && !only.includes(name) && !name.startsWith("soak") && !name.startsWith("round")) {
    return;
  }
  process.stderr.write(`  ${name}: ${durationSeconds} s ...\n`);
  const before = await Promise.all(pids.map(cpuSeconds));
  const databaseBefore = await commandCpuSeconds("postgres");
  const redisBefore = await commandCpuSeconds("redis-server");
  const started = performance.now();
  const result = await new Promise<LoadResult>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", loader, JSON.stringify(job)], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(output) as LoadResult)
        : reject(new Error(`${loader} ${code}`)),
    );
  });
  const elapsed = (performance.now() - started) / 1000;
  const after = await Promise.all(pids.map(cpuSeconds));
  const databaseCpu = (await commandCpuSeconds("postgres")) - databaseBefore;
  const redisCpu = (await commandCpuSeconds("redis-server")) - redisBefore;
  const cpu = after.reduce((sum, value, i) => sum + value - (before[i] ?? 0), 0);
  const rss = await Promise.all(pids.map(peakRssMb));
  rows.push({
    name,
    ...result,
    serverCpuCores: cpu / elapsed,
    databaseCpuCores: databaseCpu / elapsed,
    redisCpuCores: redisCpu / elapsed,
    peakRssMb: rss.reduce((a, b) => a + b, 0),
  });
}

async function main(): Promise<void> {
  process.stderr.write(`bench: ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB\n`);
  await run("npm", ["run", "--silent", "build"]);

  // Reference 1: bare node:http.
  const bare = await startProcess(["--import", "tsx", "bench/bare-server.ts", "0"]);
  await measure("bare REST", [bare.child.pid ?? 0], "bench/load-http.ts", {
    url: `http://127.0.0.1:${bare.port}`,
    keys: ["x"],
    connections,
    durationSeconds,
    idempotency: false,
  });
  await stop(bare.child);

  // Reference 2: the plain implementation.
  const plainUrl = await recreateDatabase("audit_bench_plain");
  const plain = await startProcess(["--import", "tsx", "bench/plain-server.ts", "0", plainUrl]);
  const plainKeys = Array.from({ length: 20 }, () => `pk_live_${randomBytes(24).toString("hex")}`);
  const plainSql = postgres(plainUrl, { max: 1, onnotice: () => {} });
  for (const key of plainKeys) {
    await plainSql`insert into plain_keys values (${createHash("sha256").update(key).digest("hex")}, ${randomUUID()})`;
  }
  await plainSql.end();
  const plainJob = {
    url: `http://127.0.0.1:${plain.port}`,
    keys: plainKeys,
    connections,
    durationSeconds,
    idempotency: false,
  };
  await measure("plain REST", [plain.child.pid ?? 0], "bench/load-http.ts", plainJob);

  // The service.
  const dataDir = await mkdtemp(join(tmpdir(), "audit-bench-"));
  const adminToken = randomBytes(24).toString("hex");
  const env: Record<string, string> = {
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    ADMIN_TOKEN: adminToken,
    RATE_LIMIT_MAX: "1000000000",
    // What is measured is the cost per event, not the pushback's policy (docs/write-path.md).
    INGEST_MAX_LAG_SECONDS: "0",
    WORKERS: values.workers ?? "1",
  };
  if (values.embedded) {
    env.DATA_DIR = dataDir;
  } else {
    env.DATABASE_URL = await recreateDatabase("audit_bench_service");
    env.REDIS_URL = REDIS;
    env.REDIS_KEY_PREFIX = `audit-bench-${randomBytes(4).toString("hex")}:`;
    env.MASTER_KEY = randomBytes(32).toString("base64");
    env.TOKEN_SIGNING_KEY = randomBytes(32).toString("hex");
  }
  const profileArgs = values.profile ? ["--cpu-prof", `--cpu-prof-dir=${values.profile}`] : [];
  const service = await startProcess([...profileArgs, "dist/src/main.js"], env, (line) => {
    if (!line.startsWith("{")) return undefined;
    const parsed = JSON.parse(line) as { msg?: string; port?: number };
    return parsed.msg === "audit event service listening" ? parsed.port : undefined;
  });
  const servicePids = await processTree(service.child.pid ?? 0);
  const admin = createAdminClient(`http://127.0.0.1:${service.port}`, adminToken);
  // Enough pro projects that no monthly quota is reached during the run.
  const keys: string[] = [];
  for (let i = 0; i < 40; i++) {
    const { project } = await admin.createProject({ name: `bench ${i}`, plan: Plan.PRO });
    const created = await admin.createApiKey({
      projectId: project?.id ?? "",
      environment: Environment.LIVE,
    });
    keys.push(created.secret);
  }
  const serviceUrl = `http://127.0.0.1:${service.port}`;
  const serviceJob = { url: serviceUrl, keys, connections, durationSeconds, idempotency: false };
  await measure("service REST", servicePids, "bench/load-http.ts", serviceJob);
  await measure("service REST + Idempotency-Key", servicePids, "bench/load-http.ts", {
    ...serviceJob,
    idempotency: true,
  });
  await measure("service gRPC", servicePids, "bench/load-grpc.ts", {
    address: `127.0.0.1:${service.port}`,
    keys,
    concurrency: connections,
    channels: 4,
    durationSeconds,
  });
  if (await hasCommand("h2load")) {
    await measure("service gRPC (h2load)", servicePids, "bench/load-h2load.ts", {
      address: `127.0.0.1:${service.port}`,
      keys,
      connections: 4,
      streams: Math.max(1, Math.round(connections / 4)),
      durationSeconds,
    });
  } else {
    process.stderr.write("  (h2load not installed: apt-get install nghttp2-client)\n");
  }
  // Sustained load: consecutive windows of the REST scenario, to see any drift.
  const soakWindows = Math.ceil(Number(values.soak) / durationSeconds);
  for (let window = 1; window <= soakWindows; window++) {
    await measure(`soak REST window ${window}`, servicePids, "bench/load-http.ts", serviceJob);
  }
  // Interleaved rounds: plain, then the service, each round close in time.
  for (let round = 1; round <= Number(values.rounds); round++) {
    await measure(
      `round ${round} plain REST`,
      [plain.child.pid ?? 0],
      "bench/load-http.ts",
      plainJob,
    );
    await measure(`round ${round} service REST`, servicePids, "bench/load-http.ts", serviceJob);
  }
  await stop(service.child);
  await stop(plain.child);
  await rm(dataDir, { recursive: true, force: true });

  report();
}

/** Service/plain ratios of the interleaved rounds, and their median. */
function roundRatios(): { ratios: number[]; median: number } | undefined {
  const ratios: number[] = [];
  for (let round = 1; ; round++) {
    const plain = rows.find((row) => row.name === `round ${round} plain REST`);
    const service = rows.find((row) => row.name === `round ${round} service REST`);
    if (!plain || !service) break;
    ratios.push(Number((service.requestsPerSecond / plain.requestsPerSecond).toFixed(2)));
  }
  if (ratios.length === 0) return undefined;
  const sorted = [...ratios].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[middle] ?? 0)
      : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
  return { ratios, median: Number(median.toFixed(2)) };
}

/** The pid and its child processes (cluster workers). */
async function processTree(pid: number): Promise<number[]> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  try {
    const children = (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8"))
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    return [pid, ...children];
  } catch {
    return [pid];
  }
}

function hasCommand(command: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    child.once("exit", (code) => resolve(code === 0));
  });
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: "inherit" });
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${code}`)),
    );
  });
}

function report(): void {
  const find = (name: string) => rows.find((row) => row.name === name)?.requestsPerSecond;
  const bare = find("bare REST");
  const plain = find("plain REST");
  const table = rows.map((row) => ({
    scenario: row.name,
    "events/s": Math.round(row.requestsPerSecond),
    "p50 ms": row.latencyP50 === null ? "-" : Math.round(row.latencyP50),
    "p99 ms": row.latencyP99 === null ? "-" : Math.round(row.latencyP99),
    "mean ms": row.latencyMean == null ? "-" : Math.round(row.latencyMean),
    "server CPU (cores)": row.serverCpuCores.toFixed(2),
    "db CPU (cores)": row.databaseCpuCores.toFixed(2),
    "redis CPU (cores)": row.redisCpuCores.toFixed(2),
    // What one event costs the server, its database and Redis together on the shared
    // cores: the figure to compare.
    "CPU µs/event": Math.round(
      ((row.serverCpuCores + row.databaseCpuCores + row.redisCpuCores) * 1e6) /
        row.requestsPerSecond,
    ),
    "peak RSS MB": Math.round(row.peakRssMb),
    "non-2xx": row.non2xx + row.errors + row.timeouts,
    "vs bare": bare ? (row.requestsPerSecond / bare).toFixed(2) : "",
    "vs plain": plain ? (row.requestsPerSecond / plain).toFixed(2) : "",
  }));
  console.table(table);
  const rounds = roundRatios();
  if (rounds) {
    console.log(
      `service REST / plain REST, interleaved rounds: ${rounds.ratios.join(", ")} (median ${rounds.median})`,
    );
  }
  const output = {
    date: new Date().toISOString(),
    machine: {
      cores: cpus().length,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    settings: {
      durationSeconds,
      connections,
      storage: values.embedded ? "pglite" : "postgresql",
      workers: Number(values.workers),
      rateLimitMax: 1_000_000_000,
    },
    rows,
    rounds,
  };
  void mkdir(join(root, "bench/results"), { recursive: true }).then(() =>
    writeFile(join(root, "bench/results/latest.json"), `${JSON.stringify(output, null, 2)}\n`),
  );
}

await main();
