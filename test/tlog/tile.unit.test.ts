/**
 * Tiles: the coordinate paths of Go's tlog tests, and every stored hash of trees of many
 * sizes read back from the tiles newTiles says to write.
 */
import { describe, expect, it } from "vitest";
import { toHex } from "../../src/tlog/bytes.js";
import { createMemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import {
  hashFromTile,
  newTiles,
  parseTilePath,
  readTileData,
  type Tile,
  tileForIndex,
  tilePath,
} from "../../src/tlog/tile.js";
import { storedHashCount } from "../../src/tlog/tree.js";

const crypto = createNodeLogCrypto();

describe("tile paths (Go's TestTilePath)", () => {
  const paths: [string, Tile | undefined][] = [
    ["tile/4/0/001", { H: 4, L: 0, N: 1, W: 16 }],
    ["tile/4/0/001.p/5", { H: 4, L: 0, N: 1, W: 5 }],
    ["tile/3/5/x123/x456/078", { H: 3, L: 5, N: 123456078, W: 8 }],
    ["tile/3/5/x123/x456/078.p/2", { H: 3, L: 5, N: 123456078, W: 2 }],
    ["tile/1/0/x003/x057/500", { H: 1, L: 0, N: 3057500, W: 2 }],
    ["tile/3/5/123/456/078", undefined],
    ["tile/3/-1/123/456/078", undefined],
    ["tile/1/data/x003/x057/500", { H: 1, L: -1, N: 3057500, W: 2 }],
  ];
  it.each(paths)("%s", (path, tile) => {
    if (tile === undefined) {
      expect(() => parseTilePath(path)).toThrow(/malformed tile path/);
      return;
    }
    expect(tilePath(tile)).toBe(path);
    expect(parseTilePath(path)).toEqual(tile);
  });
});

describe("tiles hold the stored hashes", () => {
  it("every stored hash of trees up to 100 leaves reads back from its tile (heights 1-3)", async () => {
    const tree = createMemoryTree(crypto);
    for (let size = 1; size <= 100; size++) {
      await tree.append(new Uint8Array([size]));
      for (const h of [1, 2, 3]) {
        // Keep the widest version of each tile newTiles asks for, as a store would.
        const stored = new Map<string, { tile: Tile; data: Uint8Array }>();
        for (const tile of newTiles(h, 0, size)) {
          stored.set(`${tile.L}/${tile.N}`, { tile, data: await readTileData(tile, tree) });
        }
        for (let index = 0; index < storedHashCount(size); index++) {
          const want = tileForIndex(h, index);
          const found = stored.get(`${want.L}/${want.N}`);
          expect(found, `size ${size} h ${h} index ${index}`).toBeDefined();
          if (found === undefined) continue;
          const [expected] = await tree.readHashes([index]);
          expect(toHex(await hashFromTile(crypto, found.tile, found.data, index))).toBe(
            toHex(expected ?? new Uint8Array()),
          );
        }
      }
    }
  });

  it("growing a tree lists the tiles Go's NewTiles lists (from the old width of each partial tile)", () => {
    const tiles = newTiles(2, 5, 9).map(tilePath);
    expect(tiles).toEqual([
      "tile/2/0/001",
      "tile/2/0/002.p/1",
      "tile/2/1/000.p/1",
      "tile/2/1/000.p/2",
    ]);
  });
});
