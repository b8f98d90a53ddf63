/**
 * Bulk ingestion over gRPC (HTTP/2, connect-node's gRPC client): CreateEvents as a unary
 * call, and the IngestEvents stream with its per-event acknowledgements, per-event
 * errors, per-event Idempotency-Keys, and the refusals that end it.
 */
import { connect as http2Connect } from "node:http2";
import { create, fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Plan } from "../../gen/audit/v1/admin_pb.js";
import { EventSchema } from "../../gen/audit/v1/event_pb.js";
import {
  type IngestEventsRequest,
  IngestEventsRequestSchema,
  type IngestEventsResponse,
  IngestEventsResponseSchema,
  IngestService,
} from "../../gen/audit/v1/ingest_pb.js";
import { BadRequestSchema, QuotaFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { utcMonth } from "../../src/limits/monthly-quota.js";
import { bearer, listedEvents } from "../events/events-client.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import { events, postBatch } from "./bulk.support.js";

describe("bulk ingestion over gRPC", () => {
  let server: TestServer;
  let sessions: Http2SessionManager;
  let client: Client<typeof IngestService>;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "100" });
    sessions = new Http2SessionManager(server.url);
    client = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }),
    );
  });
  afterAll(async () => {
    sessions?.abort();
    await server?.close();
  });

  const headers = (key: ProvisionedKey) => ({ authorization: `Bearer ${key.secret}` });
  const event = (json: Record<string, unknown>) => fromJson(EventSchema, json as never);
  const storedCount = async (key: ProvisionedKey) => {
    const [row] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [key.projectId],
    );
    return row?.count ?? -1;
  };
  const setUsage = async (key: ProvisionedKey, count: number) => {
    await server.app.db.query(
      `insert into usage_counters (project_id, environment, month, count) values ($1, 'test', $2, $3)
       on conflict (project_id, environment, month) do update set count = excluded.count`,
      [key.projectId, utcMonth(new Date()), count],
    );
  };
  const failure = (reason: unknown) => ConnectError.from(reason);

  /** Streams `requests`; returns the acknowledgements read and the error that ended it. */
  const stream = async (key: ProvisionedKey, requests: IngestEventsRequest[]) => {
    const acks: IngestEventsResponse[] = [];
    let error: ConnectError | undefined;
    try {
      const replies = client.ingestEvents(
        (async function* () {
          yield* requests;
        })(),
        { headers: headers(key) },
      );
      for await (const ack of replies) acks.push(ack);
    } catch (reason) {
      error = failure(reason);
    }
    return { acks, error };
  };
  const request = (json: Record<string, unknown>, idempotencyKey = "") =>
    create(IngestEventsRequestSchema, { event: event(json), idempotencyKey });

  it("CreateEvents stores the valid events and reports the invalid ones in request order", async () => {
    const key = await server.provision();
    const reply = await client.createEvents(
      { events: [event(validEvent({ entityId: "g0" })), event({ entityType: "user" })] },
      { headers: headers(key) },
    );
    expect(reply.results).toHaveLength(2);
    expect(reply.results[0]?.eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(reply.results[1]?.error).toBe("Validation failed");
    expect(
      reply.results[1]?.details.map((issue) => issue.path?.values.map((v) => v.kind.value)),
    ).toEqual([[1, "entityId"], [1, "actorId"], [1]]);
    expect(await storedCount(key)).toBe(1);
    const listed = await listedEvents(server, bearer(key.secret), { entityId: "g0" });
    expect(listed.map((e) => e.eventId)).toEqual([reply.results[0]?.eventId]);
  });

  it("CreateEvents in atomic mode fails with InvalidArgument and field violations, storing nothing", async () => {
    const key = await server.provision();
    const error = await client
      .createEvents(
        { events: [event(validEvent()), event(validEvent({ actorType: "robot" }))], atomic: true },
        { headers: headers(key) },
      )
      .then(() => undefined, failure);
    expect(error?.code).toBe(Code.InvalidArgument);
    const [badRequest] = error?.findDetails(BadRequestSchema) ?? [];
    expect(badRequest?.fieldViolations.map((v) => v.field)).toEqual(["[1].actorType"]);
    expect(await storedCount(key)).toBe(0);
  });

  it("CreateEvents refuses a batch that does not fit under the quota with ResourceExhausted, storing nothing", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 995);
    const error = await client
      .createEvents({ events: events(6).map(event) }, { headers: headers(key) })
      .then(() => undefined, failure);
    expect(error?.code).toBe(Code.ResourceExhausted);
    const [quota] = error?.findDetails(QuotaFailureSchema) ?? [];
    expect(quota?.violations[0]?.subject).toBe("plan:free");
    expect(await storedCount(key)).toBe(0);
  });

  it("CreateEvents replays a batch with its idempotency key and refuses another batch with it", async () => {
    const key = await server.provision();
    const batch = { events: events(3).map(event) };
    const options = { headers: { ...headers(key), "idempotency-key": "g-1" } };
    const first = await client.createEvents(batch, options);
    let replayed: string | null = null;
    const again = await client.createEvents(batch, {
      ...options,
      onHeader: (h) => {
        replayed = h.get("idempotent-replayed");
      },
    });
    expect(again.results.map((r) => r.eventId)).toEqual(first.results.map((r) => r.eventId));
    expect(replayed).toBe("true");
    const conflict = await client
      .createEvents({ events: events(2).map(event) }, options)
      .then(() => undefined, failure);
    expect(conflict?.code).toBe(Code.AlreadyExists);
    expect(await storedCount(key)).toBe(3);
  });

  it("CreateEvents replays a batch first sent over REST with the same key: one canonical body", async () => {
    const key = await server.provision();
    // As REST callers write it: explicit defaults, an empty changes list (protobuf's JSON
    // form drops it) and a field the service ignores.
    const sent = events(2, "same").map((e) => ({ ...e, actorType: "user", changes: [] }));
    const rest = await postBatch(
      server,
      { events: sent.map((e) => ({ ...e, ignored: true })) },
      { ...headers(key), "idempotency-key": "cross-protocol" },
    );
    expect(rest.status).toBe(201);
    const again = await client.createEvents(
      { events: sent.map(event) },
      { headers: { ...headers(key), "idempotency-key": "cross-protocol" } },
    );
    expect(again.results.map((r) => r.eventId)).toEqual(
      (rest.body.results as { eventId: string }[]).map((r) => r.eventId),
    );
    expect(await storedCount(key)).toBe(2);
  });

  it("IngestEvents acknowledges every event in the order sent, past the read-ahead window, each stored and listed", async () => {
    const key = await server.provision();
    const sent = events(600, "s").map((json) => request(json));
    const { acks, error } = await stream(key, sent);
    expect(error).toBeUndefined();
    expect(acks.map((ack) => Number(ack.sequence))).toEqual(sent.map((_, i) => i));
    expect(acks.every((ack) => ack.result?.eventId && ack.result.receivedAt)).toBe(true);
    expect(new Set(acks.map((ack) => ack.result?.eventId)).size).toBe(600);
    expect(await storedCount(key)).toBe(600);
    const listed = await listedEvents(server, bearer(key.secret), { entityId: "s-599" });
    expect(listed.map((e) => e.eventId)).toEqual([acks[599]?.result?.eventId]);
  });

  it("IngestEvents answers an invalid event or a reused idempotency key with its error and goes on", async () => {
    const key = await server.provision();
    const { acks, error } = await stream(key, [
      request(validEvent({ entityId: "k" }), "key-1"),
      request({ entityType: "user" }),
      request(validEvent({ entityId: "k" }), "key-1"),
      request(validEvent({ entityId: "other" }), "key-1"),
      request(validEvent({ entityId: "last" })),
    ]);
    expect(error).toBeUndefined();
    expect(acks).toHaveLength(5);
    expect(acks[1]?.result?.error).toBe("Validation failed");
    expect(acks[1]?.result?.details.map((d) => d.code)).toContain("invalid_type");
    expect(acks[2]?.replayed).toBe(true);
    expect(acks[2]?.result?.eventId).toBe(acks[0]?.result?.eventId);
    expect(acks[3]?.result?.error).toBe(
      "Idempotency key conflict: same key used with different body",
    );
    expect(acks[4]?.result?.eventId).toBeTruthy();
    expect(await storedCount(key)).toBe(2);
  });

  it("IngestEvents shares Create Event's Idempotency-Keys: a key first used over REST replays or conflicts", async () => {
    const key = await server.provision();
    const sent = validEvent({ entityId: "shared-key" });
    const created = await postEvent(server, sent, {
      ...headers(key),
      "idempotency-key": "from-rest",
    });
    expect(created.status).toBe(201);
    const { acks, error } = await stream(key, [
      request(sent, "from-rest"),
      request(validEvent({ entityId: "another" }), "from-rest"),
    ]);
    expect(error).toBeUndefined();
    expect(acks[0]?.replayed).toBe(true);
    expect(acks[0]?.result?.eventId).toBe(created.body.eventId);
    expect(acks[1]?.result?.error).toBe(
      "Idempotency key conflict: same key used with different body",
    );
    expect(await storedCount(key)).toBe(1);
  });

  it("IngestEvents ends with ResourceExhausted when the quota is reached, after acknowledging what was stored", async () => {
    const key = await server.provision({ plan: Plan.FREE });
    await setUsage(key, 997);
    const { acks, error } = await stream(
      key,
      events(6, "q").map((json) => request(json)),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    const stored = acks.filter((ack) => ack.result?.eventId);
    expect(stored).toHaveLength(3);
    expect(
      acks.filter((ack) => ack.result?.error?.startsWith("Monthly event limit")).length,
    ).toBeGreaterThan(0);
    expect(await storedCount(key)).toBe(3);
  });

  /** Sends gRPC frames as they are on one HTTP/2 stream; the answers and grpc-status. */
  const rawStream = (key: ProvisionedKey, frames: Uint8Array[], lastAfterMs: number) =>
    new Promise<{ acks: IngestEventsResponse[]; status: string; message: string }>(
      (resolve, reject) => {
        const session = http2Connect(server.url);
        session.on("error", reject);
        const call = session.request({
          ":method": "POST",
          ":path": "/audit.v1.IngestService/IngestEvents",
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${key.secret}`,
        });
        const chunks: Buffer[] = [];
        let trailers: Record<string, unknown> = {};
        call.on("data", (chunk: Buffer) => chunks.push(chunk));
        call.on("trailers", (received) => {
          trailers = received;
        });
        call.on("error", reject);
        call.on("end", () => {
          session.close();
          const body = Buffer.concat(chunks);
          const acks: IngestEventsResponse[] = [];
          for (let at = 0; at + 5 <= body.length; ) {
            const length = body.readUInt32BE(at + 1);
            acks.push(
              fromBinary(IngestEventsResponseSchema, body.subarray(at + 5, at + 5 + length)),
            );
            at += 5 + length;
          }
          resolve({
            acks,
            status: String(trailers["grpc-status"]),
            message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
          });
        });
        // The last frame a few milliseconds after the others: in a chunk of its own, read
        // after them, while they are being written.
        for (const frame of frames.slice(0, -1)) call.write(frame);
        setTimeout(() => call.end(frames.at(-1)), lastAfterMs);
      },
    );
  const frame = (message: Uint8Array) => {
    const framed = Buffer.alloc(5 + message.length);
    framed.writeUInt32BE(message.length, 1);
    framed.set(message, 5);
    return framed;
  };

  it("IngestEvents acknowledges every event stored before a request it cannot read, then ends", async () => {
    const tooLarge = frame(
      toBinary(
        IngestEventsRequestSchema,
        request(validEvent({ context: { big: "x".repeat(1_100_000) } })),
      ),
    );
    // Not a message (a length-delimited field that runs past the end): the client's fault.
    const malformed = frame(Uint8Array.of(0x0a, 0x02, 0x0a, 0xff));
    for (const [unreadable, status, message] of [
      [
        tooLarge,
        Code.ResourceExhausted,
        /^message size 1100\d+ is larger than configured readMaxBytes 1048576$/,
      ],
      [malformed, Code.InvalidArgument, /^parse binary: /],
    ] as const) {
      // The unreadable request sent after the others, sooner or later: read while they are
      // being written, or after (the runtime drops valid requests that arrive in one chunk
      // with it: neither stored nor answered). Every event stored is answered, whenever.
      let answered = 0;
      for (const lastAfterMs of [2, 5, 20, 80, 250]) {
        const key = await server.provision();
        const valid = events(40, "u").map((json) =>
          frame(toBinary(IngestEventsRequestSchema, request(json))),
        );
        const ended = await rawStream(key, [...valid, unreadable], lastAfterMs);
        expect(ended.status).toBe(String(status));
        expect(ended.message).toMatch(message);
        expect(ended.acks.map((ack) => ack.sequence)).toEqual(ended.acks.map((_, i) => BigInt(i)));
        expect(ended.acks.every((ack) => ack.result?.eventId)).toBe(true);
        expect(await storedCount(key)).toBe(ended.acks.length);
        answered = ended.acks.length;
        if (answered > 0) break;
      }
      expect(answered).toBeGreaterThan(0);
    }
  });

  it("IngestEvents refuses a stream with an unknown key before reading any event", async () => {
    const { acks, error } = await stream(
      { projectId: "", keyId: "", secret: "pk_test_unknownunknownunknown" },
      [request(validEvent())],
    );
    expect(acks).toEqual([]);
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(error?.rawMessage).toBe("Invalid API key");
  });
});
