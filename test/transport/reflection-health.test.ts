/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) and the gRPC health service
 * (grpc.health.v1) on the shared port: `buf curl` lists and calls methods with no proto
 * file at hand, a reflection client receives the very descriptors gen/ was built from
 * (field rules and HTTP annotations included) and calls the service with them, and health
 * follows readiness, in production over plain HTTP too.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  create,
  createFileRegistry,
  type DescFile,
  type DescMethodUnary,
  fromBinary,
  getOption,
  type MessageInitShape,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import {
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { file_audit_v1_admin } from "../../gen/audit/v1/admin_pb.js";
import { file_audit_v1_event } from "../../gen/audit/v1/event_pb.js";
import { file_audit_v1_events } from "../../gen/audit/v1/events_pb.js";
import { file_audit_v1_ingest } from "../../gen/audit/v1/ingest_pb.js";
import { field as fieldRules } from "../../gen/audit/v1/rules_pb.js";
import { file_audit_v1_tokens } from "../../gen/audit/v1/tokens_pb.js";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { SERVICES } from "../../src/app.js";
import { healthRoutes } from "../../src/transport/grpc-health.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BUF = `${ROOT}node_modules/.bin/buf`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** `buf curl` run from an empty directory: no buf.yaml, no proto file to read. */
function bufCurl(cwd: string, args: string[]): Promise<{ exitCode: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    execFile(BUF, ["curl", ...args], { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && (error.killed || typeof error.code !== "number")) {
        reject(new Error(`buf curl did not complete: ${error.message}\n${stderr}`));
        return;
      }
      resolve({ exitCode: error ? Number(error.code) : 0, stdout });
    });
  });
}

/** Sends `requests` on one reflection stream; returns the answers in order. */
async function reflect(
  baseUrl: string,
  requests: MessageInitShape<typeof ServerReflectionRequestSchema>[],
): Promise<ServerReflectionResponse[]> {
  const sessions = new Http2SessionManager(baseUrl);
  try {
    const client = createClient(
      ServerReflection,
      createGrpcTransport({ baseUrl, sessionManager: sessions }),
    );
    const answers: ServerReflectionResponse[] = [];
    const stream = client.serverReflectionInfo(
      (async function* () {
        for (const request of requests) yield create(ServerReflectionRequestSchema, request);
      })(),
    );
    for await (const answer of stream) answers.push(answer);
    return answers;
  } finally {
    sessions.abort();
  }
}

/** The FileDescriptorProtos of a file_descriptor_response. */
function filesOf(answer: ServerReflectionResponse | undefined) {
  if (answer?.messageResponse.case !== "fileDescriptorResponse") {
    throw new Error(`not a file descriptor response: ${answer?.messageResponse.case}`);
  }
  return answer.messageResponse.value.fileDescriptorProto.map((bytes) =>
    fromBinary(FileDescriptorProtoSchema, bytes),
  );
}

/** Each file once, after the files it imports (as a FileDescriptorSet must list them). */
function dependenciesFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((file) => [file.name, file]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (name: string) => {
    const file = byName.get(name);
    if (!file || ordered.includes(file)) return;
    for (const dependency of file.dependency) visit(dependency);
    ordered.push(file);
  };
  for (const name of byName.keys()) visit(name);
  return ordered;
}

describe("gRPC server reflection and health on the shared port", () => {
  let server: TestServer;
  let emptyDir: string;

  beforeAll(async () => {
    server = await startTestServer();
    emptyDir = await mkdtemp(join(tmpdir(), "audit-reflection-"));
  });
  afterAll(async () => {
    await server?.close();
    if (emptyDir) await rm(emptyDir, { recursive: true, force: true });
  });

  it.each(["grpc-v1", "grpc-v1alpha"])(
    "buf curl --list-methods lists every method with no proto file (%s)",
    async (reflectProtocol) => {
      const result = await bufCurl(emptyDir, [
        "--list-methods",
        "--http2-prior-knowledge",
        "--reflect-protocol",
        reflectProtocol,
        server.url,
      ]);
      expect(result.exitCode).toBe(0);
      const listed = result.stdout.trim().split("\n");
      const expected = SERVICES.flatMap((service) =>
        service.methods.map((method) => `${service.typeName}/${method.name}`),
      );
      expect(listed).toEqual(expect.arrayContaining(expected));
      expect(listed).toContain("grpc.health.v1.Health/Check");
      expect(listed).toContain("grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
      expect(listed).toContain("grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
    },
  );

  it("buf curl creates and lists events through reflection alone (Value fields as plain JSON)", async () => {
    const key = await server.provision();
    const auth = ["-H", `authorization: Bearer ${key.secret}`];
    const created = await bufCurl(emptyDir, [
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      ...auth,
      "-d",
      JSON.stringify({
        actionKey: "user.login",
        entityType: "user",
        entityId: "reflected",
        actorId: "u1",
        changes: [{ op: "set", path: "seats", before: null, after: 2 }],
      }),
      `${server.url}/audit.v1.IngestService/CreateEvent`,
    ]);
    expect(created.exitCode).toBe(0);
    const { eventId } = JSON.parse(created.stdout) as { eventId: string };
    expect(eventId).toMatch(UUID);
    const listed = await bufCurl(emptyDir, [
      "--http2-prior-knowledge",
      "--protocol",
      "grpc",
      ...auth,
      "-d",
      JSON.stringify({ entityId: "reflected" }),
      `${server.url}/audit.v1.EventService/ListEvents`,
    ]);
    expect(listed.exitCode).toBe(0);
    const page = JSON.parse(listed.stdout) as {
      events: { eventId: string; changes: { after: unknown }[] }[];
    };
    expect(page.events.map((event) => event.eventId)).toEqual([eventId]);
    expect(page.events[0]?.changes[0]?.after).toBe(2);
  });

  it("resolves the google.rpc error details the errors carry, by symbol and by file", async () => {
    const answers = await reflect(server.url, [
      ...["google.rpc.BadRequest", "google.rpc.RetryInfo", "google.rpc.QuotaFailure"].map(
        (symbol) => ({
          host: "",
          messageRequest: { case: "fileContainingSymbol" as const, value: symbol },
        }),
      ),
      { host: "", messageRequest: { case: "fileByFilename", value: "google/rpc/status.proto" } },
    ]);
    expect(answers.map((answer) => answer.messageResponse.case)).toEqual(
      Array(4).fill("fileDescriptorResponse"),
    );
    expect(filesOf(answers[0])[0]?.name).toBe("google/rpc/error_details.proto");
    // Sent once per stream: the later symbols of the same file get it again (the file
    // itself always comes back), with nothing else.
    expect(filesOf(answers[1]).map((file) => file.name)).toEqual([
      "google/rpc/error_details.proto",
    ]);
    expect(filesOf(answers[3])[0]?.name).toBe("google/rpc/status.proto");
  });

  it("a reflection client receives the descriptors gen/ was built from, and calls the service with them", async () => {
    const answers = await reflect(server.url, [
      { host: "", messageRequest: { case: "listServices", value: "" } },
      {
        host: "",
        messageRequest: { case: "fileContainingSymbol", value: "audit.v1.IngestService" },
      },
      // Already sent with ingest.proto: only the file itself comes back.
      { host: "", messageRequest: { case: "fileByFilename", value: "audit/v1/event.proto" } },
      ...["audit.v1.EventService", "audit.v1.TokenService", "audit.v1.AdminService"].map(
        (symbol) => ({
          host: "",
          messageRequest: { case: "fileContainingSymbol" as const, value: symbol },
        }),
      ),
      { host: "", messageRequest: { case: "fileContainingSymbol", value: "audit.v1.Nothing" } },
      {
        host: "",
        messageRequest: {
          case: "fileContainingSymbol",
          value: "audit.v1.IngestService.CreateEvent",
        },
      },
      {
        host: "",
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.FieldOptions", extensionNumber: 51000 },
        },
      },
      {
        host: "",
        messageRequest: {
          case: "allExtensionNumbersOfType",
          value: "google.protobuf.MethodOptions",
        },
      },
    ]);
    expect(answers.map((answer) => answer.messageResponse.case)).toEqual([
      "listServicesResponse",
      ...Array(5).fill("fileDescriptorResponse"),
      "errorResponse",
      "fileDescriptorResponse",
      "fileDescriptorResponse",
      "allExtensionNumbersResponse",
    ]);

    const [services] = answers;
    expect(services?.messageResponse.case).toBe("listServicesResponse");
    const names =
      services?.messageResponse.case === "listServicesResponse"
        ? services.messageResponse.value.service.map((service) => service.name)
        : [];
    expect(names).toEqual(
      expect.arrayContaining([
        ...SERVICES.map((service) => service.typeName),
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
      ]),
    );

    const ingestFiles = filesOf(answers[1]);
    expect(ingestFiles[0]?.name).toBe("audit/v1/ingest.proto");
    // Its imports, transitively: event.proto, rules.proto, the Google files.
    expect(ingestFiles.map((file) => file.name)).toEqual(
      expect.arrayContaining([
        "audit/v1/event.proto",
        "audit/v1/rules.proto",
        "google/api/annotations.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/descriptor.proto",
      ]),
    );
    expect(filesOf(answers[2]).map((file) => file.name)).toEqual(["audit/v1/event.proto"]);

    // The same bytes as the descriptors embedded in gen/.
    const received = [ingestFiles, ...answers.slice(3, 6).map(filesOf)].flat();
    const generated: DescFile[] = [
      file_audit_v1_ingest,
      file_audit_v1_event,
      file_audit_v1_events,
      file_audit_v1_tokens,
      file_audit_v1_admin,
    ];
    for (const file of generated) {
      const proto = received.find((candidate) => candidate.name === file.proto.name);
      expect(proto, file.proto.name).toBeDefined();
      if (proto) {
        expect(toBinary(FileDescriptorProtoSchema, proto)).toEqual(
          toBinary(FileDescriptorProtoSchema, file.proto),
        );
      }
    }

    const unknown = answers[6]?.messageResponse;
    expect(unknown?.case).toBe("errorResponse");
    expect(unknown?.case === "errorResponse" ? unknown.value.errorCode : -1).toBe(Code.NotFound);
    // The stream went on after the error.
    expect(filesOf(answers[7])[0]?.name).toBe("audit/v1/ingest.proto");
    expect(filesOf(answers[8])[0]?.name).toBe("audit/v1/rules.proto");
    const numbers = answers[9]?.messageResponse;
    expect(
      numbers?.case === "allExtensionNumbersResponse" ? numbers.value.extensionNumber : [],
    ).toContain(72295728); // google.api.http

    // A client built from the reflected descriptors alone: rules and routes are there,
    // and it creates an event.
    const registry = createFileRegistry(
      create(FileDescriptorSetSchema, { file: dependenciesFirst(received) }),
    );
    const event = registry.getMessage("audit.v1.Event");
    const entityType = event?.fields.find((field) => field.name === "entity_type");
    expect(entityType && getOption(entityType, fieldRules)).toMatchObject({
      required: true,
      maxLen: 64,
    });
    const ingest = registry.getService("audit.v1.IngestService");
    if (!ingest) throw new Error("IngestService not reflected");
    const createEvent = ingest.methods[0];
    expect(createEvent && getOption(createEvent, httpRule).pattern).toEqual({
      case: "post",
      value: "/api/ingest/event",
    });
    const key = await server.provision();
    const sessions = new Http2SessionManager(server.url);
    try {
      // A method known only at run time, called through the transport.
      if (createEvent?.methodKind !== "unary") throw new Error("CreateEvent not reflected");
      const unary = createEvent as DescMethodUnary;
      const transport = createGrpcTransport({ baseUrl: server.url, sessionManager: sessions });
      const reply = await transport.unary(
        unary,
        undefined,
        undefined,
        { authorization: `Bearer ${key.secret}` },
        { actionKey: "user.login", entityType: "user", entityId: "dyn", actorId: "u1" },
      );
      const response = toJson(unary.output, reply.message) as { eventId: string };
      expect(response.eventId).toMatch(UUID);
    } finally {
      sessions.abort();
    }
  });

  describe("grpc.health.v1.Health", () => {
    const health = () => createClient(Health, createGrpcTransport({ baseUrl: server.url }));

    it("Check answers SERVING for the server and each service, NOT_FOUND for others", async () => {
      expect((await health().check({ service: "" })).status).toBe(ServingStatus.SERVING);
      for (const service of SERVICES) {
        expect((await health().check({ service: service.typeName })).status).toBe(
          ServingStatus.SERVING,
        );
      }
      await expect(health().check({ service: "audit.v1.Nothing" })).rejects.toMatchObject({
        code: Code.NotFound,
      });
    });

    it("List gives every known service; Watch sends the status at once", async () => {
      const list = await health().list({});
      expect(list.statuses[""]?.status).toBe(ServingStatus.SERVING);
      expect(list.statuses["audit.v1.IngestService"]?.status).toBe(ServingStatus.SERVING);
      const watched: ServingStatus[] = [];
      for await (const status of health().watch({ service: "" })) {
        watched.push(status.status);
        break; // ends the stream
      }
      expect(watched).toEqual([ServingStatus.SERVING]);
    });

    it("answers over plain HTTP in production, where other RPCs are refused", async () => {
      const production = await startTestServer({
        NODE_ENV: "production",
        EMBEDDED_IN_PRODUCTION: "1",
      });
      try {
        const client = createClient(Health, createGrpcTransport({ baseUrl: production.url }));
        expect((await client.check({ service: "" })).status).toBe(ServingStatus.SERVING);
        const reflection = bufCurl(emptyDir, [
          "--list-methods",
          "--http2-prior-knowledge",
          production.url,
        ]);
        expect((await reflection).exitCode).not.toBe(0);
      } finally {
        await production.close();
      }
    });
  });
});

describe("grpc.health.v1.Health follows readiness", () => {
  it("NOT_SERVING while the readiness check fails or throws, SERVING again after; Watch sends each change", async () => {
    let state: "ok" | "down" | "throws" = "down";
    const transport = createRouterTransport(
      healthRoutes({
        services: ["audit.v1.IngestService"],
        ready: async () => {
          if (state === "throws") throw new Error("database unreachable");
          return state === "ok";
        },
        watchIntervalMs: 5,
      }),
    );
    const client = createClient(Health, transport);
    expect((await client.check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
    state = "throws";
    expect((await client.check({ service: "audit.v1.IngestService" })).status).toBe(
      ServingStatus.NOT_SERVING,
    );

    const seen: ServingStatus[] = [];
    state = "ok";
    for await (const status of client.watch({ service: "" })) {
      seen.push(status.status);
      if (seen.length === 1) state = "down";
      if (seen.length === 2) state = "ok";
      if (seen.length === 3) break;
    }
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);

    const unknown: ServingStatus[] = [];
    for await (const status of client.watch({ service: "other" })) {
      unknown.push(status.status);
      break;
    }
    expect(unknown).toEqual([ServingStatus.SERVICE_UNKNOWN]);
  });

  it("Check of an unknown service is a NOT_FOUND error", async () => {
    const client = createClient(
      Health,
      createRouterTransport(healthRoutes({ services: [], ready: async () => true })),
    );
    const error = await client.check({ service: "x" }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
  });
});
