/**
 * What the fault tests share: storage that outlives a process (a fresh PostgreSQL
 * database when DATABASE_URL is set, otherwise a PGlite DATA_DIR), the real service
 * process started and restarted on it, a load generator that records every request and
 * its outcome, a TCP relay that "stops" a dependency without touching the machine's
 * shared servers, and direct reads of the stored rows.
 *
 * Every request the load generator sends carries its own Idempotency-Key and a unique
 * entityId, so a request can be retried exactly and a duplicate row is visible even
 * without decrypting: the entity's blind index is deterministic per project.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { createIsolatedStorage } from "../support/isolated-storage.js";
import { spawnService } from "../support/service-process.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Prints one line of figures for docs/reliability.md (the suite's output keeps it). */
export function recordFigures(fault: string, figures: Record<string, unknown>): void {
  console.log(`[figures] ${fault}: ${JSON.stringify(figures)}`);
}

// ---------------------------------------------------------------------------------------
// Storage

/** Storage that survives the service process, and direct SQL on it. */
export interface Storage {
  kind: "postgres" | "pglite";
  /** Environment the service needs to run on this storage (and stay the same deployment). */
  env: Record<string, string>;
  /** The database's name (PostgreSQL only). */
  database?: string;
  /**
   * Runs SQL on the stored data directly. PGlite is one process: only while no service
   * process has the data directory open.
   */
  query<Row>(text: string, params?: unknown[]): Promise<Row[]>;
  /** Drops the database or removes the data directory, and the Redis keys. */
  cleanup(): Promise<void>;
}

/** Fresh storage of the suite's kind, with its own Redis prefix when REDIS_URL is set. */
export async function createStorage(): Promise<Storage> {
  const isolated = await createIsolatedStorage();
  const { env, database } = isolated;
  if (isolated.kind === "postgres" && env.DATABASE_URL) {
    // One connection: pg_backend_pid() then names every connection of the test's own.
    const sql = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} });
    return {
      kind: "postgres",
      env,
      ...(database ? { database } : {}),
      async query<Row>(text: string, params: unknown[] = []) {
        const rows = await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[]);
        return rows as unknown as Row[];
      },
      async cleanup() {
        await sql.end({ timeout: 5 });
        await isolated.cleanup();
      },
    };
  }
  const dir = env.DATA_DIR ?? "";
  return {
    kind: "pglite",
    env,
    async query<Row>(text: string, params: unknown[] = []) {
      const pg = await PGlite.create(join(dir, "pglite"));
      try {
        return (await pg.query<Row>(text, params)).rows;
      } finally {
        await pg.close();
      }
    },
    cleanup: () => isolated.cleanup(),
  };
}

// ---------------------------------------------------------------------------------------
// The service process

/** A running service process (`node --import tsx src/main.ts`). */
export interface Service {
  child: ChildProcess;
  url: string;
  port: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  /** stderr without the first-start banner (see ServiceProcess.unexpectedStderr). */
  unexpectedStderr(): string;
  /** JSON log lines with `msg` equal to `msg`. */
  logs(msg: string): Record<string, unknown>[];
  /** SIGKILLs the process if it still runs. */
  kill(): Promise<void>;
}

/** Starts the service on `storage` (kept across restarts); resolves once it listens. */
export async function startService(
  storage: Storage,
  adminToken: string,
  env: Record<string, string> = {},
): Promise<Service> {
  const spawned = await spawnService(env, { storageEnv: storage.env, adminToken });
  return {
    child: spawned.child,
    url: `http://127.0.0.1:${spawned.port}`,
    port: spawned.port,
    exited: spawned.exited,
    stderr: spawned.stderr,
    unexpectedStderr: spawned.unexpectedStderr,
    logs: (msg) =>
      spawned.stdout
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.msg === msg),
    // The storage is not the process's: cleanup only kills it.
    kill: spawned.cleanup,
  };
}

/** Throws, with the process's stderr, when `service` is no longer running. */
export function assertRunning(service: Service, during: string): void {
  const { exitCode, signalCode } = service.child;
  if (exitCode !== null || signalCode !== null) {
    throw new Error(
      `the service process exited (code ${exitCode}, signal ${signalCode}) ${during}; stderr: ${service.stderr()}`,
    );
  }
}

/** Resolves with the exit, or "timeout" after `ms`. */
export function exitWithin(
  service: Service,
  ms: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null } | "timeout"> {
  return Promise.race([service.exited, sleep(ms).then(() => "timeout" as const)]);
}

/** A new pro project with one test key, through AdminService. */
export async function provision(
  url: string,
  adminToken: string,
): Promise<{ projectId: string; secret: string }> {
  const admin = createAdminClient(url, adminToken);
  const { project } = await admin.createProject({ name: "reliability", plan: Plan.PRO });
  if (!project) throw new Error("CreateProject returned no project");
  const created = await admin.createApiKey({
    projectId: project.id,
    environment: Environment.TEST,
  });
  return { projectId: project.id, secret: created.secret };
}

// ---------------------------------------------------------------------------------------
// Requests

/** One Create Event request of the load: retried with the same key and body. */
export interface Sent {
  index: number;
  key: string;
  body: string;
  /** HTTP status, or 0 when no response came (connection refused, reset, timeout). */
  status: number;
  eventId: string | undefined;
  responseBody: string;
  /** The transport error when status is 0. */
  error: string | undefined;
  startedAt: number;
  ms: number;
}

/** POSTs one event with `key`; never throws: a failed exchange is status 0. */
export async function send(
  url: string,
  secret: string,
  request: { key: string; body: string },
  timeoutMs = 30_000,
): Promise<Omit<Sent, "index" | "key" | "body">> {
  const startedAt = Date.now();
  try {
    const response = await fetch(`${url}/api/ingest/event`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${secret}`,
        "idempotency-key": request.key,
      },
      body: request.body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let eventId: string | undefined;
    try {
      eventId = (JSON.parse(text) as { eventId?: string }).eventId;
    } catch {
      eventId = undefined;
    }
    return {
      status: response.status,
      eventId,
      responseBody: text,
      error: undefined,
      startedAt,
      ms: Date.now() - startedAt,
    };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return {
      status: 0,
      eventId: undefined,
      responseBody: "",
      error: cause?.code ?? cause?.message ?? String(error),
      startedAt,
      ms: Date.now() - startedAt,
    };
  }
}

/** Sustained ingestion by `concurrency` workers, each sending one request after another. */
export interface Load {
  /** Every request started, in start order; `status` is -1 while in flight. */
  sent: Sent[];
  /** Requests acknowledged with 201. */
  acked(): Sent[];
  /** How many requests are in flight now. */
  inFlight(): number;
  /** Resolves once `count` requests got 201 (or rejects after `timeoutMs`). */
  untilAcked(count: number, timeoutMs: number): Promise<void>;
  /** Workers start no new request; resolves when every request has settled. */
  stop(): Promise<void>;
}

/** Starts the load on `url` with `secret`; a worker pauses `pauseOnFailureMs` after a failure. */
export function startLoad(
  url: string,
  secret: string,
  options: { concurrency: number; pauseOnFailureMs?: number; runId?: string },
): Load {
  const runId = options.runId ?? randomBytes(4).toString("hex");
  const sent: Sent[] = [];
  let stopping = false;
  let pending = 0;
  let ackedCount = 0;
  const worker = async () => {
    while (!stopping) {
      const index = sent.length;
      const request: Sent = {
        index,
        key: `${runId}-${index}`,
        body: JSON.stringify(requestBody(runId, index)),
        status: -1,
        eventId: undefined,
        responseBody: "",
        error: undefined,
        startedAt: Date.now(),
        ms: 0,
      };
      sent.push(request);
      pending++;
      Object.assign(request, await send(url, secret, request));
      pending--;
      if (request.status === 201) ackedCount++;
      else if (options.pauseOnFailureMs) await sleep(options.pauseOnFailureMs);
    }
  };
  const workers = Array.from({ length: options.concurrency }, worker);
  return {
    sent,
    acked: () => sent.filter((request) => request.status === 201),
    inFlight: () => pending,
    async untilAcked(count, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (ackedCount < count) {
        if (Date.now() > deadline) {
          throw new Error(`only ${ackedCount} of ${count} acknowledgements in ${timeoutMs} ms`);
        }
        await sleep(20);
      }
    },
    async stop() {
      stopping = true;
      await Promise.all(workers);
    },
  };
}

/** The body of request `index` of run `runId`: its entityId makes it unique. */
export function requestBody(runId: string, index: number): Record<string, unknown> {
  return {
    actionKey: "document.update",
    entityType: "document",
    entityId: `doc-${runId}-${index}`,
    actorId: `user-${index % 97}`,
    context: { run: runId, index },
  };
}

/** The final answer to a retried request, and how many sends it took. */
export type Retried = Omit<Sent, "index" | "key" | "body"> & { attempts: number };

/**
 * Sends each request again with its own key and body, `concurrency` at a time; a 503 or
 * a failed exchange is sent again (up to `attempts` sends, 200 ms apart), as a client would.
 */
export async function retryAll(
  url: string,
  secret: string,
  requests: readonly Sent[],
  options: { concurrency?: number; attempts?: number } = {},
): Promise<Map<number, Retried>> {
  const attempts = options.attempts ?? 5;
  const results = new Map<number, Retried>();
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const request = requests[next++];
      if (!request) continue;
      let attempt = 1;
      let answer = await send(url, secret, request);
      while ((answer.status === 503 || answer.status === 0) && attempt < attempts) {
        await sleep(200);
        attempt++;
        answer = await send(url, secret, request);
      }
      results.set(request.index, { ...answer, attempts: attempt });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 40 }, worker));
  return results;
}

/** Every event of the key's project and environment through GET /api/events. */
export async function listAllEvents(
  url: string,
  secret: string,
): Promise<{ eventId: string; entityId: string; logIndex: number }[]> {
  const events: { eventId: string; entityId: string; logIndex: number }[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: "200", ...(cursor ? { cursor } : {}) });
    const response = await fetch(`${url}/api/events?${query}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    if (response.status !== 200) {
      throw new Error(`List Events answered ${response.status}: ${await response.text()}`);
    }
    const page = (await response.json()) as {
      events: { eventId: string; entityId: string; logIndex: number }[];
      nextCursor: string | null;
    };
    events.push(...page.events);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return events;
}

/**
 * The journal rows of a project (events appended, integrated or not): their ids and how
 * many. The journal holds ciphertext only: what each event is shows in the listing.
 */
export async function storedRows(
  storage: Storage,
  projectId: string,
): Promise<{ ids: Set<string>; rows: number }> {
  const rows = await storage.query<{ id: string }>(
    "select id::text as id from events where project_id = $1",
    [projectId],
  );
  return { ids: new Set(rows.map((row) => row.id)), rows: rows.length };
}

export { Relay } from "../support/relay.js";
