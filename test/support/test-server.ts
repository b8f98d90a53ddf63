/**
 * Starts the real service on 127.0.0.1, port 0, for black-box tests. Storage follows the
 * environment the suite runs in: with DATABASE_URL set, a fresh PostgreSQL database
 * (created here, dropped on close); otherwise the embedded PGlite in a temporary
 * DATA_DIR. With REDIS_URL set, a unique key prefix (deleted on close).
 */
import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { type AdminService, Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { type App, createApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import type { ListeningServer } from "../../src/transport/server.js";
import { createIsolatedStorage } from "./isolated-storage.js";

/** A running service and what a test needs to talk to it. */
export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  app: App;
  adminToken: string;
  /** AdminService over Connect with the admin token. */
  admin: Client<typeof AdminService>;
  /** Storage the server runs on. */
  driver: "postgres" | "pglite";
  /** The configuration variables the server was started with. */
  env: TestEnv;
  /** A new project with one active key in `environment`. */
  provision(options?: { plan?: Plan; environment?: Environment }): Promise<ProvisionedKey>;
  /** Stops the server (graceful) and removes its database, data dir and Redis keys. */
  close(): Promise<void>;
}

/** A project and the secret of one of its keys. */
export interface ProvisionedKey {
  projectId: string;
  keyId: string;
  secret: string;
}

/** Whether the suite runs against PostgreSQL (DATABASE_URL in the environment). */
export const usingPostgres = Boolean(process.env.DATABASE_URL);

/** Environment variables a test may override (same names as the service's). */
export type TestEnv = Record<string, string>;

/** Options of startTestServer. */
export interface TestServerOptions {
  /**
   * Another instance of the same deployment: share its database, Redis prefix and
   * secrets (PostgreSQL only: PGlite is one process). The peer owns the clean-up.
   */
  peerOf?: TestServer;
}

/** Starts a server; `env` overrides configuration (e.g. RATE_LIMIT_MAX). */
export async function startTestServer(
  env: TestEnv = {},
  options: TestServerOptions = {},
): Promise<TestServer> {
  if (options.peerOf) {
    if (options.peerOf.driver !== "postgres") {
      throw new Error("several instances need PostgreSQL: PGlite serves one process");
    }
    return launch({ ...options.peerOf.env, ...env }, []);
  }
  const cleanups: (() => Promise<void>)[] = [];
  const adminToken = randomBytes(24).toString("hex");
  const base: TestEnv = {
    HOST: "127.0.0.1",
    PORT: "0",
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    API_KEY_CACHE_SECONDS: "0",
    // No shedding by the event loop's delay (src/transport/queue-delay.ts): the suite runs
    // many servers in its own processes on a loaded machine, where a loop behind for a
    // second is the test's doing (synchronous PGlite, generators), and a 503 would fail an
    // unrelated test. Its tests turn it on.
    LOOP_DELAY_TARGET_MS: "0",
    // No pushback by the integrator's lag (src/log/ingest-pushback.ts) either: on a loaded
    // machine PGlite's integrator can fall seconds behind a test's burst, and the test would
    // get a 503 it does not test. test/log/ingest-pushback.test.ts turns it on.
    INGEST_MAX_LAG_SECONDS: "0",
  };

  const storage = await createIsolatedStorage();
  Object.assign(base, storage.env);
  cleanups.push(() => storage.cleanup());

  return launch({ ...base, ...env }, cleanups);
}

async function launch(env: TestEnv, cleanups: (() => Promise<void>)[]): Promise<TestServer> {
  const adminToken = env.ADMIN_TOKEN ?? "";
  const config = loadConfig(env);
  const app = await createApp(config, createLogger(config.LOG_LEVEL));
  let server: ListeningServer;
  try {
    server = await app.listen();
  } catch (error) {
    await app.close();
    throw error;
  }
  const url = `http://127.0.0.1:${server.port}`;
  const admin = createAdminClient(url, config.ADMIN_TOKEN ?? adminToken);

  return {
    url,
    port: server.port,
    app,
    adminToken: config.ADMIN_TOKEN ?? adminToken,
    admin,
    driver: config.DATABASE_URL ? "postgres" : "pglite",
    env,
    async provision(options = {}) {
      const { project } = await admin.createProject({
        name: `test ${randomBytes(3).toString("hex")}`,
        plan: options.plan ?? Plan.PRO,
      });
      if (!project) throw new Error("CreateProject returned no project");
      const created = await admin.createApiKey({
        projectId: project.id,
        environment: options.environment ?? Environment.TEST,
      });
      if (!created.apiKey) throw new Error("CreateApiKey returned no key");
      return { projectId: project.id, keyId: created.apiKey.id, secret: created.secret };
    },
    async close() {
      await server.close(5_000);
      await app.close();
      for (const cleanup of cleanups.reverse()) await cleanup();
    },
  };
}

/** A minimal valid event body. */
export function validEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    actionKey: "user.login",
    entityType: "user",
    entityId: "user_123",
    actorId: "user_123",
    ...overrides,
  };
}

/** POSTs JSON to the ingest route with the given headers. */
export async function postEvent(
  server: { url: string },
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/api/ingest/event`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}
