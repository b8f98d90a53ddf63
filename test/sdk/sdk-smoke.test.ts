/**
 * Python and Go clients generated from proto/ by the recipes of docs/sdk.md, with Debian's
 * protoc, grpc_python_plugin, protoc-gen-go and protoc-gen-go-grpc, run against the live
 * service: create with an Idempotency-Key and replay it, list with a filter, and read the
 * structured details of a validation error (BadRequest) and of the rate limit
 * (RetryInfo). Each program (test/sdk/python/smoke.py, test/sdk/go/main.go) prints a JSON
 * report; the assertions compare it with what the service answers over REST.
 *
 * A missing tool fails these tests (with the Debian packages to install): they prove the
 * recipes, so they never skip. `.ci/run` installs the packages when they are missing.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postEvent, startTestServer, type TestServer } from "../support/test-server.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const HERE = fileURLToPath(new URL(".", import.meta.url));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
// Debian's Python, which python3-grpcio and python3-protobuf install into (a python3
// earlier on PATH, such as pyenv's, does not see them).
const PYTHON = "/usr/bin/python3";
// Debian's Go libraries (golang-google-grpc-dev, golang-google-protobuf-dev, ...).
const GOCODE = "/usr/share/gocode";
const RATE_LIMIT_MAX = 5;
const PACKAGES =
  "protobuf-compiler libprotobuf-dev protobuf-compiler-grpc python3-grpcio python3-protobuf " +
  "golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev golang-google-protobuf-dev " +
  "golang-google-genproto-dev golang-github-golang-protobuf-1-5-dev";

/** The report both smoke programs print. */
interface SmokeReport {
  eventId: string;
  receivedAt: string;
  replayEventId: string;
  replayReceivedAt: string;
  replayHeader: string;
  listedEventIds: string[];
  listedAfter: unknown;
  /** The gRPC status code, as a number. */
  validationCode: number;
  validationMessage: string;
  violations: { field: string; description: string; reason: string }[];
  rateLimitCode: number;
  rateLimitMessage: string;
  retryDelaySeconds: number;
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, timeout: 240_000 },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

/** Fails with the packages to install when a tool of the recipes is missing. */
async function requireTools(): Promise<void> {
  const missing: string[] = [];
  for (const tool of [
    "protoc",
    "grpc_python_plugin",
    "protoc-gen-go",
    "protoc-gen-go-grpc",
    "go",
  ]) {
    await run("sh", ["-c", `command -v ${tool}`]).catch(() => missing.push(tool));
  }
  await run(PYTHON, ["-c", "import grpc, google.protobuf"]).catch(() =>
    missing.push("python3-grpcio"),
  );
  for (const dir of [
    "google.golang.org/grpc",
    "google.golang.org/protobuf",
    "google.golang.org/genproto",
  ]) {
    if (!existsSync(join(GOCODE, "src", dir))) missing.push(`${GOCODE}/src/${dir}`);
  }
  // grpc-go marshals through github.com/golang/protobuf: its 1.3 package (which Debian may
  // pick for golang-google-grpc-dev) cannot marshal messages of protoc-gen-go 1.28.
  if (!existsSync(join(GOCODE, "src/github.com/golang/protobuf/proto/registry.go"))) {
    missing.push("golang-github-golang-protobuf-1-5-dev");
  }
  if (!existsSync("/usr/include/google/protobuf/struct.proto")) missing.push("libprotobuf-dev");
  if (missing.length > 0) {
    throw new Error(`missing ${missing.join(", ")}: apt-get install -y ${PACKAGES}`);
  }
}

/** The recipe of docs/sdk.md for Python: messages and gRPC stubs, googleapis included. */
async function generatePython(out: string): Promise<void> {
  await run("sh", [
    "-c",
    `protoc -I proto -I third_party/proto -I /usr/include \
      --python_out="${out}" --grpc_python_out="${out}" \
      --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
      proto/audit/v1/*.proto third_party/proto/google/api/*.proto third_party/proto/google/rpc/*.proto`,
  ]);
}

/**
 * The recipe of docs/sdk.md for Go, into a GOPATH: the audit package at its go_package
 * path, and google/rpc/error_details.proto generated too, because Debian's genproto
 * (2020) predates BadRequest.FieldViolation.reason.
 */
async function buildGo(gopath: string): Promise<string> {
  const gen = join(gopath, "src/audit-event-service/gen/go");
  await mkdir(gen, { recursive: true });
  await run("sh", [
    "-c",
    `protoc -I proto -I third_party/proto -I /usr/include \
      --go_out="${gen}" --go_opt=paths=source_relative \
      --go-grpc_out="${gen}" --go-grpc_opt=paths=source_relative \
      proto/audit/v1/*.proto &&
     protoc -I third_party/proto -I /usr/include \
      --go_out="${gen}" --go_opt=paths=source_relative \
      --go_opt=Mgoogle/rpc/error_details.proto="audit-event-service/gen/go/google/rpc;errdetails" \
      google/rpc/error_details.proto`,
  ]);
  const main = join(gopath, "src/sdksmoke");
  await mkdir(main, { recursive: true });
  await copyFile(join(HERE, "go/main.go"), join(main, "main.go"));
  const binary = join(gopath, "sdksmoke");
  // GOPATH mode with Debian's sources only: no module proxy, no network.
  await run("go", ["build", "-o", binary, "."], {
    cwd: main,
    env: {
      ...process.env,
      GO111MODULE: "off",
      GOFLAGS: "",
      GOPROXY: "off",
      GOPATH: `${gopath}:${GOCODE}`,
      // The build cache survives the run (Debian's packages compile once), wherever HOME is.
      GOCACHE: process.env.GOCACHE ?? join(tmpdir(), "audit-sdk-go-cache"),
    },
  });
  return binary;
}

describe("SDK smoke tests: generated Python and Go clients against the live service", () => {
  let server: TestServer;
  let work: string;

  beforeAll(async () => {
    await requireTools();
    work = await mkdtemp(join(tmpdir(), "audit-sdk-"));
    server = await startTestServer({ RATE_LIMIT_MAX: String(RATE_LIMIT_MAX) });
  });
  afterAll(async () => {
    await server?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** What every client must have observed, checked against the service's REST answers. */
  async function expectReport(report: SmokeReport, secret: string, runId: string) {
    expect(report.eventId).toMatch(UUID);
    expect(report.replayEventId).toBe(report.eventId);
    expect(report.replayReceivedAt).toBe(report.receivedAt);
    expect(report.replayHeader).toBe("true");

    const listed = await fetch(`${server.url}/api/events?entityId=${runId}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const page = (await listed.json()) as { events: { eventId: string }[] };
    // The list ran before the rate-limit loop created more events of the same entity.
    expect(report.listedEventIds).toEqual([report.eventId]);
    expect(page.events.map((event) => event.eventId)).toContain(report.eventId);
    expect(report.listedAfter).toEqual({ plan: "pro", seats: 2 });

    expect(report.validationCode).toBe(3); // INVALID_ARGUMENT
    expect(report.validationMessage).toBe("Validation failed");
    // The same body over REST (with a key of its own: the client's is rate limited by
    // now): one field violation per 422 detail, in the same order.
    const restKey = await server.provision();
    const rest = await postEvent(
      server,
      {
        actionKey: "user.login",
        entityId: runId,
        actorId: "user_x",
        changes: [{ op: "rename", path: "name", before: null, after: "x" }],
      },
      { authorization: `Bearer ${restKey.secret}` },
    );
    expect(rest.status).toBe(422);
    const details = rest.body.details as {
      path: (string | number)[];
      message: string;
      code: string;
    }[];
    expect(report.violations).toEqual(
      details.map((detail) => ({
        field: detail.path
          .map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? part : `.${part}`))
          .join(""),
        description: detail.message,
        reason: detail.code,
      })),
    );
    expect(report.violations).toContainEqual({
      field: "entityType",
      description: "Required",
      reason: "invalid_type",
    });
    expect(report.violations.map((violation) => violation.field)).toContain("changes[0].op");

    expect(report.rateLimitCode).toBe(8); // RESOURCE_EXHAUSTED
    expect(report.rateLimitMessage).toBe("Rate limit exceeded");
    expect(report.retryDelaySeconds).toBeGreaterThanOrEqual(1);
    expect(report.retryDelaySeconds).toBeLessThanOrEqual(60);
  }

  it("a Python client generated with protoc and grpc_python_plugin creates, replays, lists and reads error details", async () => {
    const out = join(work, "python");
    await mkdir(out, { recursive: true });
    await generatePython(out);
    const key = await server.provision();
    const runId = `py_${randomUUID()}`;
    const stdout = await run(PYTHON, [join(HERE, "python/smoke.py")], {
      env: {
        ...process.env,
        PYTHONPATH: out,
        AUDIT_TARGET: `127.0.0.1:${server.port}`,
        AUDIT_API_KEY: key.secret,
        AUDIT_RUN_ID: runId,
      },
    });
    await expectReport(JSON.parse(stdout) as SmokeReport, key.secret, runId);
  }, 300_000);

  it("a Go client generated with protoc-gen-go and protoc-gen-go-grpc creates, replays, lists and reads error details", async () => {
    const binary = await buildGo(join(work, "gopath"));
    const key = await server.provision();
    const runId = `go_${randomUUID()}`;
    const stdout = await run(binary, [], {
      env: {
        ...process.env,
        AUDIT_TARGET: `127.0.0.1:${server.port}`,
        AUDIT_API_KEY: key.secret,
        AUDIT_RUN_ID: runId,
      },
    });
    await expectReport(JSON.parse(stdout) as SmokeReport, key.secret, runId);
  }, 300_000);
});
