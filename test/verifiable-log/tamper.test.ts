/**
 * Tampering with the database, as someone with write access (and, for content, the
 * project's keys) would, is detected by the verifier (`audit verify`'s library, reading the
 * service's REST API) and named: a rewritten event, a deleted event, two events swapped, a
 * changed leaf, and the tree rewritten after a checkpoint was published. Runs on the
 * suite's driver (embedded PGlite, or PostgreSQL).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogClient } from "../../src/cli/log-client.js";
import { openPayload, sealEvent } from "../../src/crypto/event-cipher.js";
import { createKeyring } from "../../src/crypto/keyring.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { verifyLog } from "../../src/tlog/verify.js";
import { createEventsWithTimes } from "../events/events-client.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const crypto = createNodeLogCrypto();
const MASTER_KEY = randomBytes(32).toString("base64");
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ MASTER_KEY, LOG_CHECKPOINT_INTERVAL_MS: "100" });
});

afterAll(async () => {
  await server?.close();
});

/** A project with `n` events and a checkpoint covering them. */
async function logOf(n: number) {
  const { secret, projectId } = await server.provision();
  const created = await createEventsWithTimes(
    server,
    secret,
    Array.from({ length: n }, (_, i) => validEvent({ entityId: `doc_${i}`, context: { i } })),
    1,
  );
  const client = createLogClient(server.url, secret);
  const checkpoint = await covering(client, n);
  return { secret, projectId, ids: created.map((e) => e.eventId), client, checkpoint };
}

async function covering(client: ReturnType<typeof createLogClient>, size: number) {
  for (let attempt = 0; attempt < 400; attempt++) {
    const note = await client.checkpoint().catch(() => "");
    if (Number(note.split("\n")[1]) >= size) return note;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no checkpoint covering ${size}`);
}

async function verify(
  client: ReturnType<typeof createLogClient>,
  options: { complete?: boolean; earlierCheckpoint?: string } = {},
) {
  return verifyLog({
    crypto,
    verifierKey: await client.verifierKey(),
    checkpoint: await client.checkpoint(),
    events: client.events(),
    proofs: client,
    beyondCheckpoint: "skip",
    ...options,
  });
}

const db = () => server.app.db;

describe("an intact log", () => {
  it("verifies whole and event by event", async () => {
    const { client } = await logOf(6);
    const whole = await verify(client);
    expect(whole.failures).toEqual([]);
    expect(whole.ok).toBe(true);
    const partial = await verify(client, { complete: false });
    expect(partial.failures).toEqual([]);
    expect(partial.checked.join("\n")).toMatch(/6 of 6 events proven/);
  });
});

describe("an event with a lone surrogate (accepted, not I-JSON)", () => {
  it("still gets its leaf: the log keeps growing and verifies", async () => {
    const { secret, client } = await logOf(2);
    await createEventsWithTimes(server, secret, [validEvent({ actorId: "x\ud800y" })], 1);
    await createEventsWithTimes(server, secret, [validEvent()], 1);
    await covering(client, 4);
    const report = await verify(client);
    expect(report.failures).toEqual([]);
  });
});

describe("tampering is detected and named", () => {
  it("an event's content rewritten with the project's own key", async () => {
    const { client, projectId, ids } = await logOf(6);
    const target = ids[2] ?? "";
    const keys = await createKeyring({
      db: db(),
      masterKey: Buffer.from(MASTER_KEY, "base64"),
    }).forProject(projectId);
    const [row] = await db().query<{
      payload: Uint8Array;
      key_version: number;
      environment: string;
    }>("select payload, key_version, environment from events where project_id = $1 and id = $2", [
      projectId,
      target,
    ]);
    if (row === undefined) throw new Error("no row");
    const at = { projectId, environment: row.environment, eventId: target };
    const opened = await openPayload(keys, at, row.key_version, row.payload);
    const forged = await sealEvent(keys, at, { ...opened.payload, actorId: "mallory" }, undefined);
    await db().query("update events set payload = $1 where project_id = $2 and id = $3", [
      forged.payload,
      projectId,
      target,
    ]);
    const report = await verify(client);
    expect(report.ok).toBe(false);
    expect(report.failures[0]?.subject).toBe(`event ${target} (logIndex 2)`);
    expect(report.failures[0]?.problem).toMatch(/content or metadata changed/);
  });

  it("an event's stored ciphertext damaged (one bit): named at its position by the export, the follow stream and the verifier; the others flow", async () => {
    const { client, projectId, ids, secret } = await logOf(6);
    const target = ids[3] ?? "";
    const [row] = await db().query<{ payload: Uint8Array }>(
      "select payload from events where project_id = $1 and id = $2",
      [projectId, target],
    );
    const damaged = new Uint8Array(row?.payload ?? new Uint8Array());
    damaged[40] = (damaged[40] ?? 0) ^ 1;
    await db().query("update events set payload = $1 where project_id = $2 and id = $3", [
      damaged,
      projectId,
      target,
    ]);

    const exported = await fetch(`${server.url}/api/events/export`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(exported.status).toBe(200);
    const lines = (await exported.text())
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.logIndex)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(lines[3]).toEqual({
      eventId: target,
      logIndex: 3,
      receivedAt: expect.any(String),
      unreadable: `the stored payload of event ${target} does not decrypt: it was altered or damaged in storage`,
    });
    expect(lines[4]?.eventId).toBe(ids[4]);

    const csv = await fetch(`${server.url}/api/events/export?format=csv&fromIndex=3&toIndex=4`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const [header, first] = (await csv.text()).split("\r\n");
    expect(header?.endsWith(",erasedAt,unreadable")).toBe(true);
    expect(first).toMatch(new RegExp(`^3,${target},,[^,]+,{15}the stored payload`));

    const follow = new AbortController();
    const stream = await fetch(`${server.url}/api/events/stream?fromIndex=2`, {
      headers: { authorization: `Bearer ${secret}` },
      signal: follow.signal,
    });
    const reader = stream.body?.getReader();
    let text = "";
    while (reader && !text.includes("id: 5\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    follow.abort();
    expect(text).toContain(`id: 3\ndata: {"eventId":"${target}","logIndex":3,`);
    expect(text).toContain('"unreadable":"the stored payload');
    expect(text).toContain("id: 4\n");

    const report = await verify(client);
    expect(report.ok).toBe(false);
    expect(report.failures).toEqual([
      {
        subject: `event ${target} (logIndex 3)`,
        problem: expect.stringMatching(/^the service cannot read it: the stored payload/),
      },
    ]);
    expect(report.checked.join("\n")).toMatch(/5 with a leaf recomputed/);
  });

  it("an event deleted", async () => {
    const { client, projectId, ids } = await logOf(6);
    const target = ids[4] ?? "";
    await db().query("delete from event_contexts where project_id = $1 and event_id = $2", [
      projectId,
      target,
    ]);
    await db().query("delete from event_index where project_id = $1 and id = $2", [
      projectId,
      target,
    ]);
    await db().query("delete from events where project_id = $1 and id = $2", [projectId, target]);
    const report = await verify(client);
    expect(report.failures[0]).toEqual({
      subject: "logIndex 4",
      problem: expect.stringMatching(/an event was deleted/),
    });
  });

  it("two events swapped in the log order", async () => {
    const { client, projectId, ids } = await logOf(6);
    const swap = async (from: number, to: number) =>
      db().query("update event_index set log_index = $1 where project_id = $2 and log_index = $3", [
        to,
        projectId,
        from,
      ]);
    await swap(1, -1);
    await swap(3, 1);
    await swap(-1, 3);
    const report = await verify(client);
    expect(report.failures.map((f) => f.subject)).toEqual([
      `event ${ids[3]} (logIndex 1)`,
      `event ${ids[1]} (logIndex 3)`,
    ]);
  });

  it("a stored leaf changed", async () => {
    const { client, projectId } = await logOf(6);
    const [tile] = await db().query<{ data: Uint8Array }>(
      "select data from log_tiles where project_id = $1 and level = -1 and n = 0",
      [projectId],
    );
    const data = new Uint8Array(tile?.data ?? new Uint8Array());
    data[5 * 65 + 40] = (data[5 * 65 + 40] ?? 0) ^ 1; // leaf 5's commitment
    await db().query(
      "update log_tiles set data = $1 where project_id = $2 and level = -1 and n = 0",
      [data, projectId],
    );
    const report = await verify(client, { complete: false });
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]?.subject).toMatch(/\(logIndex 5\)$/);
    expect(report.failures[0]?.problem).toMatch(
      /the service's leaf has a commitment to other content/,
    );
  });

  it("the tree rewritten after a checkpoint was published", async () => {
    const { client, projectId, secret, checkpoint } = await logOf(6);
    // Leaf 2's hash replaced in the stored tree, then the log grows and is signed again.
    const [tile] = await db().query<{ data: Uint8Array }>(
      "select data from log_tiles where project_id = $1 and level = 0 and n = 0",
      [projectId],
    );
    const data = new Uint8Array(tile?.data ?? new Uint8Array());
    data.set(randomBytes(32), 2 * 32);
    await db().query(
      "update log_tiles set data = $1 where project_id = $2 and level = 0 and n = 0",
      [data, projectId],
    );
    await createEventsWithTimes(server, secret, [validEvent()], 1);
    await covering(client, 7);
    const report = await verify(client, { earlierCheckpoint: checkpoint });
    expect(report.ok).toBe(false);
    expect(report.failures).toContainEqual({
      subject: "earlier checkpoint",
      problem: expect.stringMatching(/rewritten after the earlier checkpoint was published/),
    });
    expect(report.failures.map((f) => f.subject)).toContain(
      `event ${(await listIds(client))[2]} (logIndex 2)`,
    );
  });
});

/** Event ids by log index, from the list. */
async function listIds(client: ReturnType<typeof createLogClient>): Promise<string[]> {
  const ids: string[] = [];
  for await (const item of client.events()) {
    const event = item as Record<string, unknown>;
    ids[Number(event.logIndex)] = String(event.eventId);
  }
  return ids;
}
