/**
 * Appends leaves to logs' stored trees, in the caller's transaction, for every log of an
 * integrator pass at once: one query reads what the new hashes need, one statement
 * extends the tiles and sets the tree sizes (tree-store.ts `extendTiles`), whatever the
 * number of logs. The cost of a pass of a few events per log is then about that of its
 * leaves, not of a dozen round trips and of whole tiles read and written back per log.
 *
 * How the hashes are computed: a tile at level L holds consecutive hashes at tree level
 * 8L (its bottom); the hash at level 8(L+1) over a complete tile is the root of its 256
 * hashes, an RFC 6962 complete subtree. So appending gives each level new bottom hashes:
 * at level 0 the new leaves' hashes, at level L+1 the roots of the level-L tiles this
 * append completes. Only a tile that completes needs its old hashes, read in one query for
 * all logs; every other tile is extended by its new hashes alone, and the hashes inside a
 * partial tile are never stored (readers recompute them from its bottom, as tlog does).
 *
 * Invariants: called with each log's tree size as `oldSize`, while the caller holds the
 * log (the integrator's advisory lock), so one tree per log grows without forks or gaps;
 * `extendTiles` refuses (throws) unless every tile ends exactly where that size says, so a
 * wrong size, a tile rewritten behind our back or a concurrent writer fails the
 * transaction instead of forking the tree.
 */
import type { Queryable } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { LEAF_SIZE } from "../tlog/leaf.js";
import { HASH_SIZE, type Hash, nodeHash, recordHash } from "../tlog/tree.js";
import {
  extendTiles,
  LEAF_LEVEL,
  type LogAddress,
  logTileKey,
  readTilesOfLogs,
  TILE_HEIGHT,
  type TileExtension,
} from "./tree-store.js";

const TILE_WIDTH = 2 ** TILE_HEIGHT;

/** Leaves to append to one log's tree. */
export interface TreeAppend {
  readonly log: LogAddress;
  /** The tree's size now: the first leaf's position. */
  readonly oldSize: number;
  readonly leaves: readonly Uint8Array[];
}

/** Appends leaves at positions oldSize, oldSize + 1, ... of one log; returns the new size. */
export async function appendLeaves(
  crypto: LogCrypto,
  tx: Queryable,
  log: LogAddress,
  oldSize: number,
  leaves: readonly Uint8Array[],
): Promise<number> {
  const [size] = await appendToTrees(crypto, tx, [{ log, oldSize, leaves }]);
  return size ?? oldSize;
}

/** Appends each log's leaves to its tree (logs distinct); returns the new sizes, in order. */
export async function appendToTrees(
  crypto: LogCrypto,
  tx: Queryable,
  appends: readonly TreeAppend[],
): Promise<number[]> {
  const sizes = appends.map((a) => a.oldSize + a.leaves.length);
  const growing = appends.filter((a) => a.leaves.length > 0);
  if (growing.length === 0) return sizes;
  for (const a of growing) {
    if (!Number.isSafeInteger(a.oldSize) || a.oldSize < 0) {
      throw new Error(`log tree: bad tree size ${a.oldSize}`);
    }
    for (const leaf of a.leaves) {
      if (leaf.length !== LEAF_SIZE) throw new Error("log tree: a leaf is 65 bytes");
    }
  }

  // The old hashes of the tiles that complete, for every log in one query.
  const wanted = growing.flatMap((a) =>
    completedPartialTiles(a.oldSize, a.oldSize + a.leaves.length).map((t) => ({
      log: a.log,
      ...t,
    })),
  );
  const read = await readTilesOfLogs(tx, wanted);

  const extensions: TileExtension[] = [];
  for (const a of growing) {
    extensions.push(
      ...leafTileExtensions(a),
      ...(await hashTileExtensions(crypto, a, (level, n) => read.get(logTileKey(a.log, level, n)))),
    );
  }

  await extendTiles(
    tx,
    extensions,
    growing.map((a) => ({ log: a.log, oldSize: a.oldSize, size: a.oldSize + a.leaves.length })),
  );
  return sizes;
}

/**
 * The partial hash tiles of a tree of `oldSize` leaves that an append up to `newSize`
 * completes: the only tiles whose old hashes the append needs (for the root of the tile).
 */
function completedPartialTiles(oldSize: number, newSize: number): { level: number; n: number }[] {
  const tiles: { level: number; n: number }[] = [];
  for (let level = 0; ; level++) {
    const span = TILE_WIDTH ** level;
    const oldCount = Math.floor(oldSize / span);
    const newCount = Math.floor(newSize / span);
    if (newCount === oldCount) break;
    const n = Math.floor(oldCount / TILE_WIDTH);
    if (oldCount % TILE_WIDTH !== 0 && newCount >= (n + 1) * TILE_WIDTH) tiles.push({ level, n });
  }
  return tiles;
}

/** The leaf tiles' new bytes: the partial one at the old end extended, then new ones. */
function leafTileExtensions(a: TreeAppend): TileExtension[] {
  const extensions: TileExtension[] = [];
  const newSize = a.oldSize + a.leaves.length;
  for (let n = Math.floor(a.oldSize / TILE_WIDTH); n * TILE_WIDTH < newSize; n++) {
    const from = Math.max(n * TILE_WIDTH, a.oldSize);
    const to = Math.min((n + 1) * TILE_WIDTH, newSize);
    const data = new Uint8Array((to - from) * LEAF_SIZE);
    for (let i = from; i < to; i++) {
      data.set(a.leaves[i - a.oldSize] as Uint8Array, (i - from) * LEAF_SIZE);
    }
    extensions.push({
      log: a.log,
      level: LEAF_LEVEL,
      n,
      at: (from - n * TILE_WIDTH) * LEAF_SIZE,
      data,
    });
  }
  return extensions;
}

/**
 * The hash tiles' new bytes, level by level: each level's new bottom hashes appended to
 * its tiles, and the roots of the tiles they complete carried to the level above.
 */
async function hashTileExtensions(
  crypto: LogCrypto,
  a: TreeAppend,
  oldTile: (level: number, n: number) => Uint8Array | undefined,
): Promise<TileExtension[]> {
  const extensions: TileExtension[] = [];
  let bottoms: Hash[] = [];
  for (const leaf of a.leaves) bottoms.push(await recordHash(crypto, leaf));
  for (let level = 0, oldCount = a.oldSize; bottoms.length > 0; level++) {
    const newCount = oldCount + bottoms.length;
    const roots: Hash[] = [];
    for (let n = Math.floor(oldCount / TILE_WIDTH); n * TILE_WIDTH < newCount; n++) {
      const start = n * TILE_WIDTH;
      const from = Math.max(start, oldCount);
      const to = Math.min(start + TILE_WIDTH, newCount);
      const added = concatHashes(bottoms, from - oldCount, to - oldCount);
      extensions.push({ log: a.log, level, n, at: (from - start) * HASH_SIZE, data: added });
      if (to < start + TILE_WIDTH) continue;
      // The tile completes: its root is a hash of the level above.
      let whole = added;
      if (from > start) {
        const old = oldTile(level, n);
        if (old === undefined || old.length !== (from - start) * HASH_SIZE) {
          throw new Error(
            `log tree: tile ${level}/${n} does not end at the tree size ${a.oldSize}`,
          );
        }
        whole = new Uint8Array(TILE_WIDTH * HASH_SIZE);
        whole.set(old, 0);
        whole.set(added, old.length);
      }
      roots.push(await subtreeRoot(crypto, whole));
    }
    bottoms = roots;
    oldCount = Math.floor(oldCount / TILE_WIDTH);
  }
  return extensions;
}

/** Hashes [from, to) of a list, concatenated. */
function concatHashes(hashes: readonly Hash[], from: number, to: number): Uint8Array {
  const out = new Uint8Array((to - from) * HASH_SIZE);
  for (let i = from; i < to; i++) out.set(hashes[i] as Hash, (i - from) * HASH_SIZE);
  return out;
}

/** The root of a complete subtree over 2^k concatenated hashes (RFC 6962 interior nodes). */
async function subtreeRoot(crypto: LogCrypto, data: Uint8Array): Promise<Hash> {
  let level: Hash[] = [];
  for (let at = 0; at < data.length; at += HASH_SIZE) {
    level.push(data.subarray(at, at + HASH_SIZE));
  }
  while (level.length > 1) {
    const above: Hash[] = [];
    for (let j = 0; j < level.length; j += 2) {
      above.push(await nodeHash(crypto, level[j] as Hash, level[j + 1] as Hash));
    }
    level = above;
  }
  return level[0] as Hash;
}
