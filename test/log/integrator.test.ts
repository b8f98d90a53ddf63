/**
 * The integrator behind the journal (docs/write-path.md): each acknowledged event gets
 * its log index, gapless from 0 in acknowledgement order, and its blind indexes, once;
 * a pass that fails anywhere moves nothing; on PostgreSQL, rows that become visible out
 * of order are neither skipped nor sequenced behind later ones, a log held by a dead
 * instance's pass is taken over, and two instances appending to and integrating one log
 * make one sequence. Runs on the suite's driver; the multi-connection cases need
 * PostgreSQL.
 */
import { randomBytes } from "node:crypto";
import pino from "pino";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPayload } from "../../src/crypto/event-cipher.js";
import { listedEventLeaf } from "../../src/listed-event-leaf.js";
import { createDeriver } from "../../src/log/deriver.js";
import type { IntegrationStage, SequencedBatch } from "../../src/log/integrator.js";
import { createPlaintextCache } from "../../src/log/plaintext-cache.js";
import type { Db } from "../../src/store/db.js";
import type { NewEvent } from "../../src/store/events.js";
import { migrate } from "../../src/store/migrations.js";
import { createPostgresDb } from "../../src/store/postgres-driver.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { type JournalFixture, journalFixture, stored } from "../support/journal-fixtures.js";

const masterKey = randomBytes(32);
const leafOf = listedEventLeaf();
let storage: IsolatedStorage;
let db: Db;
let fixture: JournalFixture;

beforeAll(async () => {
  storage = await createIsolatedStorage();
  db =
    storage.kind === "postgres"
      ? createPostgresDb({ url: storage.env.DATABASE_URL ?? "" })
      : await (await import("../../src/store/pglite-driver.js")).createPgliteDb(
          storage.env.DATA_DIR ?? "",
        );
  await migrate(db);
  fixture = journalFixture(db, masterKey);
});

afterAll(async () => {
  await db.close();
  await storage.cleanup();
});

/**
 * Runs passes until `projectId`'s log holds `count` integrated events; returns how many
 * events the passes sequenced (in every log). A pass may find nothing while a
 * transaction anywhere in the cluster (another test's) holds the horizon back: it is
 * then tried again.
 */
async function integrate(
  integrator: ReturnType<JournalFixture["integrator"]>,
  projectId: string,
  count: number,
) {
  let total = 0;
  while ((await fixture.indexed(projectId)).length < count) {
    const result = await integrator.runPass();
    total += result.integrated;
    if (result.integrated === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return total;
}

const logSize = async (projectId: string) =>
  Number(
    (
      await db.query<{ size: string }>(
        "select size::text as size from event_logs where project_id = $1 and environment = 'live'",
        [projectId],
      )
    )[0]?.size,
  );

const gapless = (count: number) => Array.from({ length: count }, (_, i) => i);

describe("the integrator", () => {
  it("numbers a log's events from 0 in acknowledgement order, once each, and derives what filters find", async () => {
    const projectId = await fixture.newProject();
    const acknowledged: string[] = [];
    // One after the other: each is acknowledged before the next is sent.
    for (let i = 0; i < 5; i++) {
      const result = await fixture.store.createEvent(await fixture.newEvent(projectId));
      acknowledged.push(result.eventId);
    }
    // Then a group in one batch, and an event whose actorId was HTML-encoded when stored.
    const group = await Promise.all(
      Array.from({ length: 10 }, async () => fixture.newEvent(projectId)),
    );
    const groupIds = (await Promise.all(group.map((e) => fixture.store.createEvent(e)))).map(
      (r) => r.eventId,
    );
    const encoded = await fixture.newEvent(projectId, { actorId: stored(`O'Brien <ops> & co`) });
    const last = await fixture.store.createEvent(encoded);

    const integrator = fixture.integrator();
    await integrate(integrator, projectId, 16);

    const indexed = await fixture.indexed(projectId);
    expect(indexed.map((row) => row.logIndex)).toEqual(gapless(16));
    expect(indexed.slice(0, 5).map((row) => row.eventId)).toEqual(acknowledged);
    expect(new Set(indexed.slice(5, 15).map((row) => row.eventId))).toEqual(new Set(groupIds));
    expect(indexed[15]?.eventId).toBe(last.eventId);
    expect(await logSize(projectId)).toBe(16);
    // The filter matches the value as sent, not as stored.
    expect(await fixture.findByActor(projectId, `O'Brien <ops> & co`)).toEqual([last.eventId]);

    // Nothing is sequenced twice: later passes add nothing, and new events continue.
    await integrator.runPass();
    expect(await fixture.indexed(projectId)).toEqual(indexed);
    const next = await fixture.store.createEvent(await fixture.newEvent(projectId));
    await integrate(integrator, projectId, 17);
    expect((await fixture.indexed(projectId)).at(-1)).toEqual({
      eventId: next.eventId,
      logIndex: 16,
    });
  });

  it("hands its stages each log's new events in log-index order, with their salts, in the pass's transaction", async () => {
    const projectId = await fixture.newProject();
    const ids = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await fixture.store.createEvent(await fixture.newEvent(projectId))).eventId);
    }
    const seen: SequencedBatch[] = [];
    const stage: IntegrationStage = {
      async apply(tx, batches) {
        // Inside the pass: its index rows are visible to the stage.
        const [row] = await tx.query<{ n: number }>(
          "select count(*)::int as n from event_index where project_id = $1",
          [projectId],
        );
        expect(row?.n).toBe(3);
        seen.push(...batches.filter((batch) => batch.projectId === projectId));
      },
    };
    await integrate(fixture.integrator({ stages: [stage] }), projectId, 3);
    expect(seen).toHaveLength(1);
    const [batch] = seen;
    expect(batch?.firstIndex).toBe(0n);
    expect(batch?.events.map((event) => [event.eventId, event.logIndex])).toEqual([
      [ids[0], 0n],
      [ids[1], 1n],
      [ids[2], 2n],
    ]);
    const salts = batch?.events.map((event) => event.salt.toString("hex")) ?? [];
    expect(salts.every((salt) => salt.length === 64)).toBe(true);
    expect(new Set(salts).size).toBe(3);
  });

  it("moves nothing when a pass fails midway, and the next pass sequences every event once", async () => {
    const projectId = await fixture.newProject();
    const ids = [];
    for (let i = 0; i < 4; i++) {
      ids.push((await fixture.store.createEvent(await fixture.newEvent(projectId))).eventId);
    }
    const failing: IntegrationStage = {
      async apply() {
        throw new Error("killed mid-pass");
      },
    };
    // Until a pass reaches the stage (the horizon may hold the first ones back).
    const failingIntegrator = fixture.integrator({ stages: [failing] });
    for (;;) {
      const outcome = await failingIntegrator.runPass().then(
        () => "passed",
        (error: Error) => error.message,
      );
      if (outcome === "killed mid-pass") break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await fixture.indexed(projectId)).toEqual([]);
    expect(await logSize(projectId)).toBe(0);

    await integrate(fixture.integrator(), projectId, 4);
    expect(await fixture.indexed(projectId)).toEqual(
      ids.map((eventId, logIndex) => ({ eventId, logIndex })),
    );
  });

  it("leaves a log whose leaves cannot be derived where it is, its index rows with it, and sequences the others", async () => {
    const [leafless, fine] = [await fixture.newProject(), await fixture.newProject()];
    const ids: Record<string, string[]> = { [leafless]: [], [fine]: [] };
    for (const projectId of [leafless, fine]) {
      for (let i = 0; i < 3; i++) {
        const event = await fixture.newEvent(projectId);
        ids[projectId]?.push((await fixture.store.createEvent(event)).eventId);
      }
    }
    const refused = new Set(ids[leafless]);
    let refusals = 0;
    const seen: SequencedBatch[] = [];
    const stage: IntegrationStage = {
      needsContext: true,
      async apply(_tx, batches) {
        seen.push(...batches);
      },
    };
    const deriver = createDeriver({
      logger: pino({ level: "silent" }),
      leafOf: async (event) => {
        if (refused.has(event.eventId)) {
          refusals++;
          throw new Error("no leaf for this one");
        }
        return leafOf(event);
      },
    });
    await integrate(fixture.integrator({ deriver, stages: [stage] }), fine, 3);
    // Until a pass has tried the leafless log too (the horizon may hold rows back).
    while (refusals === 0) {
      await fixture.integrator({ deriver, stages: [stage] }).runPass();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await fixture.indexed(leafless)).toEqual([]);
    expect(await logSize(leafless)).toBe(0);
    expect(seen.some((batch) => batch.projectId === leafless)).toBe(false);
    const fineEvents = seen.filter((b) => b.projectId === fine).flatMap((b) => b.events);
    expect(fineEvents.map((event) => event.eventId)).toEqual(ids[fine]);
    expect(fineEvents.every((event) => event.leaf?.length === 65)).toBe(true);

    // Its leaves derivable again, the log is sequenced from 0.
    refused.clear();
    await integrate(fixture.integrator({ deriver, stages: [stage] }), leafless, 3);
    expect(await fixture.indexed(leafless)).toEqual(
      (ids[leafless] ?? []).map((eventId, logIndex) => ({ eventId, logIndex })),
    );
  });

  it("takes what this instance sealed from its plaintext cache, reads and opens the rest, and derives the same", async () => {
    const projectId = await fixture.newProject();
    const events = [];
    for (let i = 0; i < 6; i++) events.push(await fixture.newEvent(projectId));
    const cache = createPlaintextCache();
    // Events 0, 2, 4 were sealed here; 1, 3, 5 by another instance (or before a restart).
    // One entry matches no journal row (its write was refused, say).
    const ours = events.filter((_, i) => i % 2 === 0);
    const neverWritten = await fixture.newEvent(projectId);
    cache.remember([...ours, neverWritten]);
    for (const event of events) await fixture.store.createEvent(event);

    const seen: SequencedBatch[] = [];
    const stage: IntegrationStage = {
      needsContext: true,
      async apply(_tx, batches) {
        seen.push(...batches);
      },
    };
    await integrate(fixture.integrator({ plaintexts: cache, stages: [stage] }), projectId, 6);

    const sequenced = seen.flatMap((batch) => batch.events);
    expect(sequenced.map((event) => event.eventId)).toEqual(events.map((e) => e.eventId));
    const keys = await fixture.keyring.forProject(projectId);
    for (const [i, event] of sequenced.entries()) {
      const sent = events[i] as NewEvent;
      const at = { projectId, environment: "live", eventId: sent.eventId };
      // Ours came with their plaintext and nothing read; the others with their ciphertext.
      if (i % 2 === 0) {
        expect(event.plaintext).toEqual(sent.sealed.plaintext);
        expect(event.context).toBeNull();
      } else {
        expect(event.plaintext).toBeUndefined();
        expect(event.context).toEqual(sent.sealed.context);
      }
      // Either way the same fields and salt as opening the stored ciphertext gives.
      const opened = await openPayload(keys, at, sent.sealed.keyVersion, sent.sealed.payload);
      expect(event.payload).toEqual(opened.payload);
      expect(event.salt).toEqual(opened.salt);
      expect(await fixture.findByActor(projectId, opened.payload.actorId)).toEqual([sent.eventId]);
    }
    // Taken once used; the entry of the event never written stays until pushed out.
    expect(cache.size).toBe(1);
    expect(cache.take(neverWritten.eventId)).toEqual(neverWritten.sealed.plaintext);
  });

  it("takes a large backlog in several passes, gapless", async () => {
    const projectId = await fixture.newProject();
    const events = await Promise.all(
      Array.from({ length: 250 }, async () => fixture.newEvent(projectId)),
    );
    await Promise.all(events.map((event) => fixture.store.createEvent(event)));
    const integrator = fixture.integrator({ maxEventsPerPass: 100 });
    let first = await integrator.runPass();
    while (first.integrated === 0) first = await integrator.runPass();
    expect(first.more).toBe(true);
    await integrate(integrator, projectId, 250);
    const indexed = await fixture.indexed(projectId);
    expect(indexed.map((row) => row.logIndex)).toEqual(gapless(250));
    expect(new Set(indexed.map((row) => row.eventId)).size).toBe(250);
  });
});

describe.skipIf(!process.env.DATABASE_URL)("the integrator on PostgreSQL", () => {
  /** A connection of its own, for transactions held open by hand. */
  const connection = () => postgres(storage.env.DATABASE_URL ?? "", { max: 1, onnotice: () => {} });

  /**
   * Appends an event's journal row in `sql`'s open transaction (as the store would), its
   * received_at stamped by the database (now(): microseconds, finer than a Date, which no
   * writer of the service does): the integrator must still find its content and index it
   * readably.
   */
  async function appendRow(sql: postgres.Sql, projectId: string) {
    const event = await fixture.newEvent(projectId, { actorId: "appended" });
    await sql.unsafe(
      `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                           payload)
       values ($1, 'live', $2, now(), now(), 1, $3)`,
      [projectId, event.eventId, event.sealed.payload],
    );
    return event.eventId;
  }

  it("neither skips nor sequences behind a row whose transaction began first and committed last", async () => {
    const projectId = await fixture.newProject();
    const [early, late] = [connection(), connection()];
    try {
      await early.unsafe("begin");
      const earlyId = await appendRow(early, projectId); // draws the smaller xid
      await late.unsafe("begin");
      const lateId = await appendRow(late, projectId);
      await late.unsafe("commit");

      const integrator = fixture.integrator();
      // The later row is visible, but below it a transaction is still in flight.
      await integrator.runPass();
      expect(await fixture.indexed(projectId)).toEqual([]);

      await early.unsafe("commit");
      await integrate(integrator, projectId, 2);
      expect(await fixture.indexed(projectId)).toEqual([
        { eventId: earlyId, logIndex: 0 },
        { eventId: lateId, logIndex: 1 },
      ]);
      expect((await fixture.findByActor(projectId, "appended")).sort()).toEqual(
        [earlyId, lateId].sort(),
      );
    } finally {
      await Promise.all([early.end(), late.end()]);
    }
  });

  it("is not held back by a write transaction left open in another database of the server", async () => {
    const projectId = await fixture.newProject();
    // The server's own `postgres` database: transaction ids are the server's, not a database's.
    const elsewhere = postgres(
      Object.assign(new URL(storage.env.DATABASE_URL ?? ""), { pathname: "/postgres" }).href,
      { max: 1, onnotice: () => {} },
    );
    try {
      await elsewhere.unsafe("begin");
      // Taking a transaction id is what a write does; this one stays open for the whole test.
      await elsewhere.unsafe("select pg_current_xact_id()");
      const committed = [];
      for (let i = 0; i < 3; i++) {
        committed.push(
          (await fixture.store.createEvent(await fixture.newEvent(projectId))).eventId,
        );
      }

      const integrator = fixture.integrator();
      for (let pass = 0; pass < 50 && (await fixture.indexed(projectId)).length < 3; pass++) {
        await integrator.runPass();
      }
      expect((await fixture.indexed(projectId)).map((row) => row.eventId).sort()).toEqual(
        committed.sort(),
      );
    } finally {
      await elsewhere.unsafe("rollback");
      await elsewhere.end();
    }
  });

  it("lets another instance take a log over at once when the holder's connection dies", async () => {
    const projectId = await fixture.newProject();
    const ids = [];
    for (let i = 0; i < 20; i++) {
      ids.push((await fixture.store.createEvent(await fixture.newEvent(projectId))).eventId);
    }
    const url = storage.env.DATABASE_URL ?? "";
    const [first, second] = [createPostgresDb({ url }), createPostgresDb({ url })];
    const admin = connection();
    try {
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding: (pid: number) => void = () => {};
      const held = new Promise<number>((resolve) => {
        holding = resolve;
      });
      // The first instance's pass stops inside its transaction, holding the log.
      const stuck: IntegrationStage = {
        async apply(tx) {
          const [row] = await tx.query<{ pid: number }>("select pg_backend_pid() as pid");
          holding(row?.pid ?? 0);
          await released;
          await tx.query("select 1");
        },
      };
      const holder = journalFixture(first, masterKey).integrator({ stages: [stuck] });
      const taker = journalFixture(second, masterKey).integrator();
      // Its outcome is taken at once: it fails as soon as its connection is killed.
      const holderPass = holder.runPass().then(
        () => "committed",
        () => "failed",
      );
      const pid = await held;

      // (Again while a transaction elsewhere in the cluster hides the log's rows.)
      let taken = await taker.runPass();
      while (taken.integrated === 0 && !taken.busy) taken = await taker.runPass();
      expect(taken).toEqual({ integrated: 0, more: false, busy: true });

      // The holder dies: its transaction rolls back and its lock goes with its connection.
      await admin.unsafe("select pg_terminate_backend($1)", [pid]);
      await integrate(taker, projectId, 20);
      expect(await fixture.indexed(projectId)).toEqual(
        ids.map((eventId, logIndex) => ({ eventId, logIndex })),
      );
      release();
      expect(await holderPass).toBe("failed");
      await holder.runPass();
      expect(await fixture.indexed(projectId)).toHaveLength(20);
    } finally {
      await Promise.all([first.close(), second.close(), admin.end()]);
    }
  });

  it("makes one gapless sequence of two instances appending to one log, each integrating", async () => {
    const projectId = await fixture.newProject();
    const url = storage.env.DATABASE_URL ?? "";
    const instances = [createPostgresDb({ url }), createPostgresDb({ url })].map((instanceDb) => {
      const instance = journalFixture(instanceDb, masterKey);
      const integrator = instance.integrator({ minIntervalMs: 1, idleIntervalMs: 5 });
      integrator.start();
      return { db: instanceDb, instance, integrator };
    });
    try {
      // Four writers per instance, each sending its next event once the last is acknowledged.
      const writers = instances.flatMap(({ instance }) =>
        Array.from({ length: 4 }, async () => {
          const mine: string[] = [];
          for (let i = 0; i < 40; i++) {
            const event = await instance.newEvent(projectId);
            mine.push((await instance.store.createEvent(event)).eventId);
          }
          return mine;
        }),
      );
      const acknowledged = await Promise.all(writers);
      for (;;) {
        if ((await fixture.indexed(projectId)).length >= 320) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const indexed = await fixture.indexed(projectId);
      expect(indexed.map((row) => row.logIndex)).toEqual(gapless(320));
      const position = new Map(indexed.map((row) => [row.eventId, row.logIndex]));
      expect(position.size).toBe(320);
      for (const mine of acknowledged) {
        const indexes = mine.map((id) => position.get(id) ?? -1);
        // Each writer's events in the order they were acknowledged.
        expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
        expect(indexes.every((index) => index >= 0)).toBe(true);
      }
    } finally {
      for (const { integrator } of instances) await integrator.stop();
      for (const { db: instanceDb } of instances) await instanceDb.close();
    }
  });
});
