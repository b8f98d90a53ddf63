/**
 * The protocol mapping of the Connect routes, in memory (no sockets): an operation's
 * reply and headers reach the client, the edge's facts reach the operation, every kind of
 * ServiceError becomes its gRPC code with the same message and its structured details,
 * unexpected failures become a fixed Internal error and are reported (expected refusals
 * are not), a non-finite number in a Value is a 422 as on REST, and plain HTTP is refused
 * by the HTTPS interceptor. The operations here are stand-ins that throw or echo.
 */
import { create } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventService, ListEventsResponseSchema } from "../../gen/audit/v1/events_pb.js";
import { CreateEventResponseSchema, IngestService } from "../../gen/audit/v1/ingest_pb.js";
import {
  BadRequestSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import type { Operation, OperationCall, Operations } from "../../src/api/operation.js";
import { ServiceError, type ServiceErrorKind } from "../../src/errors.js";
import { routerTransport } from "../support/router-transport.js";
import { rpcFailure } from "../support/rpc.js";
import { validEvent } from "../support/test-server.js";

const created = create(CreateEventResponseSchema, {
  eventId: "0192f0c4-0000-7000-8000-000000000001",
  receivedAt: "2026-11-25T09:00:00.000Z",
});

/** IngestService's CreateEvent served by `operation`. */
function ingest(operation: Operation, options?: Parameters<typeof routerTransport>[1]) {
  const operations: Operations = new Map([[IngestService.method.createEvent, operation]]);
  const { transport, logged } = routerTransport(operations, options);
  return { client: createClient(IngestService, transport), logged };
}

const throwing =
  (error: unknown): Operation =>
  async () => {
    throw error;
  };

describe("the Connect routes in memory", () => {
  it("the operation's message and response headers reach the client", async () => {
    const { client } = ingest(async () => ({
      message: created,
      headers: { "idempotent-replayed": "true" },
      created: false,
    }));
    let replayed: string | null = null;
    const reply = await client.createEvent(validEvent(), {
      onHeader: (headers) => {
        replayed = headers.get("idempotent-replayed");
      },
    });
    expect(reply.eventId).toBe(created.eventId);
    expect(replayed).toBe("true");
  });

  it("the operation reads the edge's facts, its request as JSON, and other headers", async () => {
    const seen: OperationCall[] = [];
    const { client } = ingest(async (call) => {
      seen.push(call);
      return { message: created };
    });
    const headers = {
      authorization: "Bearer pk_test_abc",
      "idempotency-key": "k-1",
      "x-request-id": "req-7",
    };
    await client.createEvent(validEvent({ tenantId: "t1" }), { headers });
    const [call] = seen;
    expect(call?.facts).toMatchObject({
      requestId: "req-7",
      secure: true,
      credential: { kind: "api_key", value: "pk_test_abc", via: "bearer" },
    });
    expect(call?.header("idempotency-key")).toBe("k-1");
    expect(call?.readJson()).toEqual(validEvent({ tenantId: "t1" }));
  });

  it.each<[ServiceErrorKind, Code]>([
    ["bad_request", Code.InvalidArgument],
    ["unauthenticated", Code.Unauthenticated],
    ["permission_denied", Code.PermissionDenied],
    ["quota_exceeded", Code.ResourceExhausted],
    ["not_found", Code.NotFound],
    ["conflict", Code.AlreadyExists],
    ["payload_too_large", Code.ResourceExhausted],
    ["validation", Code.InvalidArgument],
    ["rate_limited", Code.ResourceExhausted],
    ["unavailable", Code.Unavailable],
  ])("a ServiceError %s is %s with the same message", async (kind, code) => {
    const { client, logged } = ingest(throwing(new ServiceError(kind, `refused: ${kind}`)));
    const error = await rpcFailure(client.createEvent(validEvent()));
    expect(error.code).toBe(code);
    expect(error.rawMessage).toBe(`refused: ${kind}`);
    // Only a failure whose cause the client is not told is logged: the database's.
    expect(logged).toHaveLength(kind === "unavailable" ? 1 : 0);
  });

  it("validation issues become BadRequest field violations with google.rpc field paths", async () => {
    const issues = [
      { path: ["changes", 3, "op"], message: "Required", code: "invalid_type" },
      { path: ["entityId"], message: "Too long", code: "too_big" },
    ];
    const { client } = ingest(
      throwing(new ServiceError("validation", "Validation failed", { issues })),
    );
    const error = await rpcFailure(client.createEvent(validEvent()));
    const [badRequest] = error.findDetails(BadRequestSchema);
    expect(
      badRequest?.fieldViolations.map(({ field, description, reason }) => ({
        field,
        description,
        reason,
      })),
    ).toEqual([
      { field: "changes[3].op", description: "Required", reason: "invalid_type" },
      { field: "entityId", description: "Too long", reason: "too_big" },
    ]);
  });

  it("a quota refusal carries QuotaFailure; a rate limit RetryInfo", async () => {
    const quota = { current: 1000, limit: 1000, plan: "free" };
    const quotaError = await rpcFailure(
      ingest(
        throwing(new ServiceError("quota_exceeded", "Monthly event limit reached", { quota })),
      ).client.createEvent(validEvent()),
    );
    const [failure] = quotaError.findDetails(QuotaFailureSchema);
    expect(failure?.violations).toEqual([
      expect.objectContaining({
        subject: "plan:free",
        description: "1000 of 1000 events this month",
      }),
    ]);

    const rateError = await rpcFailure(
      ingest(
        throwing(new ServiceError("rate_limited", "Rate limit exceeded", { retryAfterSeconds: 7 })),
      ).client.createEvent(validEvent()),
    );
    const [retry] = rateError.findDetails(RetryInfoSchema);
    expect(Number(retry?.retryDelay?.seconds)).toBe(7);
  });

  it("an unexpected error is Internal with a fixed message, reported with the request id", async () => {
    const cause = new Error("secret detail: relation events does not exist");
    const { client, logged } = ingest(throwing(cause));
    const error = await rpcFailure(
      client.createEvent(validEvent(), { headers: { "x-request-id": "req-9" } }),
    );
    expect(error.code).toBe(Code.Internal);
    expect(error.rawMessage).toBe("Internal server error");
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ msg: "request failed", reqId: "req-9" });
    expect(logged[0]?.procedure).toMatch(/\/audit\.v1\.IngestService\/CreateEvent$/);
    expect((logged[0]?.err as { message?: string } | undefined)?.message).toBe(cause.message);
  });

  it("an unreachable database is Unavailable with the spec's message", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
      code: "ECONNREFUSED",
    });
    const error = await rpcFailure(ingest(throwing(refused)).client.createEvent(validEvent()));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).toBe(
      "Service temporarily unavailable: the database cannot be reached",
    );
  });

  it("a Value holding NaN or Infinity reaches the operation at its place, as REST's 1e400 does", async () => {
    const seen: unknown[] = [];
    const { client } = ingest(async (call) => {
      seen.push(call.readJson());
      return { message: created };
    });
    for (const n of [Number.NaN, Number.POSITIVE_INFINITY]) {
      await client.createEvent(validEvent({ context: { deep: [{ n }] } }));
    }
    // Validation (not the transport) refuses it, naming context.deep[0].n.
    expect(
      seen.map((json) => (json as { context: { deep: { n: number }[] } }).context.deep[0]?.n),
    ).toEqual([Number.NaN, Number.POSITIVE_INFINITY]);
  });

  it("without the edge's facts a call fails as Internal rather than guess them", async () => {
    const { client, logged } = ingest(async () => ({ message: created }), { withoutFacts: true });
    const error = await rpcFailure(client.createEvent(validEvent()));
    expect(error.code).toBe(Code.Internal);
    expect(logged).toHaveLength(1);
  });

  it("with HTTPS required, a call that is not secure is refused before the operation runs", async () => {
    let ran = false;
    const operation: Operation = async () => {
      ran = true;
      return { message: created };
    };
    const refused = ingest(operation, { requireHttps: true, secure: false });
    const error = await rpcFailure(refused.client.createEvent(validEvent()));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe("HTTPS is required");
    expect(ran).toBe(false);
    expect(refused.logged).toHaveLength(0);

    const allowed = ingest(operation, { requireHttps: true, secure: true });
    await allowed.client.createEvent(validEvent());
    expect(ran).toBe(true);
  });

  it("every method of the operations is served, each by its own operation", async () => {
    const operations: Operations = new Map<Parameters<Operations["set"]>[0], Operation>([
      [IngestService.method.createEvent, async () => ({ message: created })],
      [
        EventService.method.listEvents,
        async () => ({ message: create(ListEventsResponseSchema, { nextCursor: "c1" }) }),
      ],
    ]);
    const { transport } = routerTransport(operations);
    const page = await createClient(EventService, transport).listEvents({});
    expect(page.nextCursor).toBe("c1");
    expect((await createClient(IngestService, transport).createEvent(validEvent())).eventId).toBe(
      created.eventId,
    );
  });
});
