/**
 * Runs the real service as a child process (`node --import tsx src/main.ts`, or another
 * start command such as `npm start`) on a port the OS picks (PORT=0; the port is read from the "listening" log line). Storage
 * follows the suite's environment like test-server.ts: a fresh PostgreSQL database when
 * DATABASE_URL is set, otherwise PGlite in a temporary DATA_DIR.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { createIsolatedStorage } from "./isolated-storage.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const LISTENING = "audit event service listening";
/** The banner src/main.ts prints on the embedded default's first start (printFirstStart). */
const FIRST_START_BANNER = /\nFirst start: created a project[\s\S]*?-d '\{\}'\n\n/;

/** A running service process. */
export interface ServiceProcess {
  child: ChildProcess;
  port: number;
  adminToken: string;
  /** Every stdout line so far (the JSON log lines; with `npm start`, npm's header first). */
  stdout: string[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /**
   * stderr without the first-start banner (the embedded default's first start prints the
   * project and test key there, for the person at the terminal): what a clean run leaves empty.
   */
  unexpectedStderr(): string;
  /** Resolves with the exit code and signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first stdout JSON line whose `msg` is `msg`, within `timeoutMs`. */
  waitForLog(msg: string, timeoutMs: number): Promise<Record<string, unknown>>;
  /** Kills the process if it still runs; removes its database, data dir and Redis keys. */
  cleanup(): Promise<void>;
}

/** Options of spawnService. */
export interface SpawnOptions {
  /**
   * Run on this storage (its configuration variables) and leave it in place, so that a
   * test can restart the service on the same data; by default the process gets fresh
   * storage of its own, removed by `cleanup`.
   */
  storageEnv?: Record<string, string>;
  adminToken?: string;
  /**
   * The command line to run, from the repository's directory; by default
   * `node --import tsx src/main.ts` (no build needed).
   */
  command?: readonly [string, ...string[]];
}

/** Starts the service; resolves once it logs that it listens. */
export async function spawnService(
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): Promise<ServiceProcess> {
  const cleanups: (() => Promise<void>)[] = [];
  const adminToken = options.adminToken ?? randomBytes(24).toString("hex");
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    // The suite's DATABASE_URL and REDIS_URL name the servers, not this storage.
    DATABASE_URL: undefined,
    REDIS_URL: undefined,
    PORT: "0",
    HOST: "127.0.0.1",
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: "info",
    API_KEY_CACHE_SECONDS: "0",
    // As in test-server.ts: no shedding by the loop's delay, no pushback by the
    // integrator's lag on a loaded test machine.
    LOOP_DELAY_TARGET_MS: "0",
    INGEST_MAX_LAG_SECONDS: "0",
  };
  if (options.storageEnv) {
    Object.assign(childEnv, options.storageEnv, env);
  } else {
    const storage = await createIsolatedStorage();
    Object.assign(childEnv, storage.env, env);
    cleanups.push(() => storage.cleanup());
  }

  const [file, ...args] = options.command ?? [process.execPath, "--import", "tsx", "src/main.ts"];
  const child = spawn(file, args, {
    cwd: ROOT,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
    // A process group of its own, so that clean-up kills what a wrapper (npm, its shell)
    // started too: killing only npm would leave the service running on its port.
    detached: true,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const stdout: string[] = [];
  let partial = "";
  let stderr = "";
  let closed = false;
  child.once("close", () => {
    closed = true;
  });
  const lineWaiters = new Set<() => void>();
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    stdout.push(...parts);
    for (const wake of lineWaiters) wake();
  });
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderr += chunk;
  });

  const findLog = (msg: string) => {
    for (const line of stdout) {
      if (!line.startsWith("{")) continue;
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.msg === msg) return parsed;
    }
    return undefined;
  };
  const waitForLog = (msg: string, timeoutMs: number) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const found = findLog(msg);
        if (!found) return;
        finish();
        resolve(found);
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`no "${msg}" log line within ${timeoutMs} ms; stderr: ${stderr}`));
      }, timeoutMs);
      // "close" comes after the last stdout chunk: a line logged before exiting is seen.
      const onClose = () => {
        check();
        finish();
        reject(new Error(`the service exited before logging "${msg}"; stderr: ${stderr}`));
      };
      const finish = () => {
        clearTimeout(timer);
        lineWaiters.delete(check);
        child.off("close", onClose);
      };
      lineWaiters.add(check);
      if (closed) onClose();
      else {
        child.once("close", onClose);
        check();
      }
    });

  const cleanup = async () => {
    const running = child.exitCode === null && child.signalCode === null;
    // The whole group, even when the command itself has exited: what it started may not have.
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // ESRCH: nothing of the group is left.
    }
    if (running) await exited;
    for (const step of cleanups.reverse()) await step();
  };

  let listening: Record<string, unknown>;
  try {
    listening = await waitForLog(LISTENING, 90_000);
  } catch (error) {
    await cleanup();
    throw error;
  }
  return {
    child,
    port: Number(listening.port),
    adminToken,
    stdout,
    stderr: () => stderr,
    unexpectedStderr: () => stderr.replace(FIRST_START_BANNER, ""),
    exited,
    waitForLog,
    cleanup,
  };
}
