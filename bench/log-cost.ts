/**
 * What the verifiable log costs ingestion (docs/verifiable-log.md, "Costs"): two
 * instances of the service run in this process, each on its own fresh PostgreSQL
 * database (or with --embedded, its own PGlite directory), one with the log on (the tree
 * stage in the integrator's passes, checkpoints published every second) and one with it
 * off (AppOptions.verifiableLog = false: a bench-only switch, no configuration). In
 * interleaved rounds (the machine's speed drifts, and it is shared), bench/load-bulk.ts
 * posts batches of 100 ~1 KB events to one of them for --duration seconds; then the round
 * waits until the integrator has indexed every acknowledged event. Per round and variant:
 * events acknowledged per second, and events per second through to searchable
 * (acknowledged / (load time + catch-up time)), and the CPU per acknowledged event, over
 * the load and the catch-up, of this process (both services: the idle one costs next to
 * nothing meanwhile, its loops find no work) and of the variant's PostgreSQL backends:
 * the figures that say where the log's cost goes on a machine too busy for the rates to
 * be compared.
 *
 * Usage: node --import tsx bench/log-cost.ts [--rounds 3] [--duration 15]
 *        [--connections 8] [--embedded]
 * Prints one line per round, then the medians and the on/off ratios. 127.0.0.1 only.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type App, createApp } from "../src/app.js";
import { generateApiKey } from "../src/auth/api-keys.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import type { ListeningServer } from "../src/transport/server.js";
import { databaseCpuSeconds, dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "15" },
    connections: { type: "string", default: "8" },
    embedded: { type: "boolean", default: false },
  },
});
const rounds = Number(values.rounds);
const durationSeconds = Number(values.duration);
const connections = Number(values.connections);

interface Variant {
  name: "log on" | "log off";
  app: App;
  server: ListeningServer;
  database?: string;
  dataDir?: string;
}

interface Round {
  variant: Variant["name"];
  ackedPerSecond: number;
  searchablePerSecond: number;
  catchUpSeconds: number;
  /** This process's CPU (both services; the idle one does next to nothing), per event. */
  serviceCpuMicros: number;
  /** CPU of the variant's PostgreSQL backends per event (undefined with --embedded). */
  databaseCpuMicros: number | undefined;
}

const start = async (name: Variant["name"]): Promise<Variant> => {
  const database = `audit_bench_log_${name === "log on" ? "on" : "off"}`;
  const dataDir = values.embedded ? await mkdtemp(join(tmpdir(), "audit-bench-cost-")) : undefined;
  const config = loadConfig({
    HOST: "127.0.0.1",
    PORT: "0",
    ...(dataDir === undefined
      ? {
          DATABASE_URL: await recreateDatabase(database),
          MASTER_KEY: randomBytes(32).toString("base64"),
          TOKEN_SIGNING_KEY: randomBytes(32).toString("hex"),
        }
      : { DATA_DIR: dataDir }),
    LOG_LEVEL: "silent",
    // The cost per event is measured, not the limit; quotas stay on (pro plan).
    RATE_LIMIT_MAX: "100000000",
    // What is measured is the cost per event, not the pushback's policy (docs/write-path.md).
    INGEST_MAX_LAG_SECONDS: "0",
  });
  const app = await createApp(config, createLogger(config.LOG_LEVEL), {
    verifiableLog: name === "log on",
  });
  const server = await app.listen();
  return {
    name,
    app,
    server,
    ...(dataDir === undefined ? { database } : { dataDir }),
  };
};

/** Events acknowledged and not yet indexed, in the variant's database. */
const lag = async (variant: Variant) => {
  const [row] = await variant.app.db.query<{ lag: number }>(
    `select (select count(*) from events)::int
            - (select coalesce(sum(size), 0) from event_logs)::int as lag`,
  );
  return row?.lag ?? 0;
};

const searchable = async (variant: Variant) => {
  const started = Date.now();
  while ((await lag(variant)) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  return (Date.now() - started) / 1000;
};

/** CPU seconds of the variant's PostgreSQL backends, by pid. */
const backends = (variant: Variant) =>
  variant.database === undefined
    ? Promise.resolve(undefined)
    : databaseCpuSeconds(variant.database);

/**
 * API keys of 8 new pro projects: each round writes into projects of its own, so that no
 * round meets a monthly quota (150,000 events a project; a fast machine acknowledges over
 * a million events in 8 rounds) while the quota check stays on the path measured.
 */
const newProjectKeys = async (variant: Variant, round: number): Promise<string[]> => {
  const keys: string[] = [];
  for (let i = 0; i < 8; i++) {
    const project = await variant.app.projects.createProject(
      `bench ${variant.name} round ${round} ${i}`,
      "pro",
    );
    const key = generateApiKey("live");
    await variant.app.projects.createApiKey({
      projectId: project.id,
      environment: "live",
      keyHash: key.hash,
      prefix: key.prefix,
    });
    keys.push(key.secret);
  }
  return keys;
};

const round = async (variant: Variant, number: number): Promise<Round> => {
  const keys = await newProjectKeys(variant, number);
  await searchable(variant);
  const backendsBefore = await backends(variant);
  const processBefore = process.cpuUsage();
  const job = {
    url: `http://127.0.0.1:${variant.server.port}`,
    keys,
    connections,
    durationSeconds,
    batch: 100,
  };
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "bench/load-bulk.ts", JSON.stringify(job)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(text) : reject(new Error(`bulk loader exited with ${code}`)),
    );
  });
  const result = JSON.parse(output.trim().split("\n").at(-1) ?? "{}") as {
    acked: number;
    seconds: number;
  };
  const catchUp = await searchable(variant);
  const processCpu = process.cpuUsage(processBefore);
  const backendsAfter = await backends(variant);
  let databaseCpu: number | undefined;
  if (backendsAfter !== undefined) {
    databaseCpu = 0;
    for (const [pid, after] of backendsAfter)
      databaseCpu += after - (backendsBefore?.get(pid) ?? 0);
  }
  const perEvent = (seconds: number) => (seconds * 1e6) / result.acked;
  return {
    variant: variant.name,
    ackedPerSecond: result.acked / result.seconds,
    searchablePerSecond: result.acked / (result.seconds + catchUp),
    catchUpSeconds: catchUp,
    serviceCpuMicros: perEvent((processCpu.user + processCpu.system) / 1e6),
    databaseCpuMicros: databaseCpu === undefined ? undefined : perEvent(databaseCpu),
  };
};

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

/** Each round's on/off ratios (to two decimals) and their medians. */
function roundRatios(all: readonly Round[]) {
  const ackedRatios: number[] = [];
  const searchableRatios: number[] = [];
  for (let i = 0; i + 1 < all.length; i += 2) {
    const pair = [all[i], all[i + 1]];
    const onRound = pair.find((result) => result?.variant === "log on");
    const offRound = pair.find((result) => result?.variant === "log off");
    if (!onRound || !offRound) continue;
    ackedRatios.push(onRound.ackedPerSecond / offRound.ackedPerSecond);
    searchableRatios.push(onRound.searchablePerSecond / offRound.searchablePerSecond);
  }
  const twoDecimals = (x: number) => Math.round(x * 100) / 100;
  return {
    ackedRatios: ackedRatios.map(twoDecimals),
    searchableRatios: searchableRatios.map(twoDecimals),
    ackedRatioMedian: twoDecimals(median(ackedRatios)),
    searchableRatioMedian: twoDecimals(median(searchableRatios)),
  };
}

const on = await start("log on");
const off = await start("log off");
const results: Round[] = [];
try {
  for (let r = 1; r <= rounds; r++) {
    // Alternate which goes first, so that neither always follows the other's backlog.
    for (const variant of r % 2 === 1 ? [on, off] : [off, on]) {
      const result = await round(variant, r);
      results.push(result);
      console.log(
        `round ${r} ${result.variant}: ${Math.round(result.ackedPerSecond)} acked/s, ${Math.round(result.searchablePerSecond)} searchable/s (catch-up ${result.catchUpSeconds.toFixed(1)} s); CPU per event: service ${Math.round(result.serviceCpuMicros)} µs, database ${result.databaseCpuMicros === undefined ? "-" : `${Math.round(result.databaseCpuMicros)} µs`}; load ${loadavg()[0]?.toFixed(1)}`,
      );
    }
  }
  const of = (name: Variant["name"], pick: (round: Round) => number) =>
    median(results.filter((result) => result.variant === name).map(pick));
  const summary = {
    storage: values.embedded ? "pglite" : "postgresql",
    rounds,
    durationSeconds,
    connections,
    ackedOn: Math.round(of("log on", (x) => x.ackedPerSecond)),
    ackedOff: Math.round(of("log off", (x) => x.ackedPerSecond)),
    searchableOn: Math.round(of("log on", (x) => x.searchablePerSecond)),
    searchableOff: Math.round(of("log off", (x) => x.searchablePerSecond)),
    serviceCpuMicrosOn: Math.round(of("log on", (x) => x.serviceCpuMicros)),
    serviceCpuMicrosOff: Math.round(of("log off", (x) => x.serviceCpuMicros)),
    databaseCpuMicrosOn: Math.round(of("log on", (x) => x.databaseCpuMicros ?? 0)),
    databaseCpuMicrosOff: Math.round(of("log off", (x) => x.databaseCpuMicros ?? 0)),
    // Each round's on/off, then their median: the pairs ran minutes apart at most, so
    // these drift less with the machine than the ratio of the two medians.
    ...roundRatios(results),
  };
  console.log(
    `medians: acknowledged ${summary.ackedOn}/s on, ${summary.ackedOff}/s off (on/off ${(summary.ackedOn / summary.ackedOff).toFixed(2)}); searchable ${summary.searchableOn}/s on, ${summary.searchableOff}/s off (on/off ${(summary.searchableOn / summary.searchableOff).toFixed(2)}); CPU per event ${summary.serviceCpuMicrosOn} µs on, ${summary.serviceCpuMicrosOff} µs off (service), ${summary.databaseCpuMicrosOn} µs on, ${summary.databaseCpuMicrosOff} µs off (database)`,
  );
  console.log(
    `per round on/off: acknowledged ${summary.ackedRatios.join(", ")} (median ${summary.ackedRatioMedian}); searchable ${summary.searchableRatios.join(", ")} (median ${summary.searchableRatioMedian})`,
  );
  console.log(JSON.stringify(summary));
} finally {
  for (const variant of [on, off]) {
    await variant.server.close(0);
    await variant.app.close();
    if (variant.database) await dropDatabase(variant.database);
    if (variant.dataDir) await rm(variant.dataDir, { recursive: true, force: true });
  }
}
process.exit(0);
