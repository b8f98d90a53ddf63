/**
 * SetRetention and the retention ListProjects shows, through the rules, Connect, gRPC and
 * the audit-admin CLI: 0 (for ever) by default, one environment or both, and the refusals
 * (days out of range, an unknown project, a bad environment) with their messages.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService, Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { ServiceError } from "../../src/errors.js";
import { createRetentionService } from "../../src/lifecycle/retention-service.js";
import { createDirectServices, type DirectServices } from "../support/direct-services.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

const run = promisify(execFile);
const UNKNOWN_ID = "00000000-0000-7000-8000-000000000000";
const RANGE_MESSAGE = "retentionDays must be 0 (keep events for ever) or 1 to 36500 days, not";

describe("retention rules, called directly", () => {
  let services: DirectServices;
  beforeAll(async () => {
    services = await createDirectServices();
  });
  afterAll(async () => {
    await services?.close();
  });
  const retention = () => createRetentionService({ db: services.db, projects: services.projects });

  it("a new project keeps its events for ever in both environments", async () => {
    const project = await services.admin.createProject("Default retention", "free");
    expect((await retention().retentionOf([project.id])).get(project.id)).toEqual({
      test: 0,
      live: 0,
    });
  });

  it("sets one environment, then both, then back to for ever", async () => {
    const { projectId } = await services.provision();
    const live = await retention().setRetention(projectId, "live", 90);
    expect(live.retention).toEqual({ test: 0, live: 90 });
    const both = await retention().setRetention(projectId, undefined, 36_500);
    expect(both.retention).toEqual({ test: 36_500, live: 36_500 });
    const test = await retention().setRetention(projectId, "test", 0);
    expect(test.retention).toEqual({ test: 0, live: 36_500 });
    expect((await retention().retentionOf([projectId])).get(projectId)).toEqual({
      test: 0,
      live: 36_500,
    });
  });

  it("refuses days out of range, and an unknown project, changing nothing", async () => {
    const { projectId } = await services.provision();
    await retention().setRetention(projectId, undefined, 30);
    for (const days of [-1, 36_501, 2 ** 31 - 1, 1.5]) {
      const error = await retention()
        .setRetention(projectId, "live", days)
        .then(
          () => undefined,
          (caught: unknown) => caught,
        );
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).kind).toBe("bad_request");
      expect((error as ServiceError).message).toBe(`${RANGE_MESSAGE} ${days}`);
    }
    const unknown = await retention()
      .setRetention(UNKNOWN_ID, undefined, 30)
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(unknown).toBeInstanceOf(ServiceError);
    expect((unknown as ServiceError).kind).toBe("not_found");
    expect((unknown as ServiceError).message).toBe(`Project ${UNKNOWN_ID} not found`);
    expect((await retention().retentionOf([projectId])).get(projectId)).toEqual({
      test: 30,
      live: 30,
    });
  });
});

describe("SetRetention over Connect and gRPC, and the CLI", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  const auth = () => ({ headers: { authorization: `Bearer ${server.adminToken}` } });

  it("Connect: sets and lists retention per environment", async () => {
    const { project } = await server.admin.createProject({ name: "Kept", plan: Plan.PRO });
    const projectId = project?.id ?? "";
    expect(project?.retention).toEqual([
      expect.objectContaining({ environment: Environment.TEST, retentionDays: 0 }),
      expect.objectContaining({ environment: Environment.LIVE, retentionDays: 0 }),
    ]);
    const set = await server.admin.setRetention({
      projectId,
      environment: Environment.LIVE,
      retentionDays: 365,
    });
    expect(set.project?.retention.map((each) => each.retentionDays)).toEqual([0, 365]);
    const both = await server.admin.setRetention({ projectId, retentionDays: 7 });
    expect(both.project?.retention.map((each) => each.retentionDays)).toEqual([7, 7]);
    // Every call that returns the project shows its retention.
    const planned = await server.admin.setProjectPlan({ projectId, plan: Plan.START });
    expect(planned.project?.retention.map((each) => each.retentionDays)).toEqual([7, 7]);
    const { projects } = await server.admin.listProjects({});
    const listed = projects.find((each) => each.id === projectId);
    expect(listed?.retention.map((each) => [each.environment, each.retentionDays])).toEqual([
      [Environment.TEST, 7],
      [Environment.LIVE, 7],
    ]);
  });

  it("gRPC: the same call, and its refusals as InvalidArgument and NotFound", async () => {
    const grpc = rpcClient(AdminService, server.url, "grpc");
    const { projectId } = await server.provision();
    const { project } = await grpc.setRetention(
      { projectId, environment: Environment.TEST, retentionDays: 1 },
      auth(),
    );
    expect(project?.retention.map((each) => each.retentionDays)).toEqual([1, 0]);

    const negative = await rpcFailure(grpc.setRetention({ projectId, retentionDays: -3 }, auth()));
    expect(negative.code).toBe(Code.InvalidArgument);
    expect(negative.rawMessage).toBe(`${RANGE_MESSAGE} -3`);
    const huge = await rpcFailure(
      grpc.setRetention({ projectId, retentionDays: 2_000_000_000 }, auth()),
    );
    expect(huge.code).toBe(Code.InvalidArgument);
    expect(huge.rawMessage).toBe(`${RANGE_MESSAGE} 2000000000`);
    const unknown = await rpcFailure(
      grpc.setRetention({ projectId: UNKNOWN_ID, retentionDays: 30 }, auth()),
    );
    expect(unknown.code).toBe(Code.NotFound);
    expect(unknown.rawMessage).toBe(`Project ${UNKNOWN_ID} not found`);
    const badId = await rpcFailure(
      grpc.setRetention({ projectId: "nope", retentionDays: 30 }, auth()),
    );
    expect(badId.code).toBe(Code.InvalidArgument);
    expect(badId.rawMessage).toBe("projectId must be a UUID");
    const badEnv = await rpcFailure(
      grpc.setRetention({ projectId, environment: 7 as Environment, retentionDays: 30 }, auth()),
    );
    expect(badEnv.code).toBe(Code.InvalidArgument);
    expect(badEnv.rawMessage).toBe("environment must be ENVIRONMENT_TEST or ENVIRONMENT_LIVE");
    const noToken = await rpcFailure(grpc.setRetention({ projectId, retentionDays: 30 }));
    expect(noToken.code).toBe(Code.Unauthenticated);
    // Nothing refused changed the setting.
    const { projects } = await grpc.listProjects({}, auth());
    const listed = projects.find((each) => each.id === projectId);
    expect(listed?.retention.map((each) => each.retentionDays)).toEqual([1, 0]);
  });

  it("Connect JSON: a value beyond int32 is refused when decoded", async () => {
    const { projectId } = await server.provision();
    const response = await fetch(`${server.url}/audit.v1.AdminService/SetRetention`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${server.adminToken}`,
      },
      body: JSON.stringify({ projectId, retentionDays: 1e12 }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/retention_days.*out of range$/);
  });

  const cli = (...args: string[]) =>
    run(process.execPath, ["--import", "tsx", "src/admin/cli.ts", "--url", server.url, ...args], {
      env: { ...process.env, ADMIN_TOKEN: server.adminToken },
      timeout: 30_000,
    }).then(
      ({ stdout }) => ({ code: 0, stdout, stderr: "" }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it("CLI: project set-retention, project list, and a refusal", async () => {
    const { projectId } = await server.provision();
    const set = await cli("--json", "project", "set-retention", projectId, "30", "--env", "live");
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({
      id: projectId,
      retention: [
        { environment: "ENVIRONMENT_TEST" },
        { environment: "ENVIRONMENT_LIVE", retentionDays: 30 },
      ],
    });
    const list = await cli("project", "list");
    const line = list.stdout.split("\n").find((each) => each.startsWith(projectId));
    expect(line).toContain("retention.test=forever  retention.live=30d");
    // A negative number follows "--", or parseArgs takes it for an option.
    const refused = await cli("project", "set-retention", projectId, "--", "-1");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`audit-admin: InvalidArgument: ${RANGE_MESSAGE} -1\n`);
    const usage = await cli("project", "set-retention", projectId, "ten");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("<days> must be a whole number");
    // Four CLI processes, each loading TypeScript: slow on a loaded machine.
  }, 120_000);

  it("CLI: events erase names the environment it looked in (test unless --env live)", async () => {
    const { projectId } = await server.provision();
    const test = await cli("events", "erase", projectId, "--actor-id", "bob", "--dry-run");
    expect(test.stdout).toBe("matched 0, erased 0 in test  (dry run)\n");
    const live = await cli(
      "events",
      "erase",
      projectId,
      "--env",
      "live",
      "--actor-id",
      "bob",
      "--dry-run",
    );
    expect(live.stdout).toBe("matched 0, erased 0 in live  (dry run)\n");
    // An unknown option is a usage mistake like the others: exit 2 with the usage.
    const unknown = await cli("events", "erase", projectId, "--bogus-flag");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^audit-admin: Unknown option '--bogus-flag'[\s\S]*Usage/);
  }, 60_000);
});
