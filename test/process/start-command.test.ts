/**
 * The commands a supervisor runs (README, docs/deploy.md): `npm start` and the production
 * command `node dist/src/main.js`. SIGTERM or SIGINT sent to the process the supervisor
 * started (npm itself, for `npm start`) stops the service gracefully: a request in flight is
 * answered, the service and the command exit 0, no process is left behind and the port is
 * free. stdout carries only JSON lines (npm adds its own header before the service starts).
 * A second `npm start` with nothing changed does not build. Start times are measured by
 * `bench/start-time.ts`, not here.
 */
import { spawnSync } from "node:child_process";
import { cp, mkdtemp, rm, symlink } from "node:fs/promises";
import * as http from "node:http";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// A build under a loaded machine takes tens of seconds; the first `npm start` may build.
const START_TIMEOUT_MS = 180_000;

const NPM_START = ["npm", "start"] as const;
const PRODUCTION = [process.execPath, "dist/src/main.js"] as const;

const running: ServiceProcess[] = [];
// Service processes by the pid they log: killed at the end if a failing case left one behind.
const servicePids: number[] = [];
let storage: IsolatedStorage;
beforeAll(async () => {
  // One storage for every start: the embedded database is initialised once, not per case.
  storage = await createIsolatedStorage();
});
afterAll(async () => {
  for (const service of running) await service.cleanup();
  for (const pid of servicePids) if (processExists(pid)) process.kill(pid, "SIGKILL");
  await storage?.cleanup();
});

/** A project with a test key, made through the admin API of `service`. */
async function provisionKey(service: ServiceProcess): Promise<string> {
  const admin = async (method: string, body: unknown) => {
    const response = await fetch(
      `http://127.0.0.1:${service.port}/audit.v1.AdminService/${method}`,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${service.adminToken}`,
        },
        body: JSON.stringify(body),
      },
    );
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  };
  const created = await admin("CreateProject", { name: "start command", plan: "PLAN_PRO" });
  const project = created.project as { id: string };
  const key = await admin("CreateApiKey", {
    projectId: project.id,
    environment: "ENVIRONMENT_TEST",
  });
  return key.secret as string;
}

/**
 * A Create Event whose body is held back: resolves `accepted` once the service has read the
 * headers and asked for the body (100 Continue), so the request is in flight; `finish` sends
 * the body and resolves with the status.
 */
function heldCreateEvent(port: number, secret: string) {
  const body = JSON.stringify({ actionKey: "a.b", entityType: "e", entityId: "1", actorId: "u" });
  const request = http.request({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: "/api/ingest/event",
    headers: {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      expect: "100-continue",
    },
  });
  const status = new Promise<number>((resolve, reject) => {
    request.once("response", (response) => {
      response.resume();
      response.once("end", () => resolve(response.statusCode ?? 0));
    });
    request.once("error", reject);
  });
  const accepted = new Promise<void>((resolve) => request.once("continue", () => resolve()));
  request.flushHeaders();
  return {
    accepted,
    finish: () => {
      request.end(body);
      return status;
    },
  };
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

async function portIsFree(port: number): Promise<boolean> {
  const probe = net.createServer();
  return new Promise((resolve) => {
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** stdout lines that are not JSON, npm's header (`> name@version start`, `> command`) aside. */
function nonJsonLines(stdout: string[], npmHeader: boolean): string[] {
  const firstJson = stdout.findIndex((line) => line.startsWith("{"));
  return stdout.filter((line, index) => {
    if (npmHeader && index < firstJson && (line === "" || line.startsWith("> "))) return false;
    try {
      JSON.parse(line);
      return false;
    } catch {
      return true;
    }
  });
}

describe("the start commands and the signals a supervisor sends", () => {
  const cases = [
    { name: "npm start", command: NPM_START, signal: "SIGTERM" },
    { name: "npm start", command: NPM_START, signal: "SIGINT" },
    { name: "node dist/src/main.js", command: PRODUCTION, signal: "SIGTERM" },
    { name: "node dist/src/main.js", command: PRODUCTION, signal: "SIGINT" },
  ] as const;

  // In this order: the first `npm start` builds dist/ if it is stale, for the production command.
  for (const { name, command, signal } of cases) {
    it(
      `${name}: ${signal} to the command's process answers the request in flight, exits 0, leaves nothing behind`,
      async () => {
        const service = await spawnService({}, { command, storageEnv: storage.env });
        running.push(service);
        const listening = await service.waitForLog("audit event service listening", 1_000);
        const pid = Number(listening.pid);
        expect(pid).toBeGreaterThan(0);
        servicePids.push(pid);
        if (command === NPM_START) expect(pid).not.toBe(service.child.pid);
        else expect(pid).toBe(service.child.pid);

        const secret = await provisionKey(service);
        const held = heldCreateEvent(service.port, secret);
        await held.accepted;
        service.child.kill(signal);
        await service.waitForLog("shutting down: finishing in-flight requests", 30_000);
        expect(await held.finish()).toBe(201);

        const { code } = await service.exited;
        expect(code).toBe(0);
        await service.waitForLog("stopped", 1_000);
        expect(processExists(pid)).toBe(false);
        expect(await portIsFree(service.port)).toBe(true);
        expect(nonJsonLines(service.stdout, command === NPM_START)).toEqual([]);
      },
      START_TIMEOUT_MS,
    );
  }

  it(
    "node dist/src/main.js: SIGTERM after the reader of its stdout and stderr went away still stops it, exit 0",
    async () => {
      // What a supervisor killed with SIGKILL, or a crashed log shipper, leaves behind. Storage
      // of its own: on the embedded default, the first-start banner then goes to a closed stderr.
      const service = await spawnService({}, { command: PRODUCTION });
      running.push(service);
      const listening = await service.waitForLog("audit event service listening", 1_000);
      servicePids.push(Number(listening.pid));
      service.child.stdout?.destroy();
      service.child.stderr?.destroy();
      service.child.kill("SIGTERM");
      const { code } = await service.exited;
      expect(code).toBe(0);
      expect(await portIsFree(service.port)).toBe(true);
    },
    START_TIMEOUT_MS,
  );

  it(
    "a second npm start with nothing changed does not build; SIGTERM as it logs listening stops it cleanly",
    async () => {
      // Whatever the state of dist/, this brings it up to date (and leaves it so).
      const built = spawnSync(process.execPath, ["scripts/build.js", "--if-stale"], {
        cwd: ROOT,
        stdio: "ignore",
      });
      expect(built.status).toBe(0);
      const service = await spawnService({}, { command: NPM_START, storageEnv: storage.env });
      running.push(service);
      expect(service.stderr()).not.toMatch(/building|built dist/);
      // At once: before the service has finished starting (the start-up's last steps follow
      // the listening line), which the default action of SIGTERM would have cut short.
      service.child.kill("SIGTERM");
      expect((await service.exited).code).toBe(0);
      await service.waitForLog("stopped", 1_000);
    },
    START_TIMEOUT_MS,
  );

  it(
    "the container image's layout (dist/, package.json, node_modules, viewer/dist; no gen/) serves /openapi.json",
    async () => {
      const built = spawnSync(process.execPath, ["scripts/build.js", "--if-stale"], {
        cwd: ROOT,
        stdio: "ignore",
      });
      expect(built.status).toBe(0);
      // deploy/Dockerfile's runtime stage: these and nothing else of the checkout.
      const image = await mkdtemp(join(tmpdir(), "audit-image-"));
      try {
        await cp(join(ROOT, "dist"), join(image, "dist"), { recursive: true });
        await cp(join(ROOT, "package.json"), join(image, "package.json"));
        await cp(join(ROOT, "viewer/dist"), join(image, "viewer/dist"), { recursive: true });
        await symlink(join(ROOT, "node_modules"), join(image, "node_modules"), "dir");
        const service = await spawnService(
          {},
          { command: [process.execPath, join(image, "dist/src/main.js")] },
        );
        running.push(service);
        const response = await fetch(`http://127.0.0.1:${service.port}/openapi.json`);
        expect(response.status).toBe(200);
        const document = (await response.json()) as { openapi: string; paths: object };
        expect(document.openapi).toMatch(/^3\.1\./);
        expect(Object.keys(document.paths)).toContain("/api/ingest/event");
        service.child.kill("SIGTERM");
        expect((await service.exited).code).toBe(0);
      } finally {
        await rm(image, { recursive: true, force: true });
      }
    },
    START_TIMEOUT_MS,
  );
});
