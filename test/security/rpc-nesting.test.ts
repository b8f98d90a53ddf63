/**
 * Nesting limits hold on every protocol: REST refuses bodies nested over 100 levels
 * before parsing them further (400); Connect and gRPC requests reach the same limit in
 * validation (InvalidArgument naming the field).
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) value = { next: value };
  return value;
}

describe("nesting limit over Connect", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("a context nested 150 levels deep is InvalidArgument naming context; 100 levels is accepted", async () => {
    const { secret } = await server.provision();
    const client = rpcClient(IngestService, server.url, "connect-json");
    const headers = { authorization: `Bearer ${secret}` };
    const accepted = await client.createEvent(validEvent({ context: nested(100) }), { headers });
    expect(accepted.eventId).toMatch(/^[0-9a-f-]{36}$/);

    const error = await rpcFailure(
      client.createEvent(validEvent({ context: nested(150) }), { headers }),
    );
    expect(error?.code).toBe(Code.InvalidArgument);
    const [badRequest] = error?.findDetails(BadRequestSchema) ?? [];
    expect(badRequest?.fieldViolations).toEqual([
      expect.objectContaining({ field: "context", reason: "too_big" }),
    ]);
  });
});
