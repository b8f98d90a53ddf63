/**
 * The stored tree on the suite's driver: leaves appended in batches of every shape give
 * the same roots, proofs and leaves as the tree in memory, read directly or through the
 * read side's tile cache (tiles kept narrow then needed wider, tiles evicted); and the
 * checkpoint publisher signs each grown tree once, verifiably.
 */
import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db, Queryable } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { toHex } from "../../src/tlog/bytes.js";
import { openCheckpoint } from "../../src/tlog/checkpoint.js";
import { createMemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseVerifierKey } from "../../src/tlog/note.js";
import { proveRecord, proveTree, treeHash } from "../../src/tlog/tree.js";
import { createCheckpointPublisher } from "../../src/verifiable-log/checkpoint-publisher.js";
import { createLogSigning } from "../../src/verifiable-log/log-signing.js";
import { createTileCache } from "../../src/verifiable-log/tile-cache.js";
import { appendLeaves, appendToTrees } from "../../src/verifiable-log/tree-append.js";
import {
  readCheckpoint,
  readLeaf,
  readTreeSize,
  tileHashReader,
} from "../../src/verifiable-log/tree-store.js";
import { createIsolatedDb } from "../support/isolated-storage.js";

const crypto = createNodeLogCrypto();
let db: Db;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
  await migrate(db);
});

afterAll(async () => {
  await cleanup();
});

function leaf(i: number): Uint8Array {
  const bytes = new Uint8Array(65);
  bytes[0] = 1;
  new DataView(bytes.buffer).setUint32(1, i);
  bytes[64] = i & 0xff;
  return bytes;
}

describe("the stored tree", () => {
  it("matches the tree in memory after appends of every size, across tile boundaries", async () => {
    const log = { projectId: randomUUID(), environment: "live" };
    const memory = createMemoryTree(crypto);
    let size = 0;
    for (const count of [1, 1, 5, 249, 1, 256, 300, 3, 70_000 - 816]) {
      const leaves = Array.from({ length: count }, (_, i) => leaf(size + i));
      size = await db.transaction((tx) => appendLeaves(crypto, tx, log, size, leaves));
      for (const l of leaves) await memory.append(l);
      expect(await readTreeSize(db, log)).toBe(size);
      const reader = tileHashReader(crypto, db, log);
      expect(toHex(await treeHash(crypto, size, reader)), `root of ${size}`).toBe(
        toHex(await memory.root()),
      );
    }
    const reader = tileHashReader(crypto, db, log);
    for (const [t, n] of [
      [70_000, 0],
      [70_000, 69_999],
      [70_000, 65_535],
      [70_000, 65_536],
      [512, 257],
      [258, 3],
    ] as const) {
      expect((await proveRecord(crypto, t, n, reader)).map(toHex), `leaf ${n} in ${t}`).toEqual(
        (await memory.proveRecord(n, t)).map(toHex),
      );
      expect((await proveTree(crypto, t, n + 1, reader)).map(toHex), `${n + 1} to ${t}`).toEqual(
        (await memory.proveTree(n + 1, t)).map(toHex),
      );
      expect(toHex((await readLeaf(db, log, n)) ?? new Uint8Array())).toBe(toHex(leaf(n)));
    }
    expect(await readLeaf(db, log, 70_000)).toBeUndefined();
  });

  it("appends to several logs in one read and one write, each as if alone", async () => {
    const logs = [0, 1, 2].map(() => ({ projectId: randomUUID(), environment: "live" }));
    const memories = logs.map(() => createMemoryTree(crypto));
    const sizes = [0, 0, 0];
    // Per round, each log's count: partial tiles extended, tiles completed (one with a
    // tile of level 1 completed: 65,536 leaves), logs left out of a round.
    for (const counts of [
      [1, 255, 256],
      [300, 1, 0],
      [0, 65_536 - 256, 20],
      [7, 3, 65_536],
    ]) {
      const appends = logs
        .map((log, i) => ({
          log,
          oldSize: sizes[i] ?? 0,
          leaves: Array.from({ length: counts[i] ?? 0 }, (_, j) => leaf((sizes[i] ?? 0) + j + i)),
        }))
        .filter((a) => a.leaves.length > 0);
      let queries = 0;
      const grown = await db.transaction((tx) =>
        appendToTrees(
          crypto,
          {
            query<Row>(sql: string, params?: readonly unknown[]) {
              queries++;
              return tx.query<Row>(sql, params);
            },
          },
          appends,
        ),
      );
      expect(queries, `queries for ${counts}`).toBeLessThanOrEqual(2);
      for (const [k, a] of appends.entries()) {
        const i = logs.indexOf(a.log);
        for (const l of a.leaves) await memories[i]?.append(l);
        sizes[i] = grown[k] ?? -1;
      }
      for (const [i, log] of logs.entries()) {
        expect(await readTreeSize(db, log)).toBe(sizes[i]);
        const size = sizes[i] ?? 0;
        if (size === 0) continue;
        const reader = tileHashReader(crypto, db, log);
        expect(toHex(await treeHash(crypto, size, reader)), `root of log ${i} at ${size}`).toBe(
          toHex(await memories[i]?.root()),
        );
        const n = size - 1;
        expect((await proveRecord(crypto, size, n, reader)).map(toHex)).toEqual(
          ((await memories[i]?.proveRecord(n, size)) ?? []).map(toHex),
        );
      }
    }
  });

  it("refuses to append to a tree that is not of the given size, and writes nothing", async () => {
    const log = { projectId: randomUUID(), environment: "live" };
    await db.transaction((tx) => appendLeaves(crypto, tx, log, 0, [leaf(0), leaf(1), leaf(2)]));
    const other = { projectId: randomUUID(), environment: "live" };
    // A new tile where the tree already has one, with another log's good append alongside.
    await expect(
      db.transaction((tx) =>
        appendToTrees(crypto, tx, [
          { log: other, oldSize: 0, leaves: [leaf(7)] },
          { log, oldSize: 0, leaves: [leaf(9)] },
        ]),
      ),
    ).rejects.toThrow(/does not end at the tree size 0/);
    // Past the end: no tile of the tree ends there.
    await expect(
      db.transaction((tx) => appendLeaves(crypto, tx, log, 5, [leaf(9)])),
    ).rejects.toThrow(/does not end at the tree size 5/);
    expect(await readTreeSize(db, log)).toBe(3);
    expect(await readTreeSize(db, other)).toBe(0);
    expect(await readLeaf(db, other, 0)).toBeUndefined();
  });

  it("keeps logs apart", async () => {
    const a = { projectId: randomUUID(), environment: "test" };
    const b = { projectId: a.projectId, environment: "live" };
    await db.transaction((tx) => appendLeaves(crypto, tx, a, 0, [leaf(1), leaf(2)]));
    await db.transaction((tx) => appendLeaves(crypto, tx, b, 0, [leaf(3)]));
    expect(await readTreeSize(db, a)).toBe(2);
    expect(await readTreeSize(db, b)).toBe(1);
    expect(toHex((await readLeaf(db, b, 0)) ?? new Uint8Array())).toBe(toHex(leaf(3)));
  });

  it("refuses to append where the leaf tile does not end at the given size", async () => {
    const log = { projectId: randomUUID(), environment: "live" };
    await db.transaction((tx) => appendLeaves(crypto, tx, log, 0, [leaf(0), leaf(1)]));
    await expect(
      db.transaction((tx) => appendLeaves(crypto, tx, log, 1, [leaf(9)])),
    ).rejects.toThrow(/does not end at the tree size 1/);
  });
});

describe("the read side's tile cache", () => {
  /** The database, counting the queries made through it. */
  const counting = () => {
    const counter = {
      queries: 0,
      query<Row>(sql: string, params?: readonly unknown[]) {
        counter.queries++;
        return db.query<Row>(sql, params);
      },
    };
    return counter satisfies Queryable;
  };

  for (const [name, maxBytes] of [
    ["ample", 64 * 1024 * 1024],
    ["a few tiles (evicting)", 40 * 1024],
  ] as const) {
    it(`gives the tree in memory's proofs, roots and leaves as the tree grows: ${name}`, async () => {
      const log = { projectId: randomUUID(), environment: "live" };
      const memory = createMemoryTree(crypto);
      const cache = createTileCache(crypto, maxBytes);
      let size = 0;
      for (const count of [3, 250, 10, 1_000, 1, 300]) {
        const leaves = Array.from({ length: count }, (_, i) => leaf(size + i));
        size = await db.transaction((tx) => appendLeaves(crypto, tx, log, size, leaves));
        for (const l of leaves) await memory.append(l);
        const reader = cache.reader(db, log);
        expect(toHex(await treeHash(crypto, size, reader)), `root of ${size}`).toBe(
          toHex(await memory.root()),
        );
        // Old sizes (kept tiles narrower than now stored) and the new one (wider needed).
        for (const t of new Set([Math.min(size, 3), Math.min(size, 253), size])) {
          for (const n of new Set([0, t - 1, Math.floor(t / 2), Math.max(0, t - 257)])) {
            expect(
              (await proveRecord(crypto, t, n, reader)).map(toHex),
              `leaf ${n} in ${t}`,
            ).toEqual((await memory.proveRecord(n, t)).map(toHex));
            expect(
              (await proveTree(crypto, t, n + 1, reader)).map(toHex),
              `${n + 1} to ${t}`,
            ).toEqual((await memory.proveTree(n + 1, t)).map(toHex));
            expect(toHex((await reader.readLeaf(n)) ?? new Uint8Array())).toBe(toHex(leaf(n)));
          }
        }
        expect(await reader.readLeaf(size)).toBeUndefined();
        expect(cache.bytes).toBeLessThanOrEqual(maxBytes);
      }
      await expect(
        proveRecord(crypto, size + 300, size + 299, cache.reader(db, log)),
      ).rejects.toThrow(/missing or short/);
    });
  }

  it("answers a proof it has served before without a query, and only then", async () => {
    const log = { projectId: randomUUID(), environment: "live" };
    const leaves = Array.from({ length: 3_000 }, (_, i) => leaf(i));
    await db.transaction((tx) => appendLeaves(crypto, tx, log, 0, leaves));
    const cache = createTileCache(crypto);
    const first = counting();
    const proof = await proveRecord(crypto, 3_000, 1_234, cache.reader(first, log));
    expect(first.queries).toBe(1);
    const again = counting();
    expect(await proveRecord(crypto, 3_000, 1_234, cache.reader(again, log))).toEqual(proof);
    expect(again.queries).toBe(0);
    // Another leaf of another bottom tile: only that tile is read.
    const other = counting();
    const reader = cache.reader(other, log);
    await proveRecord(crypto, 3_000, 2_500, reader);
    expect(other.queries).toBe(1);
    // Its leaf tile was not read yet: one more query, then none.
    await reader.readLeaf(2_500);
    await reader.readLeaf(2_501);
    expect(other.queries).toBe(2);
  });
});

describe("the checkpoint publisher", () => {
  /** A publisher signing with the key of `seedByte` (its 32 bytes all that value). */
  const publisherWith = (seedByte: number) => {
    const signing = createLogSigning({
      crypto,
      issuer: "audit.test",
      seed: new Uint8Array(32).fill(seedByte),
    });
    const publisher = createCheckpointPublisher({
      db,
      crypto,
      signing,
      logger: pino({ level: "silent" }),
      intervalMs: 1000,
    });
    return { signing, publisher };
  };

  it("signs each grown tree once, with a checkpoint the log's verifier key opens", async () => {
    const { signing, publisher } = publisherWith(3);
    const log = { projectId: randomUUID(), environment: "live" };
    await db.transaction((tx) => appendLeaves(crypto, tx, log, 0, [leaf(0), leaf(1), leaf(2)]));
    expect(await publisher.publishNow()).toBeGreaterThanOrEqual(1);
    const first = await readCheckpoint(db, log);
    expect(first?.size).toBe(3);
    const origin = signing.origin(log.projectId, log.environment);
    const verifier = await parseVerifierKey(crypto, await signing.verifierKey(origin));
    const opened = await openCheckpoint(crypto, first?.note ?? "", verifier, origin);
    expect(toHex(opened.rootHash)).toBe(
      toHex(await treeHash(crypto, 3, tileHashReader(crypto, db, log))),
    );
    expect(await publisher.publishNow()).toBe(0);
    await db.transaction((tx) => appendLeaves(crypto, tx, log, 3, [leaf(3)]));
    await publisher.publishNow();
    expect((await readCheckpoint(db, log))?.size).toBe(4);
    // Earlier checkpoints are kept.
    expect((await readCheckpoint(db, log, 3))?.note).toBe(first?.note);
    // The latest is the largest size, compared as numbers (10 after 4, not before).
    await db.transaction((tx) => appendLeaves(crypto, tx, log, 4, [5, 6, 7, 8, 9, 10].map(leaf)));
    await publisher.publishNow();
    expect((await readCheckpoint(db, log))?.size).toBe(10);

    // A rotated key: the latest checkpoint (10, not 4 or 3, whose texts sort after "10")
    // gains the new key's signature and keeps the old one; the earlier ones stay as signed.
    const { signing: rotated, publisher: after } = publisherWith(4);
    const before = await readCheckpoint(db, log);
    expect(await after.cosignLatest()).toBeGreaterThanOrEqual(1);
    const cosigned = await readCheckpoint(db, log);
    expect(cosigned?.size).toBe(10);
    expect(cosigned?.note.startsWith(before?.note ?? "-")).toBe(true);
    const newKey = await parseVerifierKey(crypto, await rotated.verifierKey(origin));
    expect((await openCheckpoint(crypto, cosigned?.note ?? "", newKey)).size).toBe(10);
    expect((await openCheckpoint(crypto, cosigned?.note ?? "", verifier)).size).toBe(10);
    const signatureLines = (note = "") =>
      note.split("\n").filter((line) => line.startsWith("\u2014 "));
    expect(signatureLines((await readCheckpoint(db, log, 4))?.note)).toHaveLength(1);
    expect(signatureLines(cosigned?.note)).toHaveLength(2);
    expect(await after.cosignLatest()).toBe(0);

    // A stored note that is not this log's checkpoint text (another origin: a changed
    // LOG_ISSUER, or a tampered row) is not signed again.
    const foreign = (cosigned?.note ?? "").replace("audit.test/", "elsewhere.test/");
    await db.query(
      "update log_checkpoints set note = $3 where project_id = $1 and environment = $2 and size = 10",
      [log.projectId, log.environment, foreign],
    );
    const { publisher: third } = publisherWith(5);
    await third.cosignLatest();
    expect((await readCheckpoint(db, log))?.note).toBe(foreign);
    await publisher.stop();
  });
});
