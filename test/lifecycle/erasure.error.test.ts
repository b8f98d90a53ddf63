/**
 * EraseEvents and ListErasures refuse bad input with a clear message, before erasing
 * anything: no selector or two, more than 1,000 ids, a malformed id, an empty actor, no
 * environment, a malformed or unknown project; and the admin token is required.
 */
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService, Environment } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { bearer, createEvents, listedEvents } from "../events/events-client.js";
import { rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

let server: TestServer;
let projectId: string;
let secret: string;
let ids: string[];

beforeAll(async () => {
  server = await startTestServer();
  ({ projectId, secret } = await server.provision());
  ids = await createEvents(server, secret, [validEvent(), validEvent()], 1);
});

afterAll(async () => {
  await server?.close();
});

const refusal = async (request: Record<string, unknown>) => {
  const error = await rpcFailure(
    server.admin.eraseEvents({ projectId, environment: Environment.TEST, ...request }),
  );
  return [Code[error.code], error.rawMessage];
};

describe("EraseEvents refuses", () => {
  it("a request without a selector, or with two", async () => {
    const one = "exactly one selector is required: eventIds, actorId or tenantId";
    expect(await refusal({})).toEqual(["InvalidArgument", one]);
    expect(await refusal({ eventIds: ids, actorId: "user_123" })).toEqual(["InvalidArgument", one]);
    expect(await refusal({ actorId: "a", tenantId: "t" })).toEqual(["InvalidArgument", one]);
  });

  it("more than 1,000 ids, a malformed id, an empty actor or tenant", async () => {
    const many = Array.from({ length: 1001 }, () => randomUUID());
    expect(await refusal({ eventIds: many })).toEqual([
      "InvalidArgument",
      "eventIds must hold at most 1000 ids",
    ]);
    expect(await refusal({ eventIds: [ids[0], "not-a-uuid"] })).toEqual([
      "InvalidArgument",
      "eventIds[1] must be a UUID",
    ]);
    expect(await refusal({ actorId: "" })).toEqual([
      "InvalidArgument",
      "actorId must not be empty",
    ]);
    expect(await refusal({ tenantId: "" })).toEqual([
      "InvalidArgument",
      "tenantId must not be empty",
    ]);
  });

  it("a missing environment, a malformed or unknown project", async () => {
    expect(await refusal({ environment: Environment.UNSPECIFIED, eventIds: ids })).toEqual([
      "InvalidArgument",
      "environment must be ENVIRONMENT_TEST or ENVIRONMENT_LIVE",
    ]);
    expect(await refusal({ projectId: "p1", eventIds: ids })).toEqual([
      "InvalidArgument",
      "projectId must be a UUID",
    ]);
    const unknown = randomUUID();
    expect(await refusal({ projectId: unknown, eventIds: ids })).toEqual([
      "NotFound",
      `Project ${unknown} not found`,
    ]);
    const list = await rpcFailure(server.admin.listErasures({ projectId: unknown }));
    expect([Code[list.code], list.rawMessage]).toEqual([
      "NotFound",
      `Project ${unknown} not found`,
    ]);
  });

  it("a call without the admin token", async () => {
    const anonymous = createAdminClient(server.url, undefined);
    const error = await rpcFailure(
      anonymous.eraseEvents({ projectId, environment: Environment.TEST, eventIds: ids }),
    );
    expect(Code[error.code]).toBe("Unauthenticated");
    expect(AdminService.method.eraseEvents.name).toBe("EraseEvents");
  });

  it("and none of these erased anything", async () => {
    expect(await listedEvents(server, bearer(secret))).toHaveLength(2);
    expect((await server.admin.listErasures({ projectId })).erasures).toEqual([]);
  });
});
