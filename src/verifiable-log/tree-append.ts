/**
 * Appends leaves to a log's stored tree in one transaction: the stored hashes of each
 * leaf (tlog's storedHashes), then the tiles that changed, the leaf tiles, and the tree
 * size. Reads only the tiles along the tree's right edge, once each.
 *
 * Invariant: called with the log's tree size as `oldSize` and while the caller holds the
 * log (the integrator's advisory lock), so one tree per log grows without forks or gaps.
 */
import type { Queryable } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { LEAF_SIZE } from "../tlog/leaf.js";
import { hashFromTile, newTiles, readTileData, type Tile, tileForIndex } from "../tlog/tile.js";
import {
  HASH_SIZE,
  type Hash,
  type HashReader,
  nodeHash,
  recordHash,
  storedHashIndex,
} from "../tlog/tree.js";
import {
  LEAF_LEVEL,
  type LogAddress,
  readTiles,
  TILE_HEIGHT,
  writeTiles,
  writeTreeSize,
} from "./tree-store.js";

const TILE_WIDTH = 2 ** TILE_HEIGHT;

/** Appends leaves at positions oldSize, oldSize + 1, ...; returns the new size. */
export async function appendLeaves(
  crypto: LogCrypto,
  tx: Queryable,
  log: LogAddress,
  oldSize: number,
  leaves: readonly Uint8Array[],
): Promise<number> {
  if (leaves.length === 0) return oldSize;
  const added = new Map<number, Hash>();
  const tiles = new Map<string, Uint8Array>();
  const reader: HashReader = {
    async readHashes(indexes) {
      const located = indexes.map((index) =>
        added.has(index) ? undefined : tileForIndex(TILE_HEIGHT, index),
      );
      const missing = located.filter(
        (tile): tile is Tile => tile !== undefined && !tiles.has(`${tile.L}/${tile.N}`),
      );
      if (missing.length > 0) {
        const read = await readTiles(
          tx,
          log,
          missing.map((t) => ({ level: t.L, n: t.N })),
        );
        for (const row of read) tiles.set(`${row.level}/${row.n}`, row.data);
      }
      return Promise.all(
        indexes.map(async (index, i) => {
          const hash = added.get(index);
          if (hash !== undefined) return hash;
          const tile = located[i] as Tile;
          const data = tiles.get(`${tile.L}/${tile.N}`);
          if (data === undefined) {
            throw new Error(`log tree: tile ${tile.L}/${tile.N} missing for hash ${index}`);
          }
          return hashFromTile(crypto, { ...tile, W: data.length / HASH_SIZE }, data, index);
        }),
      );
    },
  };

  // The old tree's complete subtrees, largest first (its right edge): every left sibling
  // the new leaves need that this pass does not compute, read in one call. Then each leaf
  // is added as to a compact range, without a read per leaf: its hash, and the hash of
  // each subtree it completes, are its stored hashes (tlog's storedHashes), in order.
  const stack: { level: number; hash: Hash }[] = [];
  const edge: { level: number; n: number }[] = [];
  for (let level = 52, lo = 0; level >= 0; level--) {
    if (Math.floor(oldSize / 2 ** level) % 2 === 1) {
      edge.push({ level, n: lo / 2 ** level });
      lo += 2 ** level;
    }
  }
  const edgeHashes = await reader.readHashes(
    edge.map((node) => storedHashIndex(node.level, node.n)),
  );
  edge.forEach((node, i) => {
    stack.push({ level: node.level, hash: edgeHashes[i] as Hash });
  });
  for (const [i, leaf] of leaves.entries()) {
    if (leaf.length !== LEAF_SIZE) throw new Error("log tree: a leaf is 65 bytes");
    const n = oldSize + i;
    let index = storedHashIndex(0, n);
    let hash = await recordHash(crypto, leaf);
    added.set(index, hash);
    let level = 0;
    for (let top = stack.at(-1); top !== undefined && top.level === level; top = stack.at(-1)) {
      stack.pop();
      hash = await nodeHash(crypto, top.hash, hash);
      level++;
      added.set(++index, hash);
    }
    stack.push({ level, hash });
  }
  const newSize = oldSize + leaves.length;

  // Hash tiles: the widest version of each tile that changed.
  const widest = new Map<string, Tile>();
  for (const tile of newTiles(TILE_HEIGHT, oldSize, newSize)) {
    const k = `${tile.L}/${tile.N}`;
    const known = widest.get(k);
    if (known === undefined || known.W < tile.W) widest.set(k, tile);
  }
  const writes: { level: number; n: number; data: Uint8Array }[] = [];
  for (const tile of widest.values()) {
    writes.push({ level: tile.L, n: tile.N, data: await readTileData(tile, reader) });
  }

  // Leaf tiles: the partial one at the old end, extended, then new ones.
  const firstTile = Math.floor(oldSize / TILE_WIDTH);
  const lastTile = Math.floor((newSize - 1) / TILE_WIDTH);
  let previous: Uint8Array = new Uint8Array(0);
  if (oldSize % TILE_WIDTH !== 0) {
    const read = await readTiles(tx, log, [{ level: LEAF_LEVEL, n: firstTile }]);
    previous = read[0]?.data ?? new Uint8Array(0);
    if (previous.length !== (oldSize % TILE_WIDTH) * LEAF_SIZE) {
      throw new Error(`log tree: leaf tile ${firstTile} does not end at the tree size ${oldSize}`);
    }
  }
  for (let n = firstTile; n <= lastTile; n++) {
    const from = Math.max(n * TILE_WIDTH, oldSize);
    const to = Math.min((n + 1) * TILE_WIDTH, newSize);
    const head = n === firstTile ? previous : new Uint8Array(0);
    const data = new Uint8Array(head.length + (to - from) * LEAF_SIZE);
    data.set(head, 0);
    for (let i = from; i < to; i++) {
      data.set(leaves[i - oldSize] as Uint8Array, head.length + (i - from) * LEAF_SIZE);
    }
    writes.push({ level: LEAF_LEVEL, n, data });
  }

  await writeTiles(tx, log, writes);
  await writeTreeSize(tx, log, newSize);
  return newSize;
}
