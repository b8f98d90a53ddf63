/**
 * The backfill of a log migrated to the verifiable log (events numbered before its tree
 * existed): the tree catches up a chunk a transaction, in the integrator's passes and in
 * the catch-up loop's own transactions; a crash between chunks loses only the chunk in
 * flight and the next run resumes where the last chunk ended; the finished tree holds
 * every event in log order and its proofs verify against a signed checkpoint. Runs on
 * the suite's driver.
 */
import { randomBytes } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ListedEvent } from "../../src/events/reader-query.js";
import type { Db } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { createPostgresDb } from "../../src/store/postgres-driver.js";
import { toHex } from "../../src/tlog/bytes.js";
import { openCheckpoint } from "../../src/tlog/checkpoint.js";
import { decodeLeaf } from "../../src/tlog/leaf.js";
import { createMemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseVerifierKey } from "../../src/tlog/note.js";
import { checkRecord, proveRecord, recordHash } from "../../src/tlog/tree.js";
import { createCheckpointPublisher } from "../../src/verifiable-log/checkpoint-publisher.js";
import { createEventTreeStage } from "../../src/verifiable-log/event-tree-stage.js";
import { createLogSigning } from "../../src/verifiable-log/log-signing.js";
import {
  readCheckpoint,
  readLeaf,
  readTreeSize,
  tileHashReader,
} from "../../src/verifiable-log/tree-store.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { type JournalFixture, journalFixture } from "../support/journal-fixtures.js";

const crypto = createNodeLogCrypto();
const masterKey = randomBytes(32);
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

/** An event as a list would render it (the fields the leaf reads, and some content). */
const render = (event: ListedEvent): Record<string, unknown> => ({
  eventId: event.eventId,
  receivedAt: event.receivedAt.toISOString(),
  occurredAt: event.occurredAt.toISOString(),
  actionKey: event.payload.actionKey,
  actorId: event.payload.actorId,
  entityId: event.payload.entityId,
  context: event.context,
});

const CHUNK = 25;

/** The tree stage with chunks of CHUNK; `failAt`: the render call that throws (a crash). */
function stage(failAt = Number.POSITIVE_INFINITY) {
  let calls = 0;
  return createEventTreeStage({
    crypto,
    keyring: fixture.keyring,
    backfillChunk: CHUNK,
    render(event) {
      calls++;
      if (calls === failAt) throw new Error("killed mid-chunk");
      return render(event);
    },
  });
}

/** Creates `count` events and integrates them (with the given stages). */
async function addEvents(
  projectId: string,
  count: number,
  stages: ReturnType<typeof stage>[] = [],
) {
  const before = (await fixture.indexed(projectId)).length;
  for (let i = 0; i < count; i++) {
    await fixture.store.createEvent(await fixture.newEvent(projectId));
  }
  const integrator = fixture.integrator({ stages });
  while ((await fixture.indexed(projectId)).length < before + count) {
    const result = await integrator.runPass();
    if (result.integrated === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the backfill of a migrated log", () => {
  it("catches up in chunks, resumes after a crash between chunks, and proves every event", async () => {
    const projectId = await fixture.newProject();
    const log = { projectId, environment: "live" };
    // Numbered before the tree existed: no stage.
    await addEvents(projectId, 130);
    expect(await readTreeSize(db, log)).toBe(0);

    // The loop commits two chunks, then dies in the third: only that one is lost.
    await expect(stage(2 * CHUNK + 10).catchUp(db)).rejects.toThrow("killed mid-chunk");
    expect(await readTreeSize(db, log)).toBe(2 * CHUNK);

    // A pass of new events backfills one chunk, and leaves its own events to the backfill
    // while the tree is behind.
    await addEvents(projectId, 20, [stage()]);
    const afterPasses = await readTreeSize(db, log);
    expect(afterPasses).toBeGreaterThan(2 * CHUNK);
    expect(afterPasses).toBeLessThan(150);
    expect((afterPasses - 2 * CHUNK) % CHUNK).toBe(0);

    // The loop resumes where the last chunk ended, and catches up.
    expect(await stage().catchUp(db)).toBe(150 - afterPasses);
    expect(await readTreeSize(db, log)).toBe(150);
    expect(await stage().catchUp(db)).toBe(0);

    // Caught up: a pass appends its own events again.
    await addEvents(projectId, 3, [stage()]);
    expect(await readTreeSize(db, log)).toBe(153);

    // Every event, in log order, under a signed checkpoint, each proof verifying.
    const signing = createLogSigning({ crypto, issuer: "audit.test", seed: randomBytes(32) });
    const publisher = createCheckpointPublisher({
      db,
      crypto,
      signing,
      logger: pino({ level: "silent" }),
      intervalMs: 60_000,
    });
    await publisher.publishNow();
    await publisher.stop();
    const stored = await readCheckpoint(db, log);
    expect(stored?.size).toBe(153);
    const origin = signing.origin(projectId, "live");
    const checkpoint = await openCheckpoint(
      crypto,
      stored?.note ?? "",
      await parseVerifierKey(crypto, await signing.verifierKey(origin)),
      origin,
    );
    const indexed = await fixture.indexed(projectId);
    const memory = createMemoryTree(crypto);
    const reader = tileHashReader(crypto, db, log);
    for (const { eventId, logIndex } of indexed) {
      const leaf = (await readLeaf(db, log, logIndex)) ?? new Uint8Array();
      const fields = decodeLeaf(leaf);
      expect({ eventId: fields.eventId, logIndex: fields.logIndex }).toEqual({
        eventId,
        logIndex,
      });
      await memory.append(leaf);
      const proof = await proveRecord(crypto, 153, logIndex, reader);
      await checkRecord(
        crypto,
        proof,
        153,
        checkpoint.rootHash,
        logIndex,
        await recordHash(crypto, leaf),
      );
    }
    expect(toHex(await memory.root())).toBe(toHex(checkpoint.rootHash));
  }, 180_000);
});
