/**
 * AdminService through Connect, and the audit-admin CLI against a running service:
 * the admin token guard, projects, plans, keys (secret shown once), key status
 * transitions and their effect on ingestion, data-key rotation.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyStatus, Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { rpcFailure } from "../support/rpc.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const run = promisify(execFile);

describe("AdminService", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const clientWith = (token: string | undefined) => createAdminClient(server.url, token);

  it("refuses calls without the admin token or with a wrong one", async () => {
    const missing = await rpcFailure(clientWith(undefined).listProjects({}));
    expect(missing?.code).toBe(Code.Unauthenticated);
    const wrong = await rpcFailure(clientWith(`${server.adminToken}x`).listProjects({}));
    expect(wrong?.code).toBe(Code.Unauthenticated);
    const apiKey = await server.provision();
    const withApiKey = await rpcFailure(clientWith(apiKey.secret).listProjects({}));
    expect(withApiKey?.code).toBe(Code.Unauthenticated);
  });

  it("creates and lists projects with their plan; an empty name is refused", async () => {
    const { project } = await server.admin.createProject({ name: "Acme", plan: Plan.START });
    expect(project).toMatchObject({ name: "Acme", plan: Plan.START, keyVersion: 1 });
    const { projects } = await server.admin.listProjects({});
    expect(projects.map((p) => p.id)).toContain(project?.id);
    const defaulted = await server.admin.createProject({ name: "No plan" });
    expect(defaulted.project?.plan).toBe(Plan.FREE);
    const empty = await rpcFailure(server.admin.createProject({ name: "  ", plan: Plan.FREE }));
    expect(empty?.code).toBe(Code.InvalidArgument);
  });

  // Lengths count code points (src/vocabulary/text-length.ts), as the spec's "characters".
  it("a project name of 200 emoji (400 UTF-16 units) is accepted; 201 is refused", async () => {
    const name = "\u{1F600}".repeat(200);
    const { project } = await server.admin.createProject({ name, plan: Plan.FREE });
    expect(project?.name).toBe(name);
    const refused = await rpcFailure(
      server.admin.createProject({ name: `${name}\u{1F600}`, plan: Plan.FREE }),
    );
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.rawMessage).toBe("name must be 1 to 200 characters");
  });

  // PostgreSQL text holds neither NUL (it answered 22021, an internal error) nor an
  // unpaired surrogate (the driver would store U+FFFD instead): refused before SQL. Sent
  // as Connect JSON: a binary client would already have made the surrogate U+FFFD.
  it.each([
    ["a NUL character", "Acme\u0000Corp"],
    ["an unpaired surrogate", "Acme \uD800"],
  ])(
    "a project name with %s is refused with invalid_argument; nothing is created",
    async (_what, name) => {
      const before = (await server.admin.listProjects({})).projects.length;
      const response = await fetch(`${server.url}/audit.v1.AdminService/CreateProject`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${server.adminToken}`,
        },
        body: JSON.stringify({ name, plan: "PLAN_FREE" }),
        signal: AbortSignal.timeout(15_000),
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { code: string; message: string };
      expect(body.code).toBe("invalid_argument");
      // (protobuf-es refuses the surrogate itself, as invalid UTF-8, before our check.)
      expect(body.message).toMatch(/^name must not contain NUL|invalid UTF8$/);
      expect((await server.admin.listProjects({})).projects.length).toBe(before);
    },
  );

  it("sets a plan; unknown projects and plans are refused", async () => {
    const { projectId } = await server.provision({ plan: Plan.FREE });
    const { project } = await server.admin.setProjectPlan({ projectId, plan: Plan.PRO });
    expect(project?.plan).toBe(Plan.PRO);
    const unknown = await rpcFailure(
      server.admin.setProjectPlan({
        projectId: "01a20000-0000-7000-8000-000000000000",
        plan: Plan.PRO,
      }),
    );
    expect(unknown?.code).toBe(Code.NotFound);
    const badPlan = await rpcFailure(
      server.admin.setProjectPlan({ projectId, plan: Plan.UNSPECIFIED }),
    );
    expect(badPlan?.code).toBe(Code.InvalidArgument);
    const badId = await rpcFailure(
      server.admin.setProjectPlan({ projectId: "nope", plan: Plan.PRO }),
    );
    expect(badId?.code).toBe(Code.InvalidArgument);
  });

  // Found by an outside audit (2026-11-28): the lenient JSON decoding dropped an unknown
  // enum name, so a misspelt environment set the retention of both environments.
  // AdminService alone is read strictly (transport/connect-routes.ts).
  it("reads Connect JSON strictly: an unknown enum name or field is refused, and nothing changes", async () => {
    const { projectId } = await server.provision({ plan: Plan.FREE });
    const retentionOf = async () =>
      (await server.admin.listProjects({})).projects.find((p) => p.id === projectId)?.retention;
    const before = await retentionOf();
    const call = (method: string, body: unknown) =>
      fetch(`${server.url}/audit.v1.AdminService/${method}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${server.adminToken}`,
        },
        body: JSON.stringify(body),
      });
    const retention = await call("SetRetention", {
      projectId,
      environment: "ENVIRONMENT_PROD",
      retentionDays: 30,
    });
    expect(retention.status).toBe(400);
    const refusal = (await retention.json()) as { code: string; message: string };
    expect(refusal.code).toBe("invalid_argument");
    expect(refusal.message).toContain('"ENVIRONMENT_PROD"');
    const plan = await call("CreateProject", { name: "typo", plan: "PLAN_GOLD" });
    expect(plan.status).toBe(400);
    expect(((await plan.json()) as { message: string }).message).toContain('"PLAN_GOLD"');
    // A misspelt field would read as its default too (retention 0: kept for ever).
    const misspelt = await call("SetRetention", {
      projectId,
      environment: "ENVIRONMENT_LIVE",
      retentionDay: 30,
    });
    expect(misspelt.status).toBe(400);
    expect(((await misspelt.json()) as { message: string }).message).toContain("retentionDay");
    expect(await retentionOf()).toEqual(before);
    const { projects } = await server.admin.listProjects({});
    expect(projects.some((p) => p.name === "typo")).toBe(false);
    const known = await call("SetRetention", {
      projectId,
      environment: "ENVIRONMENT_LIVE",
      retentionDays: 30,
    });
    expect(known.status).toBe(200);
    // The other services still ignore fields they do not know (Connect's default).
    const { secret } = await server.provision();
    const list = await fetch(`${server.url}/audit.v1.EventService/ListEvents`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ limit: 5, fromANewerContract: true }),
    });
    expect(list.status).toBe(200);
  });

  // Found by an outside audit (2026-11-29): JSON.parse and the decoder resolved these
  // silently, and an erasure naming one subject first erased another's events.
  it("refuses a member given twice, one field under both names, or null; answers every field", async () => {
    const { projectId, secret } = await server.provision({ plan: Plan.FREE });
    for (const actorId of ["victimA", "victimB", "victimB"]) {
      await postEvent(server, validEvent({ actorId }), { authorization: `Bearer ${secret}` });
    }
    const send = (method: string, text: string | Buffer, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/audit.v1.AdminService/${method}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${server.adminToken}`,
          ...headers,
        },
        body: text,
      });
    const erase = `{"projectId":"${projectId}","environment":"ENVIRONMENT_TEST"`;
    const cases: [string, string, string][] = [
      [
        "EraseEvents",
        `${erase},"actorId":"victimA","actor_id":"victimB"}`,
        "actorId must be given once (actorId and actor_id are one field)",
      ],
      [
        "EraseEvents",
        `${erase},"actorId":"victimA","actorId":"victimB"}`,
        "actorId must be given once",
      ],
      [
        "EraseEvents",
        `{"projectId":"${projectId}","project_id":"${projectId}","environment":"ENVIRONMENT_TEST","actorId":"victimA"}`,
        "projectId must be given once (projectId and project_id are one field)",
      ],
      [
        "SetRetention",
        `{"projectId":"${projectId}","environment":null,"retentionDays":30}`,
        "environment must not be null: leave it out for its default",
      ],
      [
        "SetRetention",
        `{"projectId":"${projectId}","environment":"ENVIRONMENT_LIVE","retentionDays":null}`,
        "retentionDays must not be null: leave it out for its default",
      ],
    ];
    for (const [method, text, message] of cases) {
      const response = await send(method, text);
      expect({ text, status: response.status, body: await response.json() }).toEqual({
        text,
        status: 400,
        body: { code: "invalid_argument", message },
      });
    }
    // Compressed, the body is read the same.
    const gzipped = await send(
      "EraseEvents",
      gzipSync(`${erase},"actorId":"victimA","actor_id":"victimB"}`),
      { "content-encoding": "gzip" },
    );
    expect(gzipped.status).toBe(400);
    // A bad byte must not turn the check off (the decoder would read it leniently).
    const badUtf8 = await send(
      "EraseEvents",
      Buffer.concat([
        Buffer.from(`${erase},"actorId":"victim`),
        Buffer.from([0xff]),
        Buffer.from(`A","actorId":"victimB","dryRun":true}`),
      ]),
    );
    expect(await badUtf8.json()).toEqual({
      code: "invalid_argument",
      message: "the request is not valid UTF-8",
    });
    // Deep nesting is refused, and the process lives (the member scan recurses).
    const deep = await send("EraseEvents", `${"[".repeat(20_000)}${"]".repeat(20_000)}`);
    expect(deep.status).toBe(400);
    expect((await send("ListErasures", `{"projectId":"${projectId}"}`)).status).toBe(200);
    // gRPC-Web's JSON form is read the same, its refusal in its own protocol.
    const message = Buffer.from(`${erase},"actorId":"victimA","actor_id":"victimB"}`);
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(message.length, 1);
    const grpcWeb = await fetch(`${server.url}/audit.v1.AdminService/EraseEvents`, {
      method: "POST",
      headers: {
        "content-type": "application/grpc-web+json",
        authorization: `Bearer ${server.adminToken}`,
      },
      body: Buffer.concat([frame, message]),
    });
    const trailer = Buffer.from(await grpcWeb.arrayBuffer()).toString("latin1");
    expect(trailer).toContain("grpc-status: 3");
    expect(decodeURIComponent(trailer)).toContain(
      "actorId must be given once (actorId and actor_id are one field)",
    );
    // Without the admin token, the credential is refused first.
    const anonymous = await fetch(`${server.url}/audit.v1.AdminService/EraseEvents`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `${erase},"actorId":"victimA","actorId":"victimB"}`,
    });
    expect(anonymous.status).toBe(401);
    // Nothing was erased and no retention changed.
    const dry = await send("EraseEvents", `${erase},"actorId":"victimB","dryRun":true}`);
    expect(await dry.json()).toEqual({ matched: "2", erased: "0" });
    expect((await server.admin.listErasures({ projectId })).erasures).toEqual([]);
    // Zero counts and empty lists are in the answer, not left out.
    const none = await send("ListErasures", `{"projectId":"${projectId}"}`);
    expect(await none.json()).toEqual({ erasures: [] });
  });

  it("creates keys in the right format, shows the secret once and lists keys without it", async () => {
    const { projectId } = await server.provision();
    const live = await server.admin.createApiKey({ projectId, environment: Environment.LIVE });
    expect(live.secret).toMatch(/^pk_live_[A-Za-z0-9]{20,}$/);
    expect(live.apiKey).toMatchObject({
      projectId,
      environment: Environment.LIVE,
      status: ApiKeyStatus.ACTIVE,
    });
    expect(live.secret.startsWith(live.apiKey?.prefix ?? "?")).toBe(true);
    const { apiKeys } = await server.admin.listApiKeys({ projectId });
    expect(apiKeys).toHaveLength(2);
    expect(
      JSON.stringify(apiKeys, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v)),
    ).not.toContain(live.secret);
    const noEnv = await rpcFailure(server.admin.createApiKey({ projectId }));
    expect(noEnv?.code).toBe(Code.InvalidArgument);
    const rows = await server.app.db.query<{ key_hash: Uint8Array }>(
      "select key_hash from api_keys where project_id = $1",
      [projectId],
    );
    for (const row of rows) expect(Buffer.from(row.key_hash).toString()).not.toContain("pk_");
  });

  it("a revoked key and a retired key get 403 API key has been revoked; retired stays retired", async () => {
    const revoked = await server.provision();
    const retired = await server.provision();
    const send = (secret: string) =>
      postEvent(server, validEvent(), { authorization: `Bearer ${secret}` });
    expect((await send(revoked.secret)).status).toBe(201);

    const afterRevoke = await server.admin.revokeApiKey({ id: revoked.keyId });
    expect(afterRevoke.apiKey?.status).toBe(ApiKeyStatus.REVOKED);
    expect(await send(revoked.secret)).toMatchObject({
      status: 403,
      body: { error: "API key has been revoked" },
    });

    await server.admin.retireApiKey({ id: retired.keyId });
    expect(await send(retired.secret)).toMatchObject({
      status: 403,
      body: { error: "API key has been revoked" },
    });
    const stillRetired = await server.admin.revokeApiKey({ id: retired.keyId });
    expect(stillRetired.apiKey?.status).toBe(ApiKeyStatus.RETIRED);

    const unknown = await rpcFailure(
      server.admin.revokeApiKey({ id: "01a20000-0000-7000-8000-000000000000" }),
    );
    expect(unknown?.code).toBe(Code.NotFound);
  });

  it("GetLogVerifierKey gives the key GET /api/log/key gives the log's own API key", async () => {
    const key = await server.provision();
    const published = await fetch(`${server.url}/api/log/key`, {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(published.status).toBe(200);
    const test = await server.admin.getLogVerifierKey({
      projectId: key.projectId,
      environment: Environment.TEST,
    });
    expect(test.verifierKey).toBe(await published.text());
    expect(test.verifierKey).toMatch(new RegExp(`^[^+]+/${key.projectId}/test\\+[0-9a-f]{8}\\+`));
    const live = await server.admin.getLogVerifierKey({
      projectId: key.projectId,
      environment: Environment.LIVE,
    });
    expect(live.verifierKey).toMatch(new RegExp(`/${key.projectId}/live\\+`));

    const unknown = await rpcFailure(
      server.admin.getLogVerifierKey({
        projectId: "01a20000-0000-7000-8000-000000000000",
        environment: Environment.TEST,
      }),
    );
    expect(unknown?.code).toBe(Code.NotFound);
    const noEnvironment = await rpcFailure(
      server.admin.getLogVerifierKey({ projectId: key.projectId }),
    );
    expect(noEnvironment?.code).toBe(Code.InvalidArgument);
  });

  it("GetLogPosition reports a log's head and how far it is integrated", async () => {
    const key = await server.provision();
    const position = (environment: Environment) =>
      server.admin.getLogPosition({ projectId: key.projectId, environment });
    const empty = await position(Environment.TEST);
    expect([empty.head, empty.integrated, empty.lagSeconds]).toEqual([0n, 0n, 0]);
    for (let i = 0; i < 3; i++) {
      expect((await postEvent(server, validEvent(), { "x-project-key": key.secret })).status).toBe(
        201,
      );
    }
    // A list waits for the integrator to pass what was acknowledged before it.
    const listed = await fetch(`${server.url}/api/events`, {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(listed.status).toBe(200);
    const after = await position(Environment.TEST);
    expect([after.head, after.integrated, after.lagSeconds]).toEqual([3n, 3n, 0]);
    expect(Date.parse(after.integratedAt ?? "")).toBeGreaterThan(0);
    const live = await position(Environment.LIVE);
    expect([live.head, live.integrated]).toEqual([0n, 0n]);

    const unknown = await rpcFailure(
      server.admin.getLogPosition({
        projectId: "01a20000-0000-7000-8000-000000000000",
        environment: Environment.LIVE,
      }),
    );
    expect(unknown?.code).toBe(Code.NotFound);
  });

  it("rotating a project's data key bumps its version and ingestion continues", async () => {
    const key = await server.provision();
    expect((await postEvent(server, validEvent(), { "x-project-key": key.secret })).status).toBe(
      201,
    );
    const { project } = await server.admin.rotateProjectKey({ projectId: key.projectId });
    expect(project?.keyVersion).toBe(2);
    expect((await postEvent(server, validEvent(), { "x-project-key": key.secret })).status).toBe(
      201,
    );
    const versions = await server.app.db.query<{ key_version: number }>(
      "select key_version from events where project_id = $1 order by id",
      [key.projectId],
    );
    expect(versions.map((row) => row.key_version)).toEqual([1, 2]);
  });
});

describe("audit-admin CLI", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const cli = async (...args: string[]) => {
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "src/admin/cli.ts", "--url", server.url, "--json", ...args],
      { env: { ...process.env, ADMIN_TOKEN: server.adminToken }, timeout: 30_000 },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  };

  it("creates a project and a live key that can record an event, then revokes it", async () => {
    const project = await cli("project", "create", "CLI project", "--plan", "start");
    expect(project).toMatchObject({ name: "CLI project", plan: "PLAN_START" });
    const created = (await cli("key", "create", String(project.id), "--env", "live")) as {
      apiKey: { id: string };
      secret: string;
    };
    expect(created.secret).toMatch(/^pk_live_/);
    const ok = await postEvent(server, validEvent(), { authorization: `Bearer ${created.secret}` });
    expect(ok.status).toBe(201);
    // The verifier key the CLI prints is the one the log's own key reads.
    const logKey = await cli("log", "key", String(project.id), "--env", "live");
    const published = await fetch(`${server.url}/api/log/key`, {
      headers: { authorization: `Bearer ${created.secret}` },
    });
    expect(logKey).toEqual({ verifierKey: await published.text() });
    expect(logKey.verifierKey).toContain(`/${String(project.id)}/live+`);
    const revoked = await cli("key", "revoke", created.apiKey.id);
    expect(revoked).toMatchObject({ status: "API_KEY_STATUS_REVOKED" });
    const refused = await postEvent(server, validEvent(), {
      authorization: `Bearer ${created.secret}`,
    });
    expect(refused.status).toBe(403);
  });

  it("exits 2 with the usage on an unknown command and 1 on a refused call", async () => {
    const unknown = await run(process.execPath, ["--import", "tsx", "src/admin/cli.ts", "nope"], {
      timeout: 30_000,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Usage: audit-admin");
    const refused = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/admin/cli.ts",
        "--url",
        server.url,
        "--admin-token",
        "wrong-token-123456",
        "project",
        "list",
      ],
      { timeout: 30_000 },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("Unauthenticated");
  });
});
