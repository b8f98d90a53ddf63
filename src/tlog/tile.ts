/**
 * Tiles of the stored hashes (Go's `sumdb/tlog` tile.go; the C2SP tlog-tiles layout): a
 * tile of height H at level L, number N lists W consecutive hashes at tree level H*L
 * starting at hash N*2^H; a full tile has W = 2^H. Storing hashes as tiles keeps one row
 * per 2^H hashes instead of one per hash, and a proof in a tree of n leaves touches
 * O(log n / H) tiles.
 *
 * Invariants: a full tile never changes once written; a partial tile of width W is a
 * prefix of every wider tile at the same (H, L, N), so a store may keep only the widest.
 */
import type { LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";
import {
  HASH_SIZE,
  type Hash,
  type HashReader,
  nodeHash,
  splitStoredHashIndex,
  storedHashIndex,
} from "./tree.js";

/** Tile coordinates. */
export interface Tile {
  /** Height, 1..30. */
  readonly H: number;
  /** Level in the tiling, 0..63 (-1: record data, not hashes). */
  readonly L: number;
  /** Number within the level. */
  readonly N: number;
  /** Width, 1..2^H (2^H: a full tile). */
  readonly W: number;
}

function checkHeight(h: number): void {
  if (!Number.isInteger(h) || h < 1 || h > 30) {
    throw new TlogError("invalid-input", `invalid tile height ${h}`);
  }
}

/** The tile of height h and least width that holds the given stored hash index. */
export function tileForIndex(h: number, index: number): Tile {
  checkHeight(h);
  return locate(h, index).tile;
}

/**
 * The tile holding a stored hash, and the byte range of the tile data whose tile hash
 * (tileHash) is that stored hash: a hash at a level within the tile above its bottom is
 * recomputed from the 2^k bottom hashes under it.
 */
function locate(h: number, index: number): { tile: Tile; start: number; end: number } {
  const split = splitStoredHashIndex(index);
  const L = Math.floor(split.level / h);
  const level = split.level - L * h; // level within the tile
  const N = Math.floor((split.n * 2 ** level) / 2 ** h);
  const n = split.n - Math.floor((N * 2 ** h) / 2 ** level); // n within the tile at level
  const W = (n + 1) * 2 ** level;
  return {
    tile: { H: h, L, N, W },
    start: n * 2 ** level * HASH_SIZE,
    end: (n + 1) * 2 ** level * HASH_SIZE,
  };
}

/**
 * The stored hash at index, read from tile t's data, where t is tileForIndex(t.H, index)
 * or a wider tile at the same coordinates.
 */
export async function hashFromTile(
  crypto: LogCrypto,
  t: Tile,
  data: Uint8Array,
  index: number,
): Promise<Hash> {
  if (t.H < 1 || t.H > 30 || t.L < 0 || t.L >= 64 || t.W < 1 || t.W > 2 ** t.H) {
    throw new TlogError("invalid-input", `invalid tile ${tilePath(t)}`);
  }
  if (data.length < t.W * HASH_SIZE) {
    throw new TlogError("malformed", `data len ${data.length} too short for tile ${tilePath(t)}`);
  }
  const { tile, start, end } = locate(t.H, index);
  if (t.L !== tile.L || t.N !== tile.N || t.W < tile.W) {
    throw new TlogError(
      "invalid-input",
      `index ${index} is in ${tilePath(tile)} not ${tilePath(t)}`,
    );
  }
  return tileHash(crypto, data.subarray(start, end));
}

/** The subtree hash over 2^k hashes of tile data. */
async function tileHash(crypto: LogCrypto, data: Uint8Array): Promise<Hash> {
  if (data.length === 0) throw new Error("tlog: bad math in tileHash");
  if (data.length === HASH_SIZE) return data.slice();
  const half = data.length / 2;
  return nodeHash(
    crypto,
    await tileHash(crypto, data.subarray(0, half)),
    await tileHash(crypto, data.subarray(half)),
  );
}

/**
 * The tiles of height h to write when the tree grows from oldTreeSize to newTreeSize:
 * every full tile completed and each partial tile at its new widths.
 */
export function newTiles(h: number, oldTreeSize: number, newTreeSize: number): Tile[] {
  checkHeight(h);
  const tiles: Tile[] = [];
  const step = 2 ** h;
  for (let level = 0; Math.floor(newTreeSize / 2 ** (h * level)) > 0; level++) {
    const oldN = Math.floor(oldTreeSize / 2 ** (h * level));
    const newN = Math.floor(newTreeSize / 2 ** (h * level));
    for (let n = Math.floor(oldN / step); n < Math.floor(newN / step); n++) {
      tiles.push({ H: h, L: level, N: n, W: step });
    }
    const n = Math.floor(newN / step);
    const maxW = newN - n * step;
    const minW = oldN > n * step ? oldN - n * step : 1;
    for (let w = minW; w <= maxW; w++) tiles.push({ H: h, L: level, N: n, W: w });
  }
  return tiles;
}

/** The data of tile t: its W hashes, concatenated, read from the hash store. */
export async function readTileData(t: Tile, reader: HashReader): Promise<Uint8Array> {
  const size = t.W === 0 ? 2 ** t.H : t.W;
  const start = t.N * 2 ** t.H;
  const indexes: number[] = [];
  for (let i = 0; i < size; i++) indexes.push(storedHashIndex(t.H * t.L, start + i));
  const hashes = await reader.readHashes(indexes);
  if (hashes.length !== indexes.length) {
    throw new TlogError(
      "storage",
      `tlog: readHashes(${indexes.length} indexes) = ${hashes.length} hashes`,
    );
  }
  const out = new Uint8Array(size * HASH_SIZE);
  hashes.forEach((hash, i) => {
    out.set(hash, i * HASH_SIZE);
  });
  return out;
}

const PATH_BASE = 1000;

/** The tile's coordinate path, tile/H/L/NNN[.p/W], with N in 3-digit x-prefixed groups. */
export function tilePath(t: Tile): string {
  let n = t.N;
  let nStr = String(n % PATH_BASE).padStart(3, "0");
  while (n >= PATH_BASE) {
    n = Math.floor(n / PATH_BASE);
    nStr = `x${String(n % PATH_BASE).padStart(3, "0")}/${nStr}`;
  }
  const p = t.W !== 2 ** t.H ? `.p/${t.W}` : "";
  const L = t.L === -1 ? "data" : String(t.L);
  return `tile/${t.H}/${L}/${nStr}${p}`;
}

/** Parses a tile coordinate path; throws TlogError "malformed" unless canonical. */
export function parseTilePath(path: string): Tile {
  const bad = () => new TlogError("malformed", `malformed tile path ${JSON.stringify(path)}`);
  const f = path.split("/");
  if (f.length < 4 || f[0] !== "tile") throw bad();
  const decimal = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : NaN);
  const h = decimal(f[1]);
  const isData = f[2] === "data";
  let l = isData ? 0 : decimal(f[2]);
  if (Number.isNaN(h) || Number.isNaN(l) || h < 1 || h > 30) throw bad();
  let w = 2 ** h;
  let parts = f.slice(3);
  const dotP = parts[parts.length - 2];
  if (dotP?.endsWith(".p")) {
    const ww = decimal(parts[parts.length - 1]);
    if (Number.isNaN(ww) || ww <= 0 || ww >= w) throw bad();
    w = ww;
    parts = [...parts.slice(0, -2), dotP.slice(0, -2)];
  }
  let n = 0;
  for (const s of parts) {
    const nn = decimal(s.startsWith("x") ? s.slice(1) : s);
    if (Number.isNaN(nn) || nn >= PATH_BASE) throw bad();
    n = n * PATH_BASE + nn;
  }
  if (isData) l = -1;
  const t = { H: h, L: l, N: n, W: w };
  if (tilePath(t) !== path) throw bad();
  return t;
}
