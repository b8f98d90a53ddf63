/**
 * Does the lean unary gRPC path (src/transport/grpc-unary.ts) earn its place? Two
 * instances of the service run in this process on one fresh PostgreSQL database: one
 * answers unary gRPC on the lean path, the other sends every call through connect-node's
 * adapter. h2load (Debian package nghttp2-client; bench/load-h2load.ts) replays the same
 * ~1 KB CreateEvent frame against each in turn, in interleaved rounds (the machine's
 * speed drifts, and it is shared), and the process's CPU time is read around each round:
 * the idle instance costs nothing meanwhile, so the CPU per event is the serving one's.
 *
 * Usage: node --import tsx bench/grpc-unary.ts [--rounds 3] [--duration 8]
 *        [--connections 4] [--streams 16]
 * Prints one line per round, then the medians, and a JSON summary line. 127.0.0.1 only.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { type App, createApp } from "../src/app.js";
import { generateApiKey } from "../src/auth/api-keys.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import type { ListeningServer } from "../src/transport/server.js";
import { dropDatabase, recreateDatabase } from "./machine.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "8" },
    connections: { type: "string", default: "4" },
    streams: { type: "string", default: "16" },
  },
});
const rounds = Number(values.rounds);
const durationSeconds = Number(values.duration);
const connections = Number(values.connections);
const streams = Number(values.streams);

interface Variant {
  name: "lean" | "adapter";
  app: App;
  server: ListeningServer;
  keys: string[];
}

interface Round {
  variant: Variant["name"];
  eventsPerSecond: number;
  ok: number;
  failed: number;
  cpuMicrosPerEvent: number;
  latencyMeanMs: number;
}

const DATABASE = "audit_bench_grpc_unary";

// One deployment: both instances share the database, so they share its secrets.
const MASTER_KEY = randomBytes(32).toString("base64");
const TOKEN_SIGNING_KEY = randomBytes(32).toString("hex");

const start = async (name: Variant["name"], databaseUrl: string): Promise<Variant> => {
  const config = loadConfig({
    HOST: "127.0.0.1",
    PORT: "0",
    DATABASE_URL: databaseUrl,
    MASTER_KEY,
    TOKEN_SIGNING_KEY,
    LOG_LEVEL: "silent",
    // The cost per event is measured, not the limit; quotas stay on (pro plan).
    RATE_LIMIT_MAX: "100000000",
    // What is measured is the cost per event, not the pushback's policy (docs/write-path.md).
    INGEST_MAX_LAG_SECONDS: "0",
  });
  const app = await createApp(config, createLogger(config.LOG_LEVEL), {
    leanGrpc: name === "lean",
  });
  const server = await app.listen();
  const keys: string[] = [];
  for (let i = 0; i < connections; i++) {
    const project = await app.projects.createProject(`bench ${name} ${i}`, "pro");
    const key = generateApiKey("test");
    await app.projects.createApiKey({
      projectId: project.id,
      environment: "test",
      keyHash: key.hash,
      prefix: key.prefix,
    });
    keys.push(key.secret);
  }
  return { name, app, server, keys };
};

/** One h2load run against `variant`, with the CPU this process spent meanwhile. */
const round = async (variant: Variant): Promise<Round> => {
  const job = {
    address: `127.0.0.1:${variant.server.port}`,
    keys: variant.keys,
    connections,
    streams,
    durationSeconds,
  };
  const cpuBefore = process.cpuUsage();
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "bench/load-h2load.ts", JSON.stringify(job)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(text) : reject(new Error(`h2load loader exited with ${code}`)),
    );
  });
  const cpu = process.cpuUsage(cpuBefore);
  const result = JSON.parse(output.trim().split("\n").at(-1) ?? "{}") as {
    requestsPerSecond: number;
    ok: number;
    non2xx: number;
    errors: number;
    latencyMean: number;
  };
  return {
    variant: variant.name,
    eventsPerSecond: result.requestsPerSecond,
    ok: result.ok,
    failed: result.non2xx + result.errors,
    cpuMicrosPerEvent: (cpu.user + cpu.system) / Math.max(1, result.ok),
    latencyMeanMs: result.latencyMean,
  };
};

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
};

const databaseUrl = await recreateDatabase(DATABASE);
const lean = await start("lean", databaseUrl);
const adapter = await start("adapter", databaseUrl);
const results: Round[] = [];
try {
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first, so that neither always follows the other.
    const order = i % 2 === 0 ? [lean, adapter] : [adapter, lean];
    for (const variant of order) {
      const result = await round(variant);
      results.push(result);
      process.stdout.write(
        `round ${i + 1} ${result.variant.padEnd(7)} ${result.eventsPerSecond.toFixed(0).padStart(6)} events/s` +
          `  ${result.cpuMicrosPerEvent.toFixed(0).padStart(5)} µs CPU/event` +
          `  mean ${result.latencyMeanMs.toFixed(1)} ms  (${result.ok} ok, ${result.failed} failed)\n`,
      );
    }
  }
} finally {
  for (const variant of [lean, adapter]) {
    await variant.server.close(5_000);
    await variant.app.close();
  }
  await dropDatabase(DATABASE);
}

const summary = Object.fromEntries(
  (["lean", "adapter"] as const).map((name) => {
    const mine = results.filter((result) => result.variant === name);
    return [
      name,
      {
        eventsPerSecond: Math.round(median(mine.map((result) => result.eventsPerSecond))),
        cpuMicrosPerEvent: Math.round(median(mine.map((result) => result.cpuMicrosPerEvent))),
        failed: mine.reduce((total, result) => total + result.failed, 0),
      },
    ];
  }),
);
process.stdout.write(
  `medians: lean ${summary.lean?.eventsPerSecond} events/s, ${summary.lean?.cpuMicrosPerEvent} µs CPU/event; ` +
    `adapter ${summary.adapter?.eventsPerSecond} events/s, ${summary.adapter?.cpuMicrosPerEvent} µs CPU/event\n`,
);
process.stdout.write(
  `${JSON.stringify({ rounds, durationSeconds, connections, streams, summary })}\n`,
);
