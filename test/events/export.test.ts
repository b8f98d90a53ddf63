/**
 * Export Events through real HTTP and RPC: every acknowledged event exactly once, in
 * log-index order, each exactly as the list shows it; ranges, filters and a tenant
 * token's restriction; a cut export resumed with fromIndex = last + 1; CSV as RFC 4180
 * with its formula guard; refusals before the stream; a client that goes away frees
 * what its export held.
 */
import * as http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExportEventsRequestSchema } from "../../gen/audit/v1/events_pb.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import {
  bearer,
  createEvents,
  type EventClients,
  eventClients,
  listAll,
  tokenFor,
} from "./events-client.js";
import { exportCutAfter, exportEvents, exportUrl, ndjson, parseCsv } from "./log-streams-client.js";

// More than one page of the export (1,000 events), so that pages join.
const EVENTS = 1_150;

/** Values a spreadsheet would run as formulas, and text CSV must quote. */
const TRICKY = [
  '=HYPERLINK("http://x","y")',
  "+1+1",
  "-2",
  "@SUM(A1)",
  "\tTabbed",
  "comma, inside",
  "line one\nline two",
  "plain",
];

describe("export", () => {
  let server: TestServer;
  let secret: string;
  let projectId: string;
  let ids: string[];
  let clients: EventClients;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    ({ secret, projectId } = await server.provision());
    const bodies = Array.from({ length: EVENTS }, (_, i) =>
      validEvent({
        entityId: `entity-${i}`,
        tenantId: i % 3 === 0 ? "acme" : "globex",
        actorDisplay: TRICKY[i % TRICKY.length],
        ...(i % 7 === 0
          ? { context: { note: 'say "hi", then\nleave', n: i }, source: "billing" }
          : {}),
        ...(i % 11 === 0
          ? { changes: [{ op: "set", path: "/plan", before: "free", after: "pro" }] }
          : {}),
      }),
    );
    ids = await createEvents(server, secret, bodies, 40);
    clients = eventClients(server.url);
  });
  afterAll(async () => {
    clients?.close();
    await server?.close();
  });

  it("streams every acknowledged event once, in log-index order, as the list shows it", async () => {
    const response = await exportEvents(server, bearer(secret));
    expect(response.status).toBe(200);
    const lines = ndjson(response.text);
    expect(lines.map((event) => event.logIndex)).toEqual(
      Array.from({ length: EVENTS }, (_, i) => i),
    );
    expect(new Set(lines.map((event) => event.eventId))).toEqual(new Set(ids));
    const listed = new Map(
      (await listAll(server, bearer(secret), { limit: 200 })).events.map((event) => [
        event.eventId,
        event,
      ]),
    );
    for (const line of lines) expect(line).toEqual(listed.get(line.eventId as string));
  });

  it("names the file and the range in its headers", async () => {
    const response = await exportEvents(server, bearer(secret), { fromIndex: 10, toIndex: 19 });
    expect(response.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    expect(response.headers.get("content-disposition")).toMatch(
      /^attachment; filename="audit-events-[0-9a-f-]{36}-test-10-19\.ndjson"$/,
    );
    expect(response.headers.get("content-disposition")).toContain(projectId);
    expect(response.headers.get("x-export-from-index")).toBe("10");
    expect(response.headers.get("x-export-end-index")).toBe("20");
    expect(ndjson(response.text).map((event) => event.logIndex)).toEqual(
      Array.from({ length: 10 }, (_, i) => 10 + i),
    );
    // Any toIndex the RPC's uint64 can hold is cut to the log's end.
    const whole = await exportEvents(server, bearer(secret), {
      fromIndex: EVENTS - 2,
      toIndex: "18446744073709551615",
    });
    expect(whole.status).toBe(200);
    expect(whole.headers.get("x-export-end-index")).toBe(String(EVENTS));
  });

  it("resumes a cut export at the last logIndex + 1, losing and repeating nothing", async () => {
    const url = exportUrl(server);
    const first = await exportCutAfter(url, bearer(secret), 333);
    expect(first).toHaveLength(333);
    const last = first.at(-1)?.logIndex as number;
    const second = await exportCutAfter(
      exportUrl(server, { fromIndex: last + 1 }),
      bearer(secret),
      500,
    );
    const rest = await exportEvents(server, bearer(secret), {
      fromIndex: (second.at(-1)?.logIndex as number) + 1,
    });
    const all = [...first, ...second, ...ndjson(rest.text)];
    expect(all.map((event) => event.logIndex)).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
    expect(new Set(all.map((event) => event.eventId)).size).toBe(EVENTS);
  });

  it("ends at the log's end as it was when the export began", async () => {
    const response = await exportEvents(server, bearer(secret), { fromIndex: EVENTS });
    expect(response.status).toBe(200);
    expect(response.text).toBe("");
    expect(response.headers.get("content-disposition")).toContain("-empty.ndjson");
  });

  it("applies the list's filters and search, in log-index order", async () => {
    const acme = ndjson((await exportEvents(server, bearer(secret), { tenantId: "acme" })).text);
    expect(acme).toHaveLength(Math.ceil(EVENTS / 3));
    expect(acme.every((event) => event.tenantId === "acme")).toBe(true);
    const indexes = acme.map((event) => event.logIndex as number);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));

    const billing = ndjson(
      (await exportEvents(server, bearer(secret), { q: "billing", tenantId: "globex" })).text,
    );
    expect(billing.length).toBeGreaterThan(0);
    expect(billing.every((e) => e.source === "billing" && e.tenantId === "globex")).toBe(true);
  });

  it("takes a filter by its proto name too, as the list does", async () => {
    const acme = ndjson((await exportEvents(server, bearer(secret), { tenant_id: "acme" })).text);
    expect(acme).toHaveLength(Math.ceil(EVENTS / 3));
    expect(acme.every((event) => event.tenantId === "acme")).toBe(true);
    const csv = parseCsv(
      (await exportEvents(server, bearer(secret), { entity_id: "entity-3", format: "csv" })).text,
    );
    expect(csv.length).toBe(2); // the header and entity-3's row
    // Both names of one parameter: refused, as in the list (which one is meant is not said).
    const both = await exportEvents(server, bearer(secret), {
      tenantId: "globex",
      tenant_id: "acme",
    });
    expect(both.status).toBe(400);
    expect(JSON.parse(both.text)).toEqual({
      error:
        "tenantId must be given once in the query string (tenantId and tenant_id are one parameter)",
    });
  });

  it("shows a tenant token its tenant only, whatever it asks for", async () => {
    const token = await tokenFor(server, secret, { tenantId: "acme" });
    const own = ndjson((await exportEvents(server, bearer(token))).text);
    expect(own).toHaveLength(Math.ceil(EVENTS / 3));
    expect(own.every((event) => event.tenantId === "acme")).toBe(true);
    const other = await exportEvents(server, bearer(token), { tenantId: "globex" });
    expect(other.status).toBe(200);
    expect(other.text).toBe("");
  });

  it("writes CSV by RFC 4180, nested values as JSON, formulas disarmed", async () => {
    const response = await exportEvents(server, bearer(secret), { format: "csv" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8; header=present");
    expect(response.headers.get("content-disposition")).toMatch(/\.csv"$/);
    const [header, ...rows] = parseCsv(response.text);
    expect(header).toEqual([
      "logIndex",
      "eventId",
      "occurredAt",
      "receivedAt",
      "actionKey",
      "action",
      "actionDescription",
      "entityType",
      "entityId",
      "actorType",
      "actorId",
      "actorDisplay",
      "tenantId",
      "source",
      "context",
      "changes",
      "salt",
      "erasedAt",
      "unreadable",
    ]);
    expect(rows).toHaveLength(EVENTS);
    const json = new Map(
      ndjson((await exportEvents(server, bearer(secret))).text).map((e) => [e.eventId, e]),
    );
    const column = (name: string) => header?.indexOf(name) ?? -1;
    for (const [i, row] of rows.entries()) {
      const event = json.get(row[column("eventId")] ?? "");
      if (!event) throw new Error(`row ${i}: unknown event`);
      expect(row[column("logIndex")]).toBe(String(i));
      const display = String(event.actorDisplay);
      const cell = row[column("actorDisplay")];
      expect(cell).toBe(/^[=+\-@\t]/.test(display) ? `'${display}` : display);
      expect(row[column("context")]).toBe(
        event.context === undefined ? "" : JSON.stringify(event.context),
      );
      expect(row[column("changes")]).toBe(
        event.changes === undefined ? "" : JSON.stringify(event.changes),
      );
      expect(row[column("salt")]).toBe(Buffer.from(String(event.salt), "base64").toString("hex"));
      // Only a tombstone has an erasure time (docs/export.md).
      expect(row[column("erasedAt")]).toBe("");
      expect(row[column("unreadable")]).toBe("");
    }
    // No cell a spreadsheet would run.
    for (const row of rows) for (const cell of row) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
  });

  it("streams the same events over gRPC and Connect, with the position to resume from", async () => {
    for (const client of [clients.grpc, clients.connect]) {
      const indexes: bigint[] = [];
      let nextIndex = -1n;
      for await (const message of client.exportEvents(
        { fromIndex: 100n, toIndex: 1_120n },
        { headers: bearer(secret) },
      )) {
        indexes.push(...message.events.map((event) => event.logIndex ?? -1n));
        expect(message.events.length).toBeLessThanOrEqual(1_000);
        nextIndex = message.nextIndex;
      }
      expect(indexes).toEqual(Array.from({ length: 1_021 }, (_, i) => BigInt(100 + i)));
      expect(nextIndex).toBe(1_121n);
    }
  });

  it("over gRPC names the range in its response headers, and a deadline that passes mid-stream ends it (and a follow stream) with DEADLINE_EXCEEDED, not OK", async () => {
    // Raw HTTP/2, so that the client can stop reading: the export's first message (1,000
    // events) fills the stream's flow-control window, the server waits, the deadline
    // passes. The status must then say the export was cut, never OK.
    const session = http2.connect(server.url);
    try {
      const message = toBinary(
        ExportEventsRequestSchema,
        create(ExportEventsRequestSchema, { fromIndex: 0n }),
      );
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      const call = (timeout: string | undefined, pauseMs: number, method = "ExportEvents") =>
        new Promise<{ headers: http2.IncomingHttpHeaders; status: string; bytes: number }>(
          (resolve, reject) => {
            const stream = session.request({
              ":method": "POST",
              ":path": `/audit.v1.EventService/${method}`,
              "content-type": "application/grpc",
              te: "trailers",
              ...bearer(secret),
              ...(timeout === undefined ? {} : { "grpc-timeout": timeout }),
            });
            let headers: http2.IncomingHttpHeaders = {};
            let status = "";
            let bytes = 0;
            stream.on("response", (received) => {
              headers = received;
              if (received["grpc-status"] !== undefined) status = String(received["grpc-status"]);
              stream.pause();
              setTimeout(() => stream.resume(), pauseMs);
            });
            stream.on("trailers", (trailers) => {
              status = String(trailers["grpc-status"]);
            });
            stream.on("data", (chunk: Buffer) => {
              bytes += chunk.length;
            });
            stream.on("end", () => resolve({ headers, status, bytes }));
            stream.on("error", reject);
            stream.end(frame);
          },
        );
      const whole = await call(undefined, 0);
      expect(whole.status).toBe("0");
      expect(whole.headers["x-export-from-index"]).toBe("0");
      expect(whole.headers["x-export-end-index"]).toBe(String(EVENTS));
      const cut = await call("300m", 1_500);
      expect(cut.status).toBe("4");
      expect(cut.bytes).toBeLessThan(whole.bytes);
      // A follow stream that outlives its deadline says so too (it used to end OK).
      const followed = await call("1S", 0, "FollowEvents");
      expect(followed.status).toBe("4");
      expect(followed.headers["x-export-end-index"]).toBeUndefined();
    } finally {
      session.close();
    }
  });

  it("refuses bad input with a 4xx JSON error before streaming", async () => {
    const cases: [Record<string, string | number>, string][] = [
      [{ format: "xml" }, "format must be ndjson or csv"],
      [{ fromIndex: 5, toIndex: 2 }, "fromIndex must not be greater than toIndex"],
      [
        { fromIndex: EVENTS + 1 },
        `fromIndex ${EVENTS + 1} is beyond the end of the log, which holds ${EVENTS} events`,
      ],
      [{ fromIndex: -1 }, "fromIndex must be a log index (a non-negative integer)"],
      [{ toIndex: "ten" }, "toIndex must be a log index (a non-negative integer)"],
      [{ toIndex: "18446744073709551616" }, "toIndex must be at most 18446744073709551615"],
      [
        { fromIndex: "9223372036854775808" },
        `fromIndex 9223372036854775808 is beyond the end of the log, which holds ${EVENTS} events`,
      ],
      [{ limit: 5 }, "limit is not a parameter of a log stream: use fromIndex to resume"],
      [
        { from: "yesterday" },
        "from must be an ISO 8601 date-time with a time zone, like 2024-05-01T00:00:00Z, between years 0001 and 9999 in UTC",
      ],
    ];
    for (const [params, error] of cases) {
      const response = await exportEvents(server, bearer(secret), params);
      expect(response.status, JSON.stringify(params)).toBe(400);
      expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(JSON.parse(response.text)).toEqual({ error });
    }
    const anonymous = await exportEvents(server, {});
    expect(anonymous.status).toBe(401);
    const post = await fetch(exportUrl(server), { method: "POST", headers: bearer(secret) });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD, OPTIONS");

    const failure = await clients.grpc
      .exportEvents({ fromIndex: 9n, toIndex: 3n }, { headers: bearer(secret) })
      [Symbol.asyncIterator]()
      .next()
      .then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
    expect(failure?.rawMessage).toBe("fromIndex must not be greater than toIndex");
  });

  it("frees what an export held when its client goes away", async () => {
    // Several exports cut early, then the pool and the database are idle again, and
    // every export still works.
    for (let round = 0; round < 5; round++) {
      await exportCutAfter(exportUrl(server), bearer(secret), 10 + round * 200);
    }
    if (server.driver === "postgres") {
      const url = new URL(server.env.DATABASE_URL ?? "");
      const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
      try {
        const busy = async () => {
          const rows = await sql<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity
             where datname = ${url.pathname.slice(1)} and pid <> pg_backend_pid()
               and (state like 'idle in transaction%' or (state = 'active' and query like '%event_index%'))`;
          return rows[0]?.n ?? -1;
        };
        let left = await busy();
        for (let tries = 0; left !== 0 && tries < 100; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          left = await busy();
        }
        expect(left).toBe(0);
      } finally {
        await sql.end();
      }
    }
    const whole = await exportEvents(server, bearer(secret));
    expect(ndjson(whole.text)).toHaveLength(EVENTS);
  });
});
