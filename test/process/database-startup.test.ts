/**
 * Starting on PostgreSQL that cannot be reached (issue 26, item 7), through the real process:
 * one warning line naming the database (never its password); the service listens, `/healthz`
 * answers, `/readyz` is not ready and requests get 503 in their protocol; it retries with
 * backoff and serves once the database comes. Only what no retry can fix ends the process with
 * 78 and one line: an unknown role or database, a role without the permissions the migrations
 * need, at start-up or when the database is reached later.
 * PostgreSQL only (the embedded database is always reachable).
 */

import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { Relay } from "../support/relay.js";
import { runScript } from "../support/run-script.js";
import { spawnService } from "../support/service-process.js";
import { usingPostgres } from "../support/test-server.js";

const TIMEOUT_MS = 180_000;
const UNREACHABLE =
  "database unreachable at start-up: answering 503 and retrying until it can be reached";
const REACHED = "database reached: schema up to date, serving";
const UNAVAILABLE = { error: "Service temporarily unavailable: the database cannot be reached" };

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanups.reverse()) await step();
});

async function storage(): Promise<IsolatedStorage> {
  const created = await createIsolatedStorage();
  cleanups.push(() => created.cleanup());
  return created;
}

/** A relay to the suite's PostgreSQL, not listening yet: its port refuses connections. */
async function closedRelay(): Promise<Relay> {
  const server = new URL(process.env.DATABASE_URL ?? "");
  const relay = new Relay(server.hostname, Number(server.port || 5432));
  await relay.open();
  await relay.cut();
  cleanups.push(() => relay.cut());
  return relay;
}

/** `url` with its host and port replaced by the relay's, its database by `database`. */
function through(relay: Relay, url: string, database?: string): string {
  const moved = new URL(url);
  moved.hostname = "127.0.0.1";
  moved.port = String(relay.port);
  if (database) moved.pathname = `/${database}`;
  return moved.toString();
}

/** Runs the service until it exits; resolves with its code and stderr. */
function runToExit(env: Record<string, string>) {
  return runScript("src/main.ts", {
    REDIS_URL: undefined,
    PORT: "0",
    HOST: "127.0.0.1",
    ...env,
  });
}

function expectOneLine(stderr: string, line: RegExp) {
  expect(stderr).not.toMatch(/\n\s+at /);
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(line);
}

describe.runIf(usingPostgres)("starting while PostgreSQL cannot be reached", () => {
  it(
    "listens and answers 503 with one warning, then serves once the database comes",
    async () => {
      const own = await storage();
      const relay = await closedRelay();
      const url = new URL(own.env.DATABASE_URL ?? "");
      url.password = "not-logged";
      const service = await spawnService(
        { DATABASE_URL: through(relay, url.toString()) },
        { storageEnv: own.env },
      );
      cleanups.push(() => service.cleanup());
      const base = `http://127.0.0.1:${service.port}`;

      const warning = await service.waitForLog(UNREACHABLE, 1_000);
      expect(warning.level).toBe(40);
      expect(warning.database).toBe(`postgres@127.0.0.1:${relay.port}/${own.database}`);
      expect(service.stdout.join("\n")).not.toContain("not-logged");

      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        status: "unavailable",
        checks: { database: "unavailable" },
      });
      const event = { actionKey: "a.b", entityType: "e", entityId: "1", actorId: "u" };
      const key = `pk_test_${randomBytes(30).toString("base64url").slice(0, 40)}`;
      const rest = await fetch(`${base}/api/ingest/event`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(event),
      });
      expect(rest.status).toBe(503);
      expect(await rest.json()).toEqual(UNAVAILABLE);
      const connect = await fetch(`${base}/audit.v1.IngestService/CreateEvent`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ event }),
      });
      expect(connect.status).toBe(503);
      expect(((await connect.json()) as { code: string }).code).toBe("unavailable");

      await relay.open();
      const reached = await service.waitForLog(REACHED, 60_000);
      expect(reached.level).toBe(30);
      // One warning for the outage: the next comes only after a minute of it.
      const warnings = service.stdout.filter((line) => line.includes('"level":40'));
      expect(warnings).toHaveLength(1);

      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const admin = async (method: string, body: unknown) => {
        const response = await fetch(`${base}/audit.v1.AdminService/${method}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${service.adminToken}`,
          },
          body: JSON.stringify(body),
        });
        expect(response.status).toBe(200);
        return (await response.json()) as Record<string, unknown>;
      };
      const { project } = (await admin("CreateProject", { name: "late", plan: "PLAN_FREE" })) as {
        project: { id: string };
      };
      const created = await admin("CreateApiKey", {
        projectId: project.id,
        environment: "ENVIRONMENT_TEST",
      });
      const stored = await fetch(`${base}/api/ingest/event`, {
        method: "POST",
        headers: { authorization: `Bearer ${created.secret}`, "content-type": "application/json" },
        body: JSON.stringify(event),
      });
      expect(stored.status).toBe(201);
    },
    TIMEOUT_MS,
  );

  it(
    "reached later, a database that does not exist ends the process: 78 and one line",
    async () => {
      const own = await storage();
      const relay = await closedRelay();
      const missing = `audit_missing_${randomBytes(4).toString("hex")}`;
      const service = await spawnService(
        { DATABASE_URL: through(relay, own.env.DATABASE_URL ?? "", missing) },
        { storageEnv: own.env },
      );
      cleanups.push(() => service.cleanup());
      await service.waitForLog(UNREACHABLE, 1_000);
      await relay.open();
      const { code } = await service.exited;
      expect(code).toBe(78);
      expectOneLine(
        service.stderr(),
        new RegExp(
          `^Cannot use DATABASE_URL \\(postgres@127\\.0\\.0\\.1:${relay.port}/${missing}\\): the database does not exist \\(3D000: .*${missing}.*\\)$`,
        ),
      );
    },
    TIMEOUT_MS,
  );
});

describe.runIf(usingPostgres)("a database that refuses for good at start-up: 78, one line", () => {
  it(
    "an unknown database",
    async () => {
      const own = await storage();
      const url = new URL(own.env.DATABASE_URL ?? "");
      url.pathname = "/audit_no_such_database";
      const ended = await runToExit({ ...own.env, DATABASE_URL: url.toString() });
      expect(ended.code).toBe(78);
      expectOneLine(
        ended.stderr,
        /^Cannot use DATABASE_URL \(postgres@[^)]+\/audit_no_such_database\): the database does not exist \(3D000: /,
      );
    },
    TIMEOUT_MS,
  );

  it(
    "an unknown role",
    async () => {
      const own = await storage();
      const url = new URL(own.env.DATABASE_URL ?? "");
      url.username = "audit_no_such_role";
      const ended = await runToExit({ ...own.env, DATABASE_URL: url.toString() });
      expect(ended.code).toBe(78);
      expectOneLine(
        ended.stderr,
        /^Cannot use DATABASE_URL \(audit_no_such_role@[^)]+\): the role is not allowed to connect \(28000: /,
      );
    },
    TIMEOUT_MS,
  );

  it(
    "a role that may not create the schema",
    async () => {
      const own = await storage();
      const role = `audit_noperm_${randomBytes(4).toString("hex")}`;
      const admin = postgres(process.env.DATABASE_URL ?? "", { max: 1, onnotice: () => {} });
      await admin.unsafe(`CREATE ROLE ${role} LOGIN`);
      // PostgreSQL 15 and later no longer let every role create in public; older ones did.
      const owned = postgres(own.env.DATABASE_URL ?? "", { max: 1, onnotice: () => {} });
      await owned.unsafe(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      await owned.end();
      cleanups.push(async () => {
        await admin.unsafe(`DROP ROLE IF EXISTS ${role}`);
        await admin.end();
      });
      const url = new URL(own.env.DATABASE_URL ?? "");
      url.username = role;
      const ended = await runToExit({ ...own.env, DATABASE_URL: url.toString() });
      expect(ended.code).toBe(78);
      expectOneLine(
        ended.stderr,
        new RegExp(
          `^Cannot use DATABASE_URL \\(${role}@[^)]+\\): the role lacks a permission the migrations need \\(42501: `,
        ),
      );
    },
    TIMEOUT_MS,
  );
});
