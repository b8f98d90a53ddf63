/**
 * What the log's read side keeps of its trees in memory (docs/verifiable-log.md, "Costs"):
 * tiles, per log and position, at the widest width read, each with the hashes within it
 * computed once. A proof asks for hashes up to 7 levels above a tile's bottom, each
 * otherwise recomputed from up to 128 of the tile's hashes; and the upper tiles and the
 * tree's right edge are shared by every proof of a log.
 *
 * Sound because stored hashes never change: a tile is only ever rewritten wider, and a
 * narrower version is a prefix of every wider one (tlog/tile.ts), so a committed read of a
 * tile answers every hash it is wide enough for, for good. Only tiles read outside any
 * transaction (committed) are put here, never the integrator's, which may roll back.
 * Bounded: the least recently used tiles are dropped past `maxBytes`.
 */
import type { Queryable } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { LEAF_SIZE } from "../tlog/leaf.js";
import {
  HASH_SIZE,
  type Hash,
  type HashReader,
  nodeHash,
  splitStoredHashIndex,
} from "../tlog/tree.js";
import { LEAF_LEVEL, type LogAddress, readTiles, TILE_HEIGHT, type TileRow } from "./tree-store.js";

const TILE_WIDTH = 2 ** TILE_HEIGHT;

/** The default bound: about 2,000 full hash tiles with their inner hashes, or leaf tiles. */
export const DEFAULT_TILE_CACHE_BYTES = 64 * 1024 * 1024;

/** A tile as read, and the hashes within it. */
interface CachedTile {
  /** The tile's data: W hashes (32 bytes each), or at level -1 W leaves (65 bytes). */
  readonly data: Uint8Array;
  /** Level k within the tile: the hashes of 2^k consecutive bottom hashes, computed once. */
  levels?: Promise<Uint8Array[]>;
}

/** The cache, shared by every log of an instance. */
export interface TileCache {
  /** A reader of a log's hashes and leaves that reads through the cache. */
  reader(db: Queryable, log: LogAddress): CachedTreeReader;
  /** Tiles read by another query (committed), kept for the reader's next use. */
  keep(log: LogAddress, tiles: readonly TileRow[]): void;
  /** Bytes held now (tests, metrics). */
  readonly bytes: number;
}

/** Reads a log's stored hashes (tlog's HashReader) and leaves. */
export interface CachedTreeReader extends HashReader {
  /** The leaf at a log index; undefined when not stored. */
  readLeaf(logIndex: number): Promise<Uint8Array | undefined>;
}

/** Where a stored hash lies: tile (L, N), level k within it, position j at that level. */
interface Position {
  L: number;
  N: number;
  k: number;
  j: number;
}

function position(index: number): Position {
  const { level, n } = splitStoredHashIndex(index);
  const L = Math.floor(level / TILE_HEIGHT);
  const k = level - L * TILE_HEIGHT;
  const N = Math.floor(n / 2 ** (TILE_HEIGHT - k));
  return { L, N, k, j: n - N * 2 ** (TILE_HEIGHT - k) };
}

/** The tile's hashes at levels 1..H-1 within it, as tlog's tileHash combines them. */
async function innerLevels(crypto: LogCrypto, data: Uint8Array): Promise<Uint8Array[]> {
  const levels = [data];
  let below = data;
  while (levels.length < TILE_HEIGHT && below.length >= 2 * HASH_SIZE) {
    const count = Math.floor(below.length / (2 * HASH_SIZE));
    const above = new Uint8Array(count * HASH_SIZE);
    for (let j = 0; j < count; j++) {
      const left = below.subarray(2 * j * HASH_SIZE, (2 * j + 1) * HASH_SIZE);
      const right = below.subarray((2 * j + 1) * HASH_SIZE, (2 * j + 2) * HASH_SIZE);
      above.set(await nodeHash(crypto, left, right), j * HASH_SIZE);
    }
    levels.push(above);
    below = above;
  }
  return levels;
}

/** Creates a cache of at most `maxBytes` (DEFAULT_TILE_CACHE_BYTES). */
export function createTileCache(
  crypto: LogCrypto,
  maxBytes: number = DEFAULT_TILE_CACHE_BYTES,
): TileCache {
  // A Map iterates in insertion order: re-inserting on use keeps the least recent first.
  const tiles = new Map<string, CachedTile>();
  let bytes = 0;
  const keyOf = (log: LogAddress, level: number, n: number) =>
    `${log.projectId}/${log.environment}/${level}/${n}`;
  // A hash tile's inner levels take at most as much again as its data.
  const cost = (level: number, tile: CachedTile) =>
    level === LEAF_LEVEL ? tile.data.length : 2 * tile.data.length;

  const get = (key: string): CachedTile | undefined => {
    const tile = tiles.get(key);
    if (tile !== undefined) {
      tiles.delete(key);
      tiles.set(key, tile);
    }
    return tile;
  };

  const put = (log: LogAddress, row: TileRow): CachedTile => {
    const key = keyOf(log, row.level, row.n);
    const known = get(key);
    if (known !== undefined && known.data.length >= row.data.length) return known;
    const tile: CachedTile = { data: row.data };
    if (known !== undefined) bytes -= cost(row.level, known);
    tiles.set(key, tile);
    bytes += cost(row.level, tile);
    for (const [oldest, entry] of tiles) {
      if (bytes <= maxBytes || oldest === key) break;
      tiles.delete(oldest);
      bytes -= cost(Number(oldest.split("/")[2]), entry);
    }
    return tile;
  };

  return {
    get bytes() {
      return bytes;
    },
    keep(log, rows) {
      for (const row of rows) put(log, row);
    },
    reader(db, log) {
      // The tiles of this reader's calls, whatever the cache drops meanwhile.
      const held = new Map<string, CachedTile>();
      /** Each wanted tile at least `bytes` long, from the cache or in one query. */
      const tilesFor = async (wanted: readonly { level: number; n: number; bytes: number }[]) => {
        const missing: { level: number; n: number }[] = [];
        for (const w of wanted) {
          const key = keyOf(log, w.level, w.n);
          const tile = held.get(key) ?? get(key);
          if (tile !== undefined && tile.data.length >= w.bytes) held.set(key, tile);
          else missing.push(w);
        }
        if (missing.length > 0) {
          for (const row of await readTiles(db, log, missing)) {
            held.set(keyOf(log, row.level, row.n), put(log, row));
          }
        }
        return wanted.map((w) => {
          const tile = held.get(keyOf(log, w.level, w.n));
          return tile !== undefined && tile.data.length >= w.bytes ? tile : undefined;
        });
      };

      return {
        async readHashes(indexes) {
          const positions = indexes.map(position);
          const found = await tilesFor(
            positions.map((p) => ({ level: p.L, n: p.N, bytes: (p.j + 1) * 2 ** p.k * HASH_SIZE })),
          );
          return Promise.all(
            positions.map(async (p, i): Promise<Hash> => {
              const tile = found[i];
              if (tile === undefined) {
                throw new Error(
                  `log tree: tile ${p.L}/${p.N} missing or short for hash ${indexes[i]}`,
                );
              }
              const at = p.j * HASH_SIZE;
              if (p.k === 0) return tile.data.slice(at, at + HASH_SIZE);
              tile.levels ??= innerLevels(crypto, tile.data);
              const level = (await tile.levels)[p.k];
              if (level === undefined) throw new Error("log tree: bad math in readHashes");
              return level.slice(at, at + HASH_SIZE);
            }),
          );
        },
        async readLeaf(logIndex) {
          const n = Math.floor(logIndex / TILE_WIDTH);
          const offset = (logIndex - n * TILE_WIDTH) * LEAF_SIZE;
          const [tile] = await tilesFor([{ level: LEAF_LEVEL, n, bytes: offset + LEAF_SIZE }]);
          return tile?.data.slice(offset, offset + LEAF_SIZE);
        },
      };
    },
  };
}
