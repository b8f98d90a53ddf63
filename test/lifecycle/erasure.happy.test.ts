/**
 * EraseEvents and ListErasures through the real service (AdminService over Connect), on
 * the suite's driver: by ids, actor and tenant, dry runs and counts; what readers see
 * afterwards (the list and its filters and search leave erased events out; export in
 * NDJSON and CSV, the SSE follow stream and gRPC carry tombstones); the verifier accepts
 * the whole log with its tombstones; an erased event's inclusion proof still verifies.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { createLogClient } from "../../src/cli/log-client.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { verifyLog } from "../../src/tlog/verify.js";
import {
  bearer,
  createEventsWithTimes,
  eventClients,
  listAll,
  listedEvents,
} from "../events/events-client.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const crypto = createNodeLogCrypto();
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ LOG_CHECKPOINT_INTERVAL_MS: "100" });
});

afterAll(async () => {
  await server?.close();
});

/** A project with events of actors alice and bob, tenants t1 and t2. */
async function seeded() {
  const { projectId, secret } = await server.provision();
  const bodies = [
    validEvent({ actorId: "alice", tenantId: "t1", entityId: "doc_0", context: { n: 0 } }),
    validEvent({ actorId: "bob", tenantId: "t1", entityId: "doc_1" }),
    validEvent({ actorId: "alice", tenantId: "t2", entityId: "doc_2", context: { n: 2 } }),
    validEvent({ actorId: "carol", tenantId: "t2", entityId: "doc_3" }),
    validEvent({ actorId: "bob", entityId: "doc_4" }),
    validEvent({ actorId: "alice", entityId: "doc_5" }),
  ];
  const created = await createEventsWithTimes(server, secret, bodies, 1);
  return { projectId, secret, ids: created.map((c) => c.eventId) };
}

const erase = (request: Record<string, unknown>) =>
  server.admin.eraseEvents({ environment: Environment.TEST, ...request });

async function exportText(secret: string, query = "") {
  const response = await fetch(`${server.url}/api/events/export${query}`, {
    headers: bearer(secret),
  });
  expect(response.status).toBe(200);
  return response.text();
}

async function checkpointOf(secret: string, size: number) {
  const client = createLogClient(server.url, secret);
  for (let attempt = 0; attempt < 400; attempt++) {
    const note = await client.checkpoint().catch(() => "");
    if (Number(note.split("\n")[1]) >= size) return client;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no checkpoint covering ${size}`);
}

describe("erasing by event ids", () => {
  it("erases exactly those events and leaves tombstones every reader can place", async () => {
    const { projectId, secret, ids } = await seeded();
    const target = [ids[1] ?? "", ids[4] ?? ""];
    const before = await listedEvents(server, bearer(secret));
    const receivedAt = new Map(before.map((e) => [e.eventId, e.receivedAt]));

    const result = await erase({ projectId, eventIds: target, requestedBy: "ticket DSR-7" });
    expect(result.matched).toBe(2n);
    expect(result.erased).toBe(2n);
    expect(result.erasureId).toMatch(/^[0-9a-f-]{36}$/);

    // The list, its filters and its search no longer return them.
    const listed = await listedEvents(server, bearer(secret));
    expect(listed.map((e) => e.eventId).sort()).toEqual(
      ids.filter((id) => !target.includes(id)).sort(),
    );
    expect(await listedEvents(server, bearer(secret), { actorId: "bob" })).toEqual([]);
    expect(await listedEvents(server, bearer(secret), { q: "doc_1" })).toEqual([]);

    // NDJSON export: every position, the erased ones as tombstones.
    const lines = (await exportText(secret))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.logIndex)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const index of [1, 4]) {
      const tombstone = lines[index] ?? {};
      expect(Object.keys(tombstone).sort()).toEqual(
        ["erasedAt", "eventId", "logIndex", "receivedAt"].sort(),
      );
      expect(tombstone.eventId).toBe(ids[index]);
      expect(tombstone.receivedAt).toBe(receivedAt.get(ids[index] ?? ""));
      expect(Date.parse(String(tombstone.erasedAt))).toBeGreaterThan(0);
    }
    expect(lines[0]?.salt).toEqual(expect.any(String));
    // A filtered export cannot match an erased event.
    const filtered = (await exportText(secret, "?actorId=alice")).trim().split("\n");
    expect(filtered.map((line) => JSON.parse(line).logIndex)).toEqual([0, 2, 5]);

    // CSV: the tombstone's four columns (erasedAt before the last, unreadable), the others empty.
    const csv = (await exportText(secret, "?format=csv")).split("\r\n");
    expect(csv[0]?.endsWith(",salt,erasedAt,unreadable")).toBe(true);
    const row = csv[2]?.split(",") ?? [];
    expect(row[0]).toBe("1");
    expect(row[1]).toBe(ids[1]);
    expect(row[3]).toBe(receivedAt.get(ids[1] ?? ""));
    expect(row.at(-2)).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(row.at(-1)).toBe("");
    expect(row.slice(4, -2).every((cell) => cell === "")).toBe(true);

    // SSE follow: the tombstone with its logIndex as the event id.
    const abort = new AbortController();
    const sse = await fetch(`${server.url}/api/events/stream`, {
      headers: bearer(secret),
      signal: abort.signal,
    });
    let text = "";
    const reader = sse.body?.getReader();
    while (reader && !text.includes("id: 5\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    abort.abort();
    const erasedFrame = text.split("\n\n").find((frame) => frame.startsWith("id: 4\n"));
    expect(JSON.parse(erasedFrame?.split("data: ")[1] ?? "{}")).toEqual(lines[4]);

    // gRPC export: the tombstones in `erased`.
    const clients = eventClients(server.url);
    try {
      const erased: bigint[] = [];
      const events: bigint[] = [];
      for await (const message of clients.grpc.exportEvents(
        {},
        { headers: { authorization: `Bearer ${secret}` } },
      )) {
        erased.push(...message.erased.map((e) => e.logIndex));
        events.push(...message.events.map((e) => e.logIndex ?? -1n));
        for (const e of message.erased) expect(e.receivedAt).toBe(receivedAt.get(e.eventId));
      }
      expect(erased).toEqual([1n, 4n]);
      expect(events).toEqual([0n, 2n, 3n, 5n]);
    } finally {
      clients.close();
    }

    // The record.
    const { erasures } = await server.admin.listErasures({ projectId });
    expect(erasures).toHaveLength(1);
    expect(erasures[0]).toMatchObject({
      id: result.erasureId,
      eventIds: target,
      requestedBy: "ticket DSR-7",
      status: "done",
      matched: 2n,
      erased: 2n,
    });
  });

  it("keeps the whole log verifiable, tombstones included, and proves an erased event's inclusion", async () => {
    const { projectId, secret, ids } = await seeded();
    const client = await checkpointOf(secret, 6);
    const earlier = await client.checkpoint();
    await erase({ projectId, eventIds: [ids[0] ?? "", ids[3] ?? ""] });
    const report = await verifyLog({
      crypto,
      verifierKey: await client.verifierKey(),
      checkpoint: await client.checkpoint(),
      earlierCheckpoint: earlier,
      events: client.events(),
      proofs: client,
    });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.checked.join("\n")).toMatch(/2 erased \(tombstones\)/);
    expect(report.checked.join("\n")).toMatch(/form a tree with the checkpoint's root/);
    const proof = await client.inclusion(ids[0] ?? "", 6);
    expect(proof.logIndex).toBe(0);

    // A tombstone whose receivedAt was altered no longer matches its logged leaf.
    async function* altered() {
      for await (const item of client.events()) {
        const event = item as Record<string, unknown>;
        yield event.logIndex === 0 && typeof event.erasedAt === "string"
          ? {
              ...event,
              receivedAt: new Date(Date.parse(String(event.receivedAt)) + 1).toISOString(),
            }
          : event;
      }
    }
    const forged = await verifyLog({
      crypto,
      verifierKey: await client.verifierKey(),
      checkpoint: await client.checkpoint(),
      events: altered(),
      proofs: client,
    });
    expect(forged.ok).toBe(false);
    expect(forged.failures[0]).toEqual({
      subject: `event ${ids[0]} (logIndex 0)`,
      problem: expect.stringMatching(
        /^the logged leaf is not this tombstone's: it has receivedAt /,
      ),
    });

    // A live event whose content was changed and marked erased, and a tombstone given
    // content: neither passes for a tombstone (its leaf would not be recomputed).
    for (const [index, change] of [
      [1, { actorId: "mallory", erasedAt: "2026-11-29T05:00:00.000Z" }],
      [3, { actorId: "mallory" }],
    ] as const) {
      async function* disguised() {
        for await (const item of client.events()) {
          const event = item as Record<string, unknown>;
          yield event.logIndex === index ? { ...event, ...change } : event;
        }
      }
      const report = await verifyLog({
        crypto,
        verifierKey: await client.verifierKey(),
        checkpoint: await client.checkpoint(),
        events: disguised(),
        proofs: client,
      });
      expect(report.ok).toBe(false);
      expect(report.failures[0]).toEqual({
        subject: `event ${ids[index]} (logIndex ${index})`,
        problem: expect.stringMatching(
          /^marked erased \(erasedAt\) but carries .*actorId.*: a tombstone has only eventId, logIndex, receivedAt, erasedAt/,
        ),
      });
    }

    // Without proofs a tombstone cannot be checked, and says so.
    const offline = await verifyLog({
      crypto,
      verifierKey: await client.verifierKey(),
      checkpoint: await client.checkpoint(),
      events: client.events(),
    });
    expect(offline.ok).toBe(false);
    expect(offline.failures[0]?.problem).toMatch(/erased: .*needs proofs/);
  });
});

describe("erasing by actor and tenant", () => {
  it("erases every event of an actor, matched by its blind index, and counts", async () => {
    const { projectId, secret } = await seeded();
    const dry = await erase({ projectId, actorId: "alice", dryRun: true });
    expect([dry.matched, dry.erased, dry.erasureId]).toEqual([3n, 0n, undefined]);
    expect(await listedEvents(server, bearer(secret), { actorId: "alice" })).toHaveLength(3);
    expect((await server.admin.listErasures({ projectId })).erasures).toEqual([]);

    const done = await erase({ projectId, actorId: "alice" });
    expect([done.matched, done.erased]).toEqual([3n, 3n]);
    expect(await listedEvents(server, bearer(secret), { actorId: "alice" })).toEqual([]);
    expect((await listAll(server, bearer(secret))).events).toHaveLength(3);
    // Nothing is left to erase: a second call matches nothing.
    const again = await erase({ projectId, actorId: "alice" });
    expect([again.matched, again.erased]).toEqual([0n, 0n]);

    const [latest] = (await server.admin.listErasures({ projectId })).erasures;
    expect(latest).toMatchObject({ actorId: "alice", requestedBy: "admin", matched: 0n });
    // The actor is stored sealed, not in plaintext.
    const [row] = await server.app.db.query<{ n: string }>(
      "select count(*)::text as n from erasures where project_id = $1 and position('alice'::bytea in coalesce(sealed_value, '')) > 0",
      [projectId],
    );
    expect(row?.n).toBe("0");
  });

  it("erases every event of a tenant", async () => {
    const { projectId, secret } = await seeded();
    const done = await erase({ projectId, tenantId: "t2" });
    expect([done.matched, done.erased]).toEqual([2n, 2n]);
    expect(await listedEvents(server, bearer(secret), { tenantId: "t2" })).toEqual([]);
    expect(await listedEvents(server, bearer(secret), { tenantId: "t1" })).toHaveLength(2);
  });

  it("matches nothing of another project or environment", async () => {
    const a = await seeded();
    const b = await seeded();
    const other = await erase({ projectId: a.projectId, eventIds: b.ids });
    expect([other.matched, other.erased]).toEqual([0n, 0n]);
    const live = await server.admin.eraseEvents({
      projectId: a.projectId,
      environment: Environment.LIVE,
      eventIds: a.ids,
    });
    expect([live.matched, live.erased]).toEqual([0n, 0n]);
    expect(await listedEvents(server, bearer(a.secret))).toHaveLength(6);
    expect(await listedEvents(server, bearer(b.secret))).toHaveLength(6);
  });
});

describe("a log with many tombstones", () => {
  it("exports every position once, in log order, past 1,000 tombstones in a page and resumed anywhere", async () => {
    const { projectId, secret } = await server.provision();
    // 1,200 events, all but every 12th by the actor erased next: tombstones at 1, 2, ..., 10,
    // 11, 13, ... (in text order "10" and "100" come before "2").
    for (let batch = 0; batch < 3; batch++) {
      const response = await fetch(`${server.url}/api/ingest/events`, {
        method: "POST",
        headers: { ...bearer(secret), "content-type": "application/json" },
        body: JSON.stringify({
          events: Array.from({ length: 400 }, (_, i) =>
            validEvent({
              actorId: (batch * 400 + i) % 12 === 0 ? "kept" : "gone",
              entityId: `doc_${batch * 400 + i}`,
            }),
          ),
        }),
      });
      expect(response.status).toBe(201);
    }
    const done = await erase({ projectId, actorId: "gone" });
    expect(done.erased).toBe(1_100n);
    expect(done.matched).toBe(1_100n);

    const positions = (text: string) =>
      text
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { logIndex: number }).logIndex);
    const all = Array.from({ length: 1_200 }, (_, i) => i);
    expect(positions(await exportText(secret))).toEqual(all);
    for (const from of [2, 99, 1_001]) {
      expect(positions(await exportText(secret, `?fromIndex=${from}`))).toEqual(all.slice(from));
    }
  }, 60_000);
});
