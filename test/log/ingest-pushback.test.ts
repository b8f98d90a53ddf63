/**
 * Pushback while the integrator is behind (src/log/ingest-pushback.ts), through a real
 * server on both storages. A journal row whose payload does not open stops its log's
 * integrator there (it skips nothing), so with the row acknowledged 10 s ago the log's lag
 * stands over the bound (1 s here) for as long as the row stays: Create Event and a batch
 * for that log get 503 with Retry-After (Unavailable with RetryInfo over RPC), nothing of
 * theirs stored; another project's log is served meanwhile; an IngestEvents stream reads
 * nothing, and acknowledges its event once the log is back under the bound. Only load
 * pushes back: once no pass has moved the log for 10 s (a stalled integrator) it takes
 * events again. A call waits for its log (INGEST_PUSHBACK_WAIT_MS) before it is refused,
 * and is taken, once, if the log catches up meanwhile.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import {
  IngestEventsRequestSchema,
  type IngestEventsResponse,
  IngestService,
} from "../../gen/audit/v1/ingest_pb.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { readBacklogs } from "../../src/store/log-integration.js";
import { bearer } from "../events/events-client.js";
import { events, postBatch } from "../ingest/bulk.support.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const BEHIND = "Service temporarily unavailable: recent events are still being indexed";
const STUCK_ROW = "01a20000-0000-7000-8000-0000000000bb";

/** A journal row acknowledged 10 s ago whose payload does not open: its log's integrator stops there. */
const insertStuckRow = (server: TestServer, projectId: string) =>
  server.app.db.query(
    `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                         payload)
     values ($1, 'test', $2, now(), now() - interval '10 seconds', 1, $3)`,
    [projectId, STUCK_ROW, Buffer.from([1, 2, 3])],
  );

describe("pushback while the integrator is behind", () => {
  let server: TestServer;
  let stuck: ProvisionedKey;
  let other: ProvisionedKey;

  beforeAll(async () => {
    // Calls wait 300 ms for their log before the 503 (the waiting itself: below).
    server = await startTestServer({ INGEST_MAX_LAG_SECONDS: "1", INGEST_PUSHBACK_WAIT_MS: "300" });
    stuck = await server.provision();
    other = await server.provision();
  }, 120_000);
  afterAll(() => server?.close());

  const storedCount = async (projectId: string) => {
    const [row] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [projectId],
    );
    return row?.count ?? -1;
  };
  /** Waits until Create Event for `secret` answers `status` (the gate samples every 500 ms). */
  const untilCreateAnswers = async (secret: string, status: number) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const response = await postEvent(server, validEvent(), bearer(secret));
      if (response.status === status) return response;
      if (Date.now() > deadline) throw new Error(`Create Event never answered ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it("refuses a lagging log's Create Event and batch with 503 and Retry-After, serves other logs, holds a stream, and takes events again once caught up", async () => {
    expect((await postEvent(server, validEvent(), bearer(stuck.secret))).status).toBe(201);
    // Listed: a pass has just moved the log, so it counts as loaded, not stalled.
    expect(
      (await rpcClient(EventService, server.url).listEvents({}, { headers: bearer(stuck.secret) }))
        .events,
    ).toHaveLength(1);
    await insertStuckRow(server, stuck.projectId);

    const refused = await untilCreateAnswers(stuck.secret, 503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body).toEqual({ error: BEHIND });
    const storedWhileBehind = await storedCount(stuck.projectId);

    const batch = await postBatch(server, { events: events(3, "held") }, bearer(stuck.secret));
    expect(batch.status).toBe(503);
    expect(batch.headers.get("retry-after")).toBe("1");
    expect(batch.body).toEqual({ error: BEHIND });

    const connect = rpcClient(IngestService, server.url, "connect-json");
    const rpc = await rpcFailure(
      connect.createEvent(
        { actionKey: "doc.viewed", entityType: "doc", entityId: "rpc", actorId: "u1" },
        { headers: bearer(stuck.secret) },
      ),
    );
    expect(rpc.code).toBe(Code.Unavailable);
    expect(rpc.rawMessage).toBe(BEHIND);
    expect(Number(rpc.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds)).toBe(1);
    expect(await storedCount(stuck.projectId)).toBe(storedWhileBehind);

    // Another log is not held back by this one.
    expect((await postEvent(server, validEvent(), bearer(other.secret))).status).toBe(201);

    // A stream's event waits for its log instead of being refused.
    const grpc = rpcClient(IngestService, server.url, "grpc");
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const acks: IngestEventsResponse[] = [];
    const streamDone = (async () => {
      const replies = grpc.ingestEvents(
        (async function* () {
          yield create(IngestEventsRequestSchema, {
            event: {
              actionKey: "doc.viewed",
              entityType: "doc",
              entityId: "streamed",
              actorId: "u1",
            },
          });
          await released;
        })(),
        { headers: bearer(stuck.secret) },
      );
      for await (const ack of replies) acks.push(ack);
    })();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(acks).toEqual([]);
    expect(await storedCount(stuck.projectId)).toBe(storedWhileBehind);

    // The row gone, the integrator passes the log: events are taken again.
    await server.app.db.query("delete from events where project_id = $1 and id = $2", [
      stuck.projectId,
      STUCK_ROW,
    ]);
    await untilCreateAnswers(stuck.secret, 201);
    release();
    await streamDone;
    expect(acks).toHaveLength(1);
    expect(acks[0]?.result?.eventId).toEqual(expect.any(String));
    expect(acks[0]?.result?.error).toBeUndefined();

    const metric = server.app.metrics.registry.getSingleMetric("audit_requests_overloaded_total");
    const counted = (await metric?.get())?.values.find(
      (v) => v.labels.class === "ingest" && v.labels.reason === "index_lag",
    );
    expect(counted?.value).toBeGreaterThanOrEqual(3);
    // Lists of the log answer again too (they waited for the same integrator).
    const listed = await rpcClient(EventService, server.url).listEvents(
      {},
      { headers: bearer(stuck.secret) },
    );
    expect(listed.events.length).toBe(await storedCount(stuck.projectId));
  }, 90_000);

  it("a log whose integrator is stalled (no pass moved it for 10 s) takes events again: storing them matters more than listing them soon", async () => {
    const stalled = await server.provision();
    expect((await postEvent(server, validEvent(), bearer(stalled.secret))).status).toBe(201);
    expect(
      (
        await rpcClient(EventService, server.url).listEvents(
          {},
          { headers: bearer(stalled.secret) },
        )
      ).events,
    ).toHaveLength(1);
    await insertStuckRow(server, stalled.projectId);
    await untilCreateAnswers(stalled.secret, 503);
    // Ten seconds after the last pass moved the log, it is stalled, not loaded.
    const taken = await untilCreateAnswers(stalled.secret, 201);
    expect(taken.body.eventId).toEqual(expect.any(String));
    const [row] = await server.app.db.query<{ moved: boolean }>(
      `select integrated_at < now() - interval '10 seconds' as moved from event_logs
        where project_id = $1 and environment = 'test'`,
      [stalled.projectId],
    );
    expect(row?.moved).toBe(true);
    await server.app.db.query("delete from events where project_id = $1 and id = $2", [
      stalled.projectId,
      STUCK_ROW,
    ]);
  }, 90_000);

  it("reads a loaded log's backlog: its pending events counted up to the cap, the age of the oldest, and every log's integrated total", async () => {
    const loaded = await server.provision();
    expect((await postEvent(server, validEvent(), bearer(loaded.secret))).status).toBe(201);
    expect(
      (await rpcClient(EventService, server.url).listEvents({}, { headers: bearer(loaded.secret) }))
        .events,
    ).toHaveLength(1);
    const before = await readBacklogs(server.app.db, 100, 60);
    expect(before.backlogs.find((log) => log.projectId === loaded.projectId)).toBeUndefined();
    expect(before.integrated).toBeGreaterThanOrEqual(1n);

    // Five rows that do not open, the first received 10 s ago: the log stops at them.
    await server.app.db.query(
      `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                           payload)
       select $1, 'test', ('01a20000-0000-7000-8000-' || lpad(g::text, 12, '0'))::uuid, now(),
              now() - make_interval(secs => case when g = 1 then 10 else 0 end), 1, '\\x010203'
         from generate_series(1, 5) as g`,
      [loaded.projectId],
    );
    const find = async (cap: number, movedWithin: number) =>
      (await readBacklogs(server.app.db, cap, movedWithin)).backlogs.find(
        (log) => log.projectId === loaded.projectId,
      );
    const all = await find(100, 60);
    expect(all?.environment).toBe("test");
    expect(all?.pending).toBe(5);
    expect(all?.oldestAgeSeconds).toBeGreaterThanOrEqual(9.5);
    expect(all?.oldestAgeSeconds).toBeLessThan(60);
    expect((await find(3, 60))?.pending).toBe(3);
    // A log no pass moved within the window is stalled, not loaded: not read.
    await server.app.db.query(
      `update event_logs set integrated_at = now() - interval '2 minutes'
        where project_id = $1 and environment = 'test'`,
      [loaded.projectId],
    );
    expect(await find(100, 60)).toBeUndefined();
    await server.app.db.query(
      "delete from events where project_id = $1 and id::text like '01a20000-0000-7000-8000-%'",
      [loaded.projectId],
    );
  }, 60_000);
});

describe("a call waits for its log before the pushback refuses it", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      INGEST_MAX_LAG_SECONDS: "1",
      INGEST_PUSHBACK_WAIT_MS: "30000",
    });
  }, 120_000);
  afterAll(() => server?.close());

  it("holds a Create Event while its log is behind and answers 201 once the integrator passes it, storing it once", async () => {
    const key = await server.provision();
    expect((await postEvent(server, validEvent(), bearer(key.secret))).status).toBe(201);
    expect(
      (await rpcClient(EventService, server.url).listEvents({}, { headers: bearer(key.secret) }))
        .events,
    ).toHaveLength(1);
    await insertStuckRow(server, key.projectId);
    // What the pushback samples (every 500 ms) now shows the log behind; give it samples.
    const backlog = await readBacklogs(server.app.db, 100, 60);
    expect(backlog.backlogs.find((log) => log.projectId === key.projectId)?.pending).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    let answered = false;
    const held = postEvent(server, validEvent({ entityId: "held" }), bearer(key.secret)).then(
      (response) => {
        answered = true;
        return response;
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(answered).toBe(false);
    await server.app.db.query("delete from events where project_id = $1 and id = $2", [
      key.projectId,
      STUCK_ROW,
    ]);
    const response = await held;
    expect(response.status).toBe(201);
    expect(response.body.eventId).toEqual(expect.any(String));

    const listed = await rpcClient(EventService, server.url).listEvents(
      { entityId: "held" },
      { headers: bearer(key.secret) },
    );
    expect(listed.events.map((event) => event.eventId)).toEqual([response.body.eventId]);
    const waits = server.app.metrics.registry.getSingleMetric("audit_ingest_pushback_wait_seconds");
    // A histogram's values are named (`_count`, `_sum`, `_bucket`).
    const values = ((await waits?.get())?.values ?? []) as { metricName?: string; value: number }[];
    const count = values.find((v) => v.metricName === "audit_ingest_pushback_wait_seconds_count");
    const sum = values.find((v) => v.metricName === "audit_ingest_pushback_wait_seconds_sum");
    expect(count?.value).toBe(1);
    expect(sum?.value).toBeGreaterThanOrEqual(1.4);
    const refusals = server.app.metrics.registry.getSingleMetric("audit_requests_overloaded_total");
    expect(
      (await refusals?.get())?.values.find((v) => v.labels.reason === "index_lag"),
    ).toBeUndefined();
  }, 90_000);
});
