/**
 * Follow Events through real HTTP and gRPC: the backlog, then every new event once and
 * in log order (SSE `id:` = logIndex, `data:` the list's record), resumed with
 * Last-Event-ID after a cut; heartbeats on an idle stream; 100 followers at once; a
 * frontend token's stream ends with its 401 body when it expires; refusals before the
 * stream; on PostgreSQL, a follower on another instance sees events acknowledged on the
 * first (LISTEN/NOTIFY, its own poll set to a minute).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogNotifications } from "../../src/store/log-notifications.js";
import {
  startTestServer,
  type TestServer,
  usingPostgres,
  validEvent,
} from "../support/test-server.js";
import {
  bearer,
  createEvents,
  type EventClients,
  eventClients,
  listAll,
  tokenFor,
} from "./events-client.js";
import { exportUrl, openSse, type SseStream } from "./log-streams-client.js";

const BACKLOG = 40;

describe("follow", () => {
  let server: TestServer;
  let secret: string;
  let clients: EventClients;
  const streamUrl = (params: Record<string, string | number> = {}) =>
    exportUrl(server, params, "/api/events/stream");
  const eventCount = (count: number) => (stream: SseStream) => stream.events.length >= count;

  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT_MAX: "1000000000",
      FOLLOW_HEARTBEAT_SECONDS: "1",
      // The default: 100 followers checking their key every second read it from memory.
      API_KEY_CACHE_SECONDS: "5",
    });
    secret = (await server.provision()).secret;
    await createEvents(
      server,
      secret,
      Array.from({ length: BACKLOG }, (_, i) => validEvent({ entityId: `backlog-${i}` })),
      10,
    );
    clients = eventClients(server.url);
  });
  afterAll(async () => {
    clients?.close();
    await server?.close();
  });

  it("streams the backlog, then each new event once, in log order, as the list shows it", async () => {
    const stream = await openSse(streamUrl({ fromIndex: 30 }), bearer(secret));
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      await stream.until(eventCount(BACKLOG - 30));
      const live = await createEvents(
        server,
        secret,
        Array.from({ length: 5 }, (_, i) => validEvent({ entityId: `live-${i}` })),
        1,
      );
      const events = await stream.until(eventCount(BACKLOG - 30 + 5));
      expect(events.map((event) => event.id)).toEqual(
        Array.from({ length: BACKLOG - 30 + 5 }, (_, i) => String(30 + i)),
      );
      const records = events.map((event) => JSON.parse(event.data) as Record<string, unknown>);
      expect(records.slice(-5).map((record) => record.eventId)).toEqual(live);
      const listed = new Map(
        (await listAll(server, bearer(secret), { limit: 200 })).events.map((e) => [e.eventId, e]),
      );
      for (const record of records) {
        expect(record).toEqual(listed.get(record.eventId as string));
        expect(String(record.logIndex)).toBe(events[records.indexOf(record)]?.id);
      }
    } finally {
      stream.close();
    }
  });

  it("resumes after a cut connection from Last-Event-ID, losing and repeating nothing", async () => {
    const first = await openSse(streamUrl(), bearer(secret));
    const seen = (await first.until(eventCount(25))).slice(0, 25);
    first.close();
    const lastId = seen.at(-1)?.id ?? "";
    const added = await createEvents(server, secret, [validEvent({ entityId: "while-away" })], 1);
    const second = await openSse(streamUrl({ fromIndex: 0 }), {
      ...bearer(secret),
      "last-event-id": lastId,
    });
    try {
      const { size } = await logSize();
      const rest = await second.until(eventCount(size - 25));
      const ids = [...seen, ...rest].map((event) => Number(event.id));
      expect(ids).toEqual(Array.from({ length: size }, (_, i) => i));
      expect(JSON.parse(rest.at(-1)?.data ?? "{}").eventId).toBe(added[0]);
    } finally {
      second.close();
    }
  });

  it("takes a filter by its proto name too, as the list does", async () => {
    const stream = await openSse(streamUrl({ entity_id: "backlog-7" }), bearer(secret));
    try {
      expect(stream.status).toBe(200);
      const [only] = await stream.until(eventCount(1));
      await createEvents(server, secret, [validEvent({ entityId: "backlog-7" })], 1);
      const events = await stream.until(eventCount(2));
      const records = events.map((event) => JSON.parse(event.data) as Record<string, unknown>);
      expect(records.map((record) => record.entityId)).toEqual(["backlog-7", "backlog-7"]);
      expect(only).toBeDefined();
    } finally {
      stream.close();
    }
  });

  it("sends heartbeats on an idle stream", async () => {
    const { size } = await logSize();
    const stream = await openSse(streamUrl({ fromIndex: size }), bearer(secret));
    try {
      await stream.until((s) => s.comments.some((line) => line.startsWith("heartbeat")));
      expect(stream.comments).toContain(`heartbeat ${size}`);
      expect(stream.events).toEqual([]);
    } finally {
      stream.close();
    }
  });

  it("serves 100 followers at once, each receiving a new event", async () => {
    const { size } = await logSize();
    const streams: SseStream[] = [];
    try {
      // Ten at a time; those opened are closed below whatever happens.
      for (let i = 0; i < 10; i++) {
        const opening = Array.from({ length: 10 }, () =>
          openSse(streamUrl({ fromIndex: size }), bearer(secret)),
        );
        for (const opened of await Promise.allSettled(opening)) {
          if (opened.status === "fulfilled") streams.push(opened.value);
        }
      }
      expect(streams).toHaveLength(100);
      expect(streams.every((stream) => stream.status === 200)).toBe(true);
      const [eventId] = await createEvents(server, secret, [validEvent({ entityId: "all" })], 1);
      const received = await Promise.all(streams.map((stream) => stream.until(eventCount(1))));
      for (const events of received) {
        expect(events.map((event) => event.id)).toEqual([String(size)]);
        expect(JSON.parse(events[0]?.data ?? "{}").eventId).toBe(eventId);
      }
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("ends a frontend token's stream with the 401 body when the token expires", async () => {
    const token = await tokenFor(server, secret, { expiresInSeconds: 5 });
    const stream = await openSse(streamUrl(), bearer(token));
    try {
      expect(stream.status).toBe(200);
      await stream.until((s) => s.events.some((event) => event.event === "error"));
      expect(stream.events.at(-1)).toEqual({
        id: undefined,
        event: "error",
        data: JSON.stringify({ error: "Token expired" }),
      });
      await stream.until(() => false);
      expect(stream.ended).toBe(true);
    } finally {
      stream.close();
    }
  });

  it("streams over gRPC: the backlog, then a new event, with the position to resume from", async () => {
    const { size } = await logSize();
    const abort = new AbortController();
    const seen: bigint[] = [];
    let nextIndex = 0n;
    let added = false;
    try {
      for await (const message of clients.grpc.followEvents(
        { fromIndex: BigInt(size - 3) },
        { headers: bearer(secret), signal: abort.signal },
      )) {
        seen.push(...message.events.map((event) => event.logIndex ?? -1n));
        if (message.events.length > 0) nextIndex = message.nextIndex;
        if (seen.length === 3 && !added) {
          added = true;
          await createEvents(server, secret, [validEvent({ entityId: "grpc" })], 1);
        }
        if (seen.length === 4) break;
      }
    } finally {
      abort.abort();
    }
    expect(seen).toEqual([0, 1, 2, 3].map((i) => BigInt(size - 3 + i)));
    expect(nextIndex).toBe(BigInt(size + 1));
  });

  it("refuses a malformed Last-Event-ID, a start beyond the log and a missing credential", async () => {
    const { size } = await logSize();
    const cases: [Record<string, string>, Record<string, string | number>, number, string][] = [
      [
        { "last-event-id": "abc" },
        {},
        400,
        "Last-Event-ID must be the logIndex of an event (a non-negative integer)",
      ],
      [
        { "last-event-id": "-1" },
        {},
        400,
        "Last-Event-ID must be the logIndex of an event (a non-negative integer)",
      ],
      [
        { "last-event-id": String(size) },
        {},
        400,
        `Last-Event-ID ${size} is beyond the end of the log, which holds ${size} events`,
      ],
      [
        {},
        { fromIndex: size + 1 },
        400,
        `fromIndex ${size + 1} is beyond the end of the log, which holds ${size} events`,
      ],
      [{}, { fromIndex: "x" }, 400, "fromIndex must be a log index (a non-negative integer)"],
      // An export's parameters are refused, not ignored (a follow has no end, one form).
      [{}, { toIndex: 5 }, 400, "toIndex is a parameter of an export, not of a follow stream"],
      [{}, { format: "csv" }, 400, "format is a parameter of an export, not of a follow stream"],
    ];
    for (const [headers, params, status, error] of cases) {
      const stream = await openSse(streamUrl(params), { ...bearer(secret), ...headers });
      expect(stream.status).toBe(status);
      expect(stream.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(JSON.parse(await stream.body())).toEqual({ error });
    }
    const anonymous = await openSse(streamUrl(), {});
    expect(anonymous.status).toBe(401);
    await anonymous.body();
  });

  it("answers HEAD with the stream's headers and ends, as the export does", async () => {
    // A HEAD that followed the log would never end: the client waits for a body it
    // will not get. Both streams answer their headers and close at once.
    for (const url of [streamUrl(), exportUrl(server)]) {
      const response = await fetch(url, {
        method: "HEAD",
        headers: bearer(secret),
        signal: AbortSignal.timeout(5_000),
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("");
    }
    const head = await fetch(streamUrl(), { method: "HEAD", headers: bearer(secret) });
    expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const exported = await fetch(exportUrl(server), { method: "HEAD", headers: bearer(secret) });
    const { size } = await logSize();
    expect(exported.headers.get("x-export-end-index")).toBe(String(size));
    const refused = await fetch(streamUrl({ fromIndex: "x" }), { method: "HEAD" });
    expect(refused.status).toBe(401);
  });

  /** The log's size: every event is listed (read-your-writes), numbered from 0. */
  async function logSize(): Promise<{ size: number }> {
    return { size: (await listAll(server, bearer(secret), { limit: 200 })).events.length };
  }
});

describe.runIf(usingPostgres)("follow across instances", () => {
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    first = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    // The second instance looks at the log only when told: its poll is a minute.
    second = await startTestServer({ FOLLOW_POLL_MS: "60000" }, { peerOf: first });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it("a follower on one instance receives events acknowledged on another", async () => {
    const { secret } = await first.provision();
    const stream = await openSse(exportUrl(second, {}, "/api/events/stream"), bearer(secret));
    try {
      expect(stream.status).toBe(200);
      const ids = await createEvents(
        first,
        secret,
        Array.from({ length: 3 }, (_, i) => validEvent({ entityId: `across-${i}` })),
        1,
      );
      const events = await stream.until((s) => s.events.length >= 3);
      expect(events.map((event) => JSON.parse(event.data).eventId)).toEqual(ids);
    } finally {
      stream.close();
    }
  });

  it("delivers a NOTIFY from one client to another's LISTEN", async () => {
    const url = first.env.DATABASE_URL ?? "";
    const errors: unknown[] = [];
    const listener = createLogNotifications({ url, onError: (error) => errors.push(error) });
    const sender = createLogNotifications({ url, onError: (error) => errors.push(error) });
    try {
      let heard = 0;
      let onHeard = () => {};
      const notified = new Promise<void>((resolve) => {
        onHeard = resolve;
      });
      // LISTEN is in place once listen() resolves.
      await listener.listen(() => {
        heard++;
        onHeard();
      });
      sender.notify();
      await notified;
      expect(heard).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      await listener.close();
      await sender.close();
    }
  });
});
