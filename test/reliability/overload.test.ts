/**
 * Admission control (issue 26, overload; src/transport/admission.ts) on a real server
 * with small limits. The requests admitted are held in the database (a transaction of
 * the test holds a lock the writes need: on PGlite, its one connection), so that the
 * limit is reached for certain; then a burst beyond it, over REST, Connect, gRPC and
 * bulk, must be refused at once with 503 and `Retry-After: 1` (Unavailable with a
 * RetryInfo of 1 s), store nothing, and leave /healthz answering, while an IngestEvents
 * stream opened meanwhile waits for slots instead of failing; once the hold ends, the
 * admitted requests are answered 201, the stream's events are acknowledged, normal
 * requests succeed, and every acknowledged event is listed. Streams pipelining many more
 * events than the limit complete with every event acknowledged once. Run on both storages.
 */
import { randomUUID } from "node:crypto";
import { create, fromJson } from "@bufbuild/protobuf";
import { type Client, Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Event, EventSchema } from "../../gen/audit/v1/event_pb.js";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import {
  IngestEventsRequestSchema,
  type IngestEventsResponse,
  IngestService,
} from "../../gen/audit/v1/ingest_pb.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { bearer, listAll, listEvents } from "../events/events-client.js";
import { events, postBatch } from "../ingest/bulk.support.js";
import { rawRequest } from "../support/raw-socket.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const INGEST_LIMIT = 4;
const READ_LIMIT = 2;
const OVERLOADED = "Service temporarily unavailable: too many requests in progress";
/** A refusal must not wait for the held requests: far below the hold, even on a busy machine. */
const FAST_MS = 3_000;

describe("admission control: a burst beyond the limit", () => {
  let server: TestServer;
  let key: ProvisionedKey;
  let sessions: Http2SessionManager;
  let releaseHold: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    server = await startTestServer({
      INGEST_MAX_IN_FLIGHT: String(INGEST_LIMIT),
      READ_MAX_IN_FLIGHT: String(READ_LIMIT),
      RATE_LIMIT_MAX: "1000000",
      // The held requests authenticate from the cache, not from the held database.
      API_KEY_CACHE_SECONDS: "300",
    });
    key = await server.provision();
    sessions = new Http2SessionManager(server.url);
    // Warm the key cache and every path once.
    expect((await postEvent(server, validEvent(), bearer(key.secret))).status).toBe(201);
  });
  afterEach(async () => {
    await releaseHold?.();
    releaseHold = undefined;
  });
  afterAll(async () => {
    sessions?.abort();
    await server?.close();
  });

  /** Holds `table` locked in `mode` until released (PGlite: its one connection too). */
  const hold = async (table: string, mode: string) => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: () => void = () => {};
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const transaction = server.app.db.transaction(async (tx) => {
      await tx.query(`lock table ${table} in ${mode} mode`);
      locked();
      await released;
    });
    await isLocked;
    releaseHold = async () => {
      release();
      await transaction;
    };
    return releaseHold;
  };

  /** The requests in progress of a class, as /metrics would report them. */
  const inFlight = async (admissionClass: string): Promise<number> => {
    const metric = server.app.metrics.registry.getSingleMetric("audit_requests_in_flight");
    const value = await metric?.get();
    return value?.values.find((v) => v.labels.class === admissionClass)?.value ?? 0;
  };
  const waitForInFlight = async (admissionClass: string, count: number) => {
    const deadline = Date.now() + 10_000;
    while ((await inFlight(admissionClass)) !== count) {
      if (Date.now() > deadline) throw new Error(`${admissionClass}: never ${count} in flight`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const timed = async <T>(work: Promise<T>): Promise<{ value: T; ms: number }> => {
    const started = performance.now();
    const value = await work;
    return { value, ms: performance.now() - started };
  };
  const expectRetryInfo = (error: ConnectError) => {
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).toBe(OVERLOADED);
    const [retry] = error.findDetails(RetryInfoSchema);
    expect(Number(retry?.retryDelay?.seconds)).toBe(1);
  };
  /** audit_requests_overloaded_total of the ingest class for `reason`. */
  const refusals = async (reason: string): Promise<number> => {
    const metric = server.app.metrics.registry.getSingleMetric("audit_requests_overloaded_total");
    const value = await metric?.get();
    return (
      value?.values.find((v) => v.labels.class === "ingest" && v.labels.reason === reason)?.value ??
      0
    );
  };
  const storedCount = async () => {
    const [row] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [key.projectId],
    );
    return row?.count ?? -1;
  };

  it("refuses the excess of every protocol at once with 503 and Retry-After, then answers the admitted and recovers", async () => {
    const headers = bearer(key.secret);
    const storedBefore = await storedCount();
    const release = await hold("events", "exclusive");

    // The admitted: each with its Idempotency-Key, held by the lock.
    const admittedKeys = Array.from({ length: INGEST_LIMIT }, () => randomUUID());
    const admitted = admittedKeys.map((idempotencyKey, i) =>
      postEvent(server, validEvent({ entityId: `held-${i}` }), {
        ...headers,
        "idempotency-key": idempotencyKey,
      }),
    );
    await waitForInFlight("ingest", INGEST_LIMIT);

    // The burst, every way of ingesting.
    const connect = rpcClient(IngestService, server.url, "connect-json");
    const grpc = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }),
    );
    const options = { headers };
    const event = fromJson(EventSchema, validEvent({ entityId: "burst" }) as never);
    const rest = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        timed(
          postEvent(server, validEvent({ entityId: `burst-${i}` }), {
            ...headers,
            "idempotency-key": randomUUID(),
          }),
        ),
      ),
    );
    const bulk = await timed(postBatch(server, { events: events(3, "burst") }, headers));
    const rpcs = await Promise.all([
      timed(rpcFailure(connect.createEvent(event, options))),
      timed(rpcFailure(connect.createEvents({ events: [event, event] }, options))),
      timed(rpcFailure(grpc.createEvent(event, options))),
      timed(rpcFailure(grpc.createEvents({ events: [event] }, options))),
    ]);
    // A stream is flow-controlled, not refused: its events wait for slots.
    const stream = ingestStream(grpc, [event, event], options);
    const streamState = await Promise.race([
      stream.then(() => "settled"),
      new Promise((resolve) => setTimeout(resolve, 300, "waiting")),
    ]);
    // The probe is never limited.
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);

    for (const { value, ms } of [...rest, bulk]) {
      expect(value.status).toBe(503);
      expect(value.body).toEqual({ error: OVERLOADED });
      expect(value.headers.get("retry-after")).toBe("1");
      expect(ms).toBeLessThan(FAST_MS);
    }
    for (const { value, ms } of rpcs) {
      expectRetryInfo(value);
      expect(ms).toBeLessThan(FAST_MS);
    }
    expect(streamState).toBe("waiting");
    // Still held: nothing of the refused requests took a slot.
    expect(await inFlight("ingest")).toBe(INGEST_LIMIT);

    await release();
    const answers = await Promise.all(admitted);
    expect(answers.map((answer) => answer.status)).toEqual(admittedKeys.map(() => 201));
    const streamAcks = await stream;
    expect(streamAcks.map((ack) => ack.sequence)).toEqual([0n, 1n]);
    for (const ack of streamAcks) expect(ack.result?.eventId).toMatch(/^[0-9a-f-]{36}$/);
    await waitForInFlight("ingest", 0);

    // Normal requests succeed again, on every protocol.
    const after = await postEvent(server, validEvent({ entityId: "after-rest" }), headers);
    expect(after.status).toBe(201);
    const afterConnect = await connect.createEvent(event, options);
    const afterGrpc = await grpc.createEvent(event, options);
    const afterBulk = await postBatch(server, { events: events(2, "after-bulk") }, headers);
    expect(afterBulk.status).toBe(201);

    // Every acknowledged event is stored and listed; nothing refused was stored.
    const acknowledged = [
      ...answers.map((answer) => answer.body.eventId as string),
      ...streamAcks.map((ack) => ack.result?.eventId ?? ""),
      after.body.eventId as string,
      afterConnect.eventId,
      afterGrpc.eventId,
      ...(afterBulk.body.results as { eventId: string }[]).map((result) => result.eventId),
    ];
    expect(await storedCount()).toBe(storedBefore + acknowledged.length);
    const listed = new Set((await listAll(server, headers)).events.map((e) => e.eventId));
    for (const eventId of acknowledged) expect(listed.has(eventId)).toBe(true);
    // Retrying an admitted request with its key replays it: it was not stored twice.
    const retried = await postEvent(server, validEvent({ entityId: "held-0" }), {
      ...headers,
      "idempotency-key": admittedKeys[0] ?? "",
    });
    expect(retried.status).toBe(200);
    expect(retried.body.eventId).toBe(answers[0]?.body.eventId);
  }, 60_000);

  it("a REST ingest is refused before its body is read or its credential checked: one whose body never comes gets the 503 at once", async () => {
    const release = await hold("events", "exclusive");
    const headers = bearer(key.secret);
    const admitted = Array.from({ length: INGEST_LIMIT }, (_, i) =>
      postEvent(server, validEvent({ entityId: `held-early-${i}` }), headers),
    );
    await waitForInFlight("ingest", INGEST_LIMIT);
    const refusedBefore = await refusals("in_flight");

    // 5,000 bytes announced, 10 sent: an answer can only come from before the body.
    const partial = (path: string) =>
      Buffer.from(
        `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n` +
          'content-type: application/json\r\ncontent-length: 5000\r\n\r\n{"events":',
      );
    const answers = await Promise.all(
      ["/api/ingest/event", "/api/ingest/events"].map((path) =>
        rawRequest(server.port, partial(path), FAST_MS),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.headers["retry-after"]).toBe("1");
      expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(answer.headers["x-request-id"]).toMatch(/^[\w-]+$/);
      expect(JSON.parse(answer.body)).toEqual({ error: OVERLOADED });
    }
    expect(await refusals("in_flight")).toBe(refusedBefore + 2);
    // A body over the limit (1 MB) or of unknown length is not read to its end to keep the
    // connection: the 503 closes it (a keep-alive client, 2 MB announced, 10 bytes sent).
    const unread = [
      "content-length: 2000000\r\n\r\n0123456789",
      "transfer-encoding: chunked\r\n\r\na\r\n0123456789\r\n",
    ];
    for (const framing of unread) {
      const closed = await rawRequest(
        server.port,
        Buffer.from(`POST /api/ingest/event HTTP/1.1\r\nhost: 127.0.0.1\r\n${framing}`),
        FAST_MS,
      );
      expect(closed.status).toBe(503);
      expect(closed.headers.connection).toBe("close");
      expect(JSON.parse(closed.body)).toEqual({ error: OVERLOADED });
    }
    expect(await refusals("in_flight")).toBe(refusedBefore + 4);
    expect(await inFlight("ingest")).toBe(INGEST_LIMIT);

    await release();
    expect((await Promise.all(admitted)).map((answer) => answer.status)).toEqual(
      admitted.map(() => 201),
    );
    // Not refused once there is room: the same request waits for its body, as usual.
    await waitForInFlight("ingest", 0);
    const unrefused = rawRequest(server.port, partial("/api/ingest/event"), 500);
    await expect(unrefused).rejects.toThrow("no response within 500 ms");
  }, 60_000);

  it("streams pipelining many more events than the limit wait for slots: every event is acknowledged once, and requests beyond the limit are still refused at once", async () => {
    const headers = bearer(key.secret);
    const options = { headers };
    const grpc = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }),
    );
    const storedBefore = await storedCount();
    const perStream = 60;
    const streams = 3;
    // Held until the streams have read all the slots, so that they have to wait.
    const release = await hold("events", "exclusive");
    const running = Array.from({ length: streams }, (_, s) =>
      ingestStream(
        grpc,
        Array.from({ length: perStream }, (_, i) =>
          fromJson(EventSchema, validEvent({ entityId: `piped-${s}-${i}` }) as never),
        ),
        options,
      ),
    );
    await waitForInFlight("ingest", INGEST_LIMIT);
    // A request finds no slot while the streams wait: the fast refusal, not a wait.
    const refused = await timed(postEvent(server, validEvent(), headers));
    expect(refused.value.status).toBe(503);
    expect(refused.value.headers.get("retry-after")).toBe("1");
    expect(refused.ms).toBeLessThan(FAST_MS);
    expect(await inFlight("ingest")).toBe(INGEST_LIMIT);

    await release();
    const acked = await Promise.all(running);
    for (const acks of acked) {
      // One acknowledgement per event, in the order sent, each a stored event.
      expect(acks.map((ack) => ack.sequence)).toEqual(
        Array.from({ length: perStream }, (_, i) => BigInt(i)),
      );
      for (const ack of acks) {
        expect(ack.result?.error).toBeUndefined();
        expect(ack.replayed).toBe(false);
      }
    }
    const ids = acked.flat().map((ack) => ack.result?.eventId ?? "");
    expect(new Set(ids).size).toBe(streams * perStream);
    await waitForInFlight("ingest", 0);
    expect(await storedCount()).toBe(storedBefore + streams * perStream);
  }, 60_000);

  it("reads have their own budget: lists beyond it are refused at once, and ingestion keeps its slots", async () => {
    const headers = bearer(key.secret);
    const release = await hold("event_index", "access exclusive");
    const held = Array.from({ length: READ_LIMIT }, () => listEvents(server, headers));
    await waitForInFlight("read", READ_LIMIT);

    const refused = await timed(listEvents(server, headers));
    expect(refused.value.status).toBe(503);
    expect(refused.value.body).toEqual({ error: OVERLOADED });
    expect(refused.value.headers.get("retry-after")).toBe("1");
    expect(refused.ms).toBeLessThan(FAST_MS);
    const rpc = await rpcFailure(
      rpcClient(EventService, server.url, "connect-json").listEvents({}, { headers }),
    );
    expectRetryInfo(rpc);
    expect(await inFlight("ingest")).toBe(0);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // On PostgreSQL the journal does not need event_index: ingestion goes on meanwhile
    // (PGlite's one connection is held by the test, so there it waits for the release).
    if (server.driver === "postgres") {
      expect((await postEvent(server, validEvent(), headers)).status).toBe(201);
    }

    await release();
    for (const answer of await Promise.all(held)) expect(answer.status).toBe(200);
    await waitForInFlight("read", 0);
    expect((await listEvents(server, headers)).status).toBe(200);
  }, 60_000);
});

/** Sends `events` on one IngestEvents stream, all at once; resolves with every reply. */
async function ingestStream(
  client: Client<typeof IngestService>,
  events: Event[],
  options: { headers: Record<string, string> },
): Promise<IngestEventsResponse[]> {
  const replies = client.ingestEvents(
    (async function* () {
      for (const event of events) yield create(IngestEventsRequestSchema, { event });
    })(),
    options,
  );
  const acks: IngestEventsResponse[] = [];
  for await (const ack of replies) acks.push(ack);
  return acks;
}
