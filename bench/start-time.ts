/**
 * `node --import tsx bench/start-time.ts`: how long a start takes when nothing changed
 * since the last build, from spawning the command to the first 200 from `/healthz` (and to
 * the "listening" log line), for `npm start` and `node dist/src/main.js`, on the embedded
 * database (already initialised: a restart, not a first start) and, with DATABASE_URL, on
 * PostgreSQL (a database of its own, migrated by the first run). Prints the median, the
 * fastest and the slowest of `--runs` starts (default 7) of each.
 * Builds dist/ first if it is stale (not counted).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";

const { values } = parseArgs({ options: { runs: { type: "string", default: "7" } } });
const runs = Number(values.runs);

const built = spawnSync(process.execPath, ["scripts/build.js", "--if-stale"], { stdio: "inherit" });
if (built.status !== 0) process.exit(built.status ?? 1);

/** One start: ms to the listening line and to the first 200 from /healthz; then SIGTERM. */
async function startOnce(command: string[], env: Record<string, string>) {
  const [file, ...args] = command as [string, ...string[]];
  const started = performance.now();
  const child: ChildProcess = spawn(file, args, {
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "ignore"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const { port, listeningMs } = await new Promise<{ port: number; listeningMs: number }>(
    (resolve, reject) => {
      let buffered = "";
      child.stdout?.setEncoding("utf8");
      child.stdout?.on("data", (chunk: string) => {
        buffered += chunk;
        const line = buffered
          .split("\n")
          .find((l) => l.includes('"audit event service listening"'));
        if (line)
          resolve({ port: JSON.parse(line).port, listeningMs: performance.now() - started });
      });
      child.once("exit", (code) => reject(new Error(`exited with ${code} before listening`)));
    },
  );
  let healthyMs = Number.NaN;
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
    if (response?.status === 200) {
      healthyMs = performance.now() - started;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  child.kill("SIGTERM");
  await exited;
  return { listeningMs, healthyMs };
}

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  const fmt = (ms: number) => `${Math.round(ms)}`;
  return `median ${fmt(median)} ms (${fmt(sorted[0] ?? Number.NaN)} to ${fmt(sorted.at(-1) ?? Number.NaN)})`;
}

async function measure(label: string, command: string[], env: Record<string, string>) {
  await startOnce(command, env); // warms the page cache; on a fresh database, migrates it
  const listening: number[] = [];
  const healthy: number[] = [];
  for (let i = 0; i < runs; i++) {
    const result = await startOnce(command, env);
    listening.push(result.listeningMs);
    healthy.push(result.healthyMs);
  }
  console.log(
    `${label}\n  to listening: ${summary(listening)}\n  to /healthz 200: ${summary(healthy)}`,
  );
}

const commands: [string, string[]][] = [
  ["npm start", ["npm", "start", "--silent"]],
  ["node dist/src/main.js", [process.execPath, "dist/src/main.js"]],
];

const dataDir = await mkdtemp(join(tmpdir(), "audit-start-time-"));
try {
  for (const [label, command] of commands) {
    await measure(`${label}, embedded (PGlite)`, command, {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      REDIS_URL: "",
    });
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}

if (process.env.DATABASE_URL) {
  const name = `audit_start_${randomBytes(4).toString("hex")}`;
  const admin = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.DATABASE_URL);
  url.pathname = `/${name}`;
  const env = {
    DATABASE_URL: url.toString(),
    MASTER_KEY: randomBytes(32).toString("base64"),
    TOKEN_SIGNING_KEY: randomBytes(32).toString("hex"),
    REDIS_URL: "",
  };
  try {
    for (const [label, command] of commands) {
      await measure(`${label}, PostgreSQL`, command, env);
    }
  } finally {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
