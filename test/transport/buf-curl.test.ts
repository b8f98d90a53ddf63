/**
 * `buf curl` (an independent Go client, with the schema compiled from our protos) calls
 * CreateEvent over each RPC protocol on the shared cleartext port.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BUF = `${ROOT}node_modules/.bin/buf`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PROCEDURE = "audit.v1.IngestService/CreateEvent";

interface CurlResult {
  /** Exit code; buf curl exits with 8 times the RPC code on an RPC error. */
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `buf curl` with the workspace (proto/ and third_party/proto) as its schema. */
function bufCurl(args: string[]): Promise<CurlResult> {
  return new Promise((resolve, reject) => {
    execFile(
      BUF,
      ["curl", "--schema", ".", ...args],
      { cwd: ROOT, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error && (error.killed || typeof error.code !== "number")) {
          reject(new Error(`buf curl did not run to completion: ${error.message}\n${stderr}`));
          return;
        }
        resolve({ exitCode: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}

interface Protocol {
  name: string;
  flags: string[];
}

const PROTOCOLS: Protocol[] = [
  { name: "connect (HTTP/1.1)", flags: ["--protocol", "connect"] },
  {
    name: "connect (HTTP/2 prior knowledge)",
    flags: ["--protocol", "connect", "--http2-prior-knowledge"],
  },
  { name: "grpcweb (HTTP/1.1)", flags: ["--protocol", "grpcweb"] },
  {
    name: "grpc (HTTP/2 prior knowledge)",
    flags: ["--protocol", "grpc", "--http2-prior-knowledge"],
  },
];

describe("buf curl on the shared port", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  describe.each(PROTOCOLS)("$name", ({ flags }) => {
    it("CreateEvent prints eventId and receivedAt as JSON", async () => {
      const key = await server.provision();
      const result = await bufCurl([
        ...flags,
        "-H",
        `authorization: Bearer ${key.secret}`,
        "-d",
        JSON.stringify(validEvent()),
        `${server.url}/${PROCEDURE}`,
      ]);
      expect(result.stderr).toBe("");
      expect(result.exitCode).toBe(0);
      const reply = JSON.parse(result.stdout) as Record<string, unknown>;
      expect(Object.keys(reply).sort()).toEqual(["eventId", "receivedAt"]);
      expect(reply.eventId).toMatch(UUID);
      expect(Number.isNaN(Date.parse(String(reply.receivedAt)))).toBe(false);
    });

    it("CreateEvent with x-project-key and an idempotency key replays the eventId", async () => {
      const key = await server.provision();
      const args = [
        ...flags,
        "-H",
        `x-project-key: ${key.secret}`,
        "-H",
        `idempotency-key: buf-${key.keyId}`,
        "-d",
        JSON.stringify(validEvent()),
        `${server.url}/${PROCEDURE}`,
      ];
      const first = await bufCurl(args);
      const second = await bufCurl(args);
      expect([first.exitCode, second.exitCode]).toEqual([0, 0]);
      expect(JSON.parse(second.stdout)).toEqual(JSON.parse(first.stdout));
    });

    it("a missing key prints an unauthenticated error", async () => {
      const result = await bufCurl([
        ...flags,
        "-d",
        JSON.stringify(validEvent()),
        `${server.url}/${PROCEDURE}`,
      ]);
      expect(result.exitCode).toBe(16 * 8);
      expect(result.stdout).toBe("");
      expect(JSON.parse(result.stderr)).toEqual({
        code: "unauthenticated",
        message: "Missing API key. Provide a Bearer token or X-Project-Key header",
      });
    });

    it("an invalid event prints invalid_argument with a google.rpc.BadRequest detail", async () => {
      const key = await server.provision();
      const result = await bufCurl([
        ...flags,
        "-H",
        `authorization: Bearer ${key.secret}`,
        "-d",
        JSON.stringify({ entityType: "user", occurredAt: "yesterday" }),
        `${server.url}/${PROCEDURE}`,
      ]);
      expect(result.exitCode).toBe(3 * 8);
      const error = JSON.parse(result.stderr) as {
        code: string;
        message: string;
        details: { type: string; value: string }[];
      };
      expect(error.code).toBe("invalid_argument");
      expect(error.message).toBe("Validation failed");
      expect(error.details.map((detail) => detail.type)).toEqual(["google.rpc.BadRequest"]);
      const badRequest = fromBinary(
        BadRequestSchema,
        Buffer.from(error.details[0]?.value ?? "", "base64"),
      );
      expect(badRequest.fieldViolations.map((v) => [v.field, v.reason]).sort()).toEqual(
        [
          ["", "custom"],
          ["actorId", "invalid_type"],
          ["entityId", "invalid_type"],
          ["occurredAt", "invalid_string"],
        ].sort(),
      );
    });
  });
});
