/**
 * WORKERS > 1: a supervisor forks workers that share the port; limits stay exact
 * because they live in PostgreSQL and Redis; SIGTERM stops every worker and exits 0.
 * Runs in the PostgreSQL + Redis pass; the embedded default refuses WORKERS > 1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";

const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);

describe("WORKERS configuration", () => {
  it("refuses WORKERS above 1 without PostgreSQL and Redis", () => {
    expect(() => loadConfig({ WORKERS: "2" })).toThrow(
      /WORKERS above 1 needs DATABASE_URL and REDIS_URL/,
    );
    expect(() => loadConfig({ WORKERS: "2", DATABASE_URL: "postgres://x@127.0.0.1/db" })).toThrow(
      /REDIS_URL/,
    );
    expect(loadConfig({}).WORKERS).toBe(1);
  });
});

describe.runIf(shared)("two workers on one port", () => {
  let service: ServiceProcess;
  beforeAll(async () => {
    service = await spawnService({ WORKERS: "2", RATE_LIMIT_MAX: "30" });
  });
  afterAll(async () => {
    await service?.cleanup();
  });

  it("serve requests, share one rate limit and stop together on SIGTERM with exit 0", async () => {
    const base = `http://127.0.0.1:${service.port}`;
    const admin = (path: string, body: unknown) =>
      fetch(`${base}/audit.v1.AdminService/${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${service.adminToken}`,
        },
        body: JSON.stringify(body),
      }).then((response) => response.json() as Promise<Record<string, Record<string, string>>>);
    const { project } = await admin("CreateProject", { name: "workers", plan: "PLAN_PRO" });
    const created = await admin("CreateApiKey", {
      projectId: project?.id,
      environment: "ENVIRONMENT_TEST",
    });
    const secret = created.secret as unknown as string;

    // Separate connections spread over both workers.
    const statuses = await Promise.all(
      Array.from({ length: 60 }, () =>
        fetch(`${base}/api/ingest/event`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${secret}`,
            connection: "close",
          },
          body: JSON.stringify({ actionKey: "a.b", entityType: "e", entityId: "1", actorId: "u" }),
        }).then((response) => response.status),
      ),
    );
    expect(statuses.filter((status) => status === 201)).toHaveLength(30);
    expect(statuses.filter((status) => status === 429)).toHaveLength(30);

    const listening = service.stdout.filter((line) =>
      line.includes("audit event service listening"),
    );
    expect(listening.length).toBe(2);

    service.child.kill("SIGTERM");
    const { code } = await service.exited;
    expect(code).toBe(0);
  });
});
