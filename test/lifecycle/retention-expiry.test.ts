/**
 * Retention's expiry job on the store, with a clock the test moves instead of waiting
 * days: it erases, as tombstones, exactly the integrated events received before the
 * cutoff of logs with a period; keeps everything of logs kept for ever; leaves events not
 * yet integrated for a later run; records each run; and two jobs on one database never
 * work a log twice.
 */
import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoredEventSchema } from "../../gen/audit/v1/event_pb.js";
import { storedEventMessage } from "../../src/api/event-operations.js";
import { createRetentionJob } from "../../src/lifecycle/retention-job.js";
import { createRetentionService } from "../../src/lifecycle/retention-service.js";
import type { Db } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { createProjectStore } from "../../src/store/projects.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { restJson } from "../../src/transport/rest-rendering.js";
import { createEventTreeStage } from "../../src/verifiable-log/event-tree-stage.js";
import { createIsolatedDb } from "../support/isolated-storage.js";
import { type JournalFixture, journalFixture } from "../support/journal-fixtures.js";

const DAY = 86_400_000;
const silent = pino({ level: "silent" });

describe("retention expiry job", () => {
  let db: Db;
  let cleanup: () => Promise<void>;
  let fx: JournalFixture;
  beforeAll(async () => {
    ({ db, cleanup } = await createIsolatedDb());
    await migrate(db);
    fx = journalFixture(db, randomBytes(32));
  });
  afterAll(async () => {
    await cleanup?.();
  });

  const setRetention = (projectId: string, days: number) =>
    createRetentionService({
      db,
      projects: createProjectStore(db, fx.keyring),
    }).setRetention(projectId, "live", days);

  /** Appends `count` events of the project's live log received at `receivedAt`. */
  const append = async (projectId: string, count: number, receivedAt: Date) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const event = { ...(await fx.newEvent(projectId)), receivedAt, occurredAt: receivedAt };
      ids.push((await fx.store.createEvent(event)).eventId);
    }
    return ids;
  };
  const integrateAll = async () => {
    // With the verifiable log's stage, as the service runs it: events get their leaves.
    const integrator = fx.integrator({
      stages: [
        createEventTreeStage({
          crypto: createNodeLogCrypto(),
          keyring: fx.keyring,
          render: (event) =>
            restJson(StoredEventSchema, storedEventMessage(event)) as Record<string, unknown>,
        }),
      ],
    });
    while ((await integrator.runPass()).integrated > 0);
  };
  const tombstones = async (projectId: string) =>
    (
      await db.query<{ id: string; log_index: string; erasure_id: string | null }>(
        `select id, log_index::text as log_index, erasure_id from event_tombstones
          where project_id = $1 and environment = 'live'
          order by event_tombstones.log_index`,
        [projectId],
      )
    ).map((row) => ({ eventId: row.id, logIndex: Number(row.log_index) }));
  const runs = (projectId: string) =>
    db.query<{
      status: string;
      matched: string | null;
      erased: string;
      received_before: Date;
      requested_by: string;
    }>(
      `select status, matched::text as matched, erased::text as erased, received_before,
              requested_by from erasures
        where project_id = $1 and selector = 'retention' order by requested_at`,
      [projectId],
    );
  const job = (now: Date, batchSize = 2) =>
    createRetentionJob({ db, logger: silent, intervalMs: 3_600_000, batchSize, now: () => now });

  it("erases exactly the integrated events received before the cutoff, as tombstones", async () => {
    const projectId = await fx.newProject();
    const forEver = await fx.newProject();
    const now = new Date("2030-06-01T12:00:00Z");
    const old = await append(projectId, 5, new Date(now.getTime() - 31 * DAY));
    const edge = await append(projectId, 1, new Date(now.getTime() - 30 * DAY));
    const young = await append(projectId, 2, new Date(now.getTime() - 29 * DAY));
    const keptForEver = await append(forEver, 3, new Date(now.getTime() - 3650 * DAY));
    await integrateAll();
    await setRetention(projectId, 30);

    const result = await job(now).runOnce();
    expect(result.expired).toBe(5);
    // The tombstones are the old events, at their log indexes; the rest keeps its content.
    expect(await tombstones(projectId)).toEqual(
      old.map((eventId, logIndex) => ({ eventId, logIndex })),
    );
    expect((await fx.indexed(projectId)).map((each) => each.eventId)).toEqual([...edge, ...young]);
    const [journal] = await db.query<{ n: number }>(
      "select count(*)::int as n from events where project_id = $1 and id = any($2::uuid[])",
      [projectId, old],
    );
    expect(journal?.n).toBe(0);
    // A log kept for ever (retention 0, the default) keeps everything, however old.
    expect((await fx.indexed(forEver)).map((each) => each.eventId)).toEqual(keptForEver);
    expect(await tombstones(forEver)).toEqual([]);
    // One record of the run: who, the cutoff, the count.
    expect(await runs(projectId)).toEqual([
      {
        status: "done",
        // What it selected with content is what it expired.
        matched: "5",
        erased: "5",
        received_before: new Date(now.getTime() - 30 * DAY),
        requested_by: "retention",
      },
    ]);

    // A day later the edge event expires too; a run with nothing to do records nothing.
    const later = new Date(now.getTime() + DAY);
    expect((await job(later).runOnce()).expired).toBe(1);
    expect((await job(later).runOnce()).expired).toBe(0);
    expect((await runs(projectId)).map((run) => run.erased)).toEqual(["5", "1"]);
    // Back to 0: nothing more expires, even years later.
    await setRetention(projectId, 0);
    expect((await job(new Date(now.getTime() + 3650 * DAY)).runOnce()).expired).toBe(0);
    expect((await fx.indexed(projectId)).map((each) => each.eventId)).toEqual(young);
  });

  it("leaves events not yet integrated for a run after their integration", async () => {
    const projectId = await fx.newProject();
    const now = new Date("2030-06-01T12:00:00Z");
    const ids = await append(projectId, 3, new Date(now.getTime() - 100 * DAY));
    await setRetention(projectId, 1);
    expect((await job(now).runOnce()).expired).toBe(0);
    const [journal] = await db.query<{ n: number }>(
      "select count(*)::int as n from events where project_id = $1",
      [projectId],
    );
    expect(journal?.n).toBe(3);
    await integrateAll();
    expect((await job(now).runOnce()).expired).toBe(3);
    expect((await tombstones(projectId)).map((each) => each.eventId)).toEqual(ids);
  });

  it("leaves integrated events whose leaf is not yet in the tree", async () => {
    const projectId = await fx.newProject();
    const now = new Date("2030-06-01T12:00:00Z");
    await append(projectId, 2, new Date(now.getTime() - 100 * DAY));
    // Integrated without the tree's stage: numbered, but no leaf yet (as events integrated
    // before the tree existed, until a pass computes their leaves from their content).
    await fx.integrator().runPass();
    expect(await fx.indexed(projectId)).toHaveLength(2);
    await setRetention(projectId, 1);
    expect((await job(now).runOnce()).expired).toBe(0);
    // The next pass with the tree's stage fills the tree in; then they expire.
    await append(projectId, 1, new Date(now.getTime() - 100 * DAY));
    await integrateAll();
    expect((await job(now).runOnce()).expired).toBe(3);
  });

  it("two jobs on one database expire each event once, one run record per log", async () => {
    const projectId = await fx.newProject();
    const now = new Date("2030-06-01T12:00:00Z");
    await append(projectId, 60, new Date(now.getTime() - 10 * DAY));
    await integrateAll();
    const integrated = await fx.indexed(projectId);
    await setRetention(projectId, 5);
    const [a, b] = await Promise.all([job(now, 3).runOnce(), job(now, 3).runOnce()]);
    expect((a?.expired ?? 0) + (b?.expired ?? 0)).toBe(60);
    expect(await tombstones(projectId)).toEqual(integrated);
    const records = await runs(projectId);
    expect(records.map((run) => [run.status, run.erased])).toEqual([["done", "60"]]);
  });
});
