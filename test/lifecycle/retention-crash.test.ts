/**
 * The service killed with SIGKILL in the middle of an expiry run, then started again on
 * the same database: after the kill every batch is whole (each position is either a live
 * event or a tombstone, never both nor neither) and the run's record is pending with the
 * count of what was erased; the restarted service resumes the run and completes it, with
 * every expired event a tombstone once and one record for the run.
 *
 * PostgreSQL only: the events are written and integrated by this process on the database
 * the service then opens, which PGlite (one process at a time, its keys generated in its
 * data directory) does not allow without stopping the service between.
 */
import { afterAll, describe, expect, it } from "vitest";
import { StoredEventSchema } from "../../gen/audit/v1/event_pb.js";
import { storedEventMessage } from "../../src/api/event-operations.js";
import { createRetentionService } from "../../src/lifecycle/retention-service.js";
import type { Db } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { createPostgresDb } from "../../src/store/postgres-driver.js";
import { createProjectStore } from "../../src/store/projects.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { restJson } from "../../src/transport/rest-rendering.js";
import { createEventTreeStage } from "../../src/verifiable-log/event-tree-stage.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { journalFixture } from "../support/journal-fixtures.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { usingPostgres } from "../support/test-server.js";

const EVENTS = 3_000;
const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(usingPostgres)("SIGKILL during an expiry run, then restart", () => {
  let storage: IsolatedStorage | undefined;
  let db: Db | undefined;
  const services: ServiceProcess[] = [];
  afterAll(async () => {
    for (const service of services) await service.cleanup();
    await db?.close();
    await storage?.cleanup();
  });

  it("leaves whole batches, and the restarted service completes the run", async () => {
    storage = await createIsolatedStorage();
    const live = createPostgresDb({ url: storage.env.DATABASE_URL ?? "" });
    db = live;
    await migrate(live);
    const fx = journalFixture(live, Buffer.from(storage.env.MASTER_KEY ?? "", "base64"));
    const projectId = await fx.newProject();
    const receivedAt = new Date(Date.now() - 10 * DAY);
    for (let i = 0; i < EVENTS; i += 250) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(250, EVENTS - i) }, () => fx.newEvent(projectId)),
      );
      await Promise.all(
        batch.map((event) =>
          fx.store.createEvent({ ...event, receivedAt, occurredAt: receivedAt }),
        ),
      );
    }
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
    await createRetentionService({
      db: live,
      projects: createProjectStore(live, fx.keyring),
    }).setRetention(projectId, "live", 1);

    const count = async () => {
      const [row] = await live.query<{ tombstones: number; indexed: number; journal: number }>(
        `select (select count(*)::int from event_tombstones where project_id = $1) as tombstones,
                (select count(*)::int from event_index where project_id = $1) as indexed,
                (select count(*)::int from events where project_id = $1) as journal`,
        [projectId],
      );
      return row ?? { tombstones: 0, indexed: 0, journal: 0 };
    };
    const record = () =>
      live.query<{ status: string; erased: number }>(
        `select status, erased::int as erased from erasures
          where project_id = $1 and selector = 'retention'`,
        [projectId],
      );

    // Small batches, so that the kill lands in the middle of the run.
    const env = { RETENTION_BATCH_SIZE: "25" };
    const first = await spawnService(env, { storageEnv: storage.env });
    services.push(first);
    while ((await count()).tombstones === 0) await sleep(5);
    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");

    const killed = await count();
    expect(killed.tombstones).toBeGreaterThan(0);
    expect(killed.tombstones).toBeLessThan(EVENTS);
    // Whole batches: every position is a live event with its journal row, or a tombstone.
    expect(killed.indexed + killed.tombstones).toBe(EVENTS);
    expect(killed.journal).toBe(killed.indexed);
    const [overlap] = await live.query<{ n: number }>(
      `select count(*)::int as n from event_index i join event_tombstones t
          on t.project_id = i.project_id and t.environment = i.environment
         and t.log_index = i.log_index
       where i.project_id = $1`,
      [projectId],
    );
    expect(overlap?.n).toBe(0);
    expect(await record()).toEqual([{ status: "pending", erased: killed.tombstones }]);

    const second = await spawnService(env, { storageEnv: storage.env });
    services.push(second);
    const deadline = Date.now() + 90_000;
    while ((await record())[0]?.status !== "done" && Date.now() < deadline) await sleep(50);
    expect(await count()).toEqual({ tombstones: EVENTS, indexed: 0, journal: 0 });
    expect(await record()).toEqual([{ status: "done", erased: EVENTS }]);
  }, 240_000);
});
