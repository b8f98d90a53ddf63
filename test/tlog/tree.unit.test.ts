/**
 * The Merkle tree against the RFC 6962 test vectors used by certificate-transparency-go
 * and transparency-dev/merkle (eight leaves, the roots of every prefix, inclusion and
 * consistency proofs), against the RFC's own recursive definitions for every small size,
 * and against corrupted proofs.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromHex, toHex } from "../../src/tlog/bytes.js";
import type { LogCrypto } from "../../src/tlog/crypto.js";
import { createWebLogCrypto } from "../../src/tlog/crypto.js";
import { createMemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import {
  checkRecord,
  checkTree,
  type Hash,
  recordHash,
  splitStoredHashIndex,
  storedHashCount,
  storedHashIndex,
} from "../../src/tlog/tree.js";

const node = createNodeLogCrypto();
const web = createWebLogCrypto();

function h(hex: string): Uint8Array {
  const bytes = fromHex(hex);
  if (bytes === undefined) throw new Error(`bad hex ${hex}`);
  return bytes;
}

// RFC 6962 test vectors (certificate-transparency-go, transparency-dev/merkle proof tests).
const LEAVES = [
  "",
  "00",
  "10",
  "2021",
  "3031",
  "40414243",
  "5051525354555657",
  "606162636465666768696a6b6c6d6e6f",
].map(h);

const ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/** Inclusion proofs: leaf is 1-based as in the vectors' source. */
const INCLUSION = [
  { leaf: 1, size: 1, proof: [] },
  {
    leaf: 1,
    size: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    leaf: 6,
    size: 8,
    proof: [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  {
    leaf: 3,
    size: 3,
    proof: ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
  },
  {
    leaf: 2,
    size: 5,
    proof: [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  },
];

const CONSISTENCY = [
  { size1: 1, size2: 1, proof: [] },
  {
    size1: 1,
    size2: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    size1: 6,
    size2: 8,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  {
    size1: 2,
    size2: 5,
    proof: [
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  },
  {
    size1: 6,
    size2: 7,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
];

async function vectorTree(crypto: LogCrypto) {
  const tree = createMemoryTree(crypto);
  for (const leaf of LEAVES) await tree.append(leaf);
  return tree;
}

async function rejects(check: Promise<void>): Promise<boolean> {
  try {
    await check;
    return false;
  } catch {
    return true;
  }
}

function flip(proof: Hash[], i: number, bit: number): Hash[] {
  return proof.map((hash, j) => {
    if (j !== i) return hash;
    const copy = hash.slice();
    copy[0] = (copy[0] ?? 0) ^ bit;
    return copy;
  });
}

describe.each([
  ["node:crypto", node],
  ["WebCrypto", web],
])("RFC 6962 vectors with %s", (_name, crypto) => {
  it("gives the root of every prefix of the eight test leaves", async () => {
    const tree = await vectorTree(crypto);
    for (let size = 1; size <= 8; size++) {
      expect(toHex(await tree.root(size)), `root of ${size}`).toBe(ROOTS[size - 1]);
    }
  });

  it("builds exactly the vectors' inclusion proofs, and they check", async () => {
    const tree = await vectorTree(crypto);
    for (const { leaf, size, proof } of INCLUSION) {
      const built = await tree.proveRecord(leaf - 1, size);
      expect(built.map(toHex), `leaf ${leaf - 1} in ${size}`).toEqual(proof);
      const leafHash = await recordHash(crypto, LEAVES[leaf - 1] ?? new Uint8Array());
      await checkRecord(crypto, built, size, h(ROOTS[size - 1] ?? ""), leaf - 1, leafHash);
    }
  });

  it("builds exactly the vectors' consistency proofs, and they check", async () => {
    const tree = await vectorTree(crypto);
    for (const { size1, size2, proof } of CONSISTENCY) {
      const built = await tree.proveTree(size1, size2);
      expect(built.map(toHex), `${size1} to ${size2}`).toEqual(proof);
      await checkTree(
        crypto,
        built,
        size2,
        h(ROOTS[size2 - 1] ?? ""),
        size1,
        h(ROOTS[size1 - 1] ?? ""),
      );
    }
  });
});

describe("corrupted proofs", () => {
  const someHash = h("abacaba000000000000000000000000000000000000000000060061e00123456");

  it("an inclusion proof fails for a wrong index, size, leaf, root, or any changed hash", async () => {
    for (const { leaf, size, proof: hex } of INCLUSION.filter((v) => v.proof.length > 0)) {
      const proof = hex.map(h);
      const n = leaf - 1;
      const root = h(ROOTS[size - 1] ?? "");
      const leafHash = await recordHash(node, LEAVES[n] ?? new Uint8Array());
      const probes: [string, Promise<void>][] = [
        ["index - 1", checkRecord(node, proof, size, root, n - 1, leafHash)],
        ["index + 1", checkRecord(node, proof, size, root, n + 1, leafHash)],
        ["index ^ 2", checkRecord(node, proof, size, root, n ^ 2, leafHash)],
        ["size * 2", checkRecord(node, proof, size * 2, root, n, leafHash)],
        ["size / 2", checkRecord(node, proof, Math.floor(size / 2), root, n, leafHash)],
        ["wrong leaf", checkRecord(node, proof, size, root, n, someHash)],
        ["random root", checkRecord(node, proof, size, someHash, n, leafHash)],
        ["trailing root", checkRecord(node, [...proof, root], size, root, n, leafHash)],
        ["preceding root", checkRecord(node, [root, ...proof], size, root, n, leafHash)],
        ["removed component", checkRecord(node, proof.slice(0, -1), size, root, n, leafHash)],
        ...proof.map((_, i): [string, Promise<void>] => [
          `proof[${i}] bit 3`,
          checkRecord(node, flip(proof, i, 8), size, root, n, leafHash),
        ]),
      ];
      for (const [name, probe] of probes) {
        expect(await rejects(probe), `leaf ${n} in ${size}: ${name}`).toBe(true);
      }
    }
  });

  it("a consistency proof fails for wrong sizes, roots, or any changed, added or missing hash", async () => {
    for (const { size1, size2, proof: hex } of CONSISTENCY.filter((v) => v.proof.length > 0)) {
      const proof = hex.map(h);
      const root1 = h(ROOTS[size1 - 1] ?? "");
      const root2 = h(ROOTS[size2 - 1] ?? "");
      const probes: [string, Promise<void>][] = [
        ["size1 - 1", checkTree(node, proof, size2, root2, size1 - 1, root1)],
        ["size1 + 1", checkTree(node, proof, size2, root2, size1 + 1, root1)],
        ["size1 ^ 2", checkTree(node, proof, size2, root2, size1 ^ 2, root1)],
        ["size2 * 2", checkTree(node, proof, size2 * 2, root2, size1, root1)],
        ["size2 / 2", checkTree(node, proof, Math.floor(size2 / 2), root2, size1, root1)],
        ["wrong root1", checkTree(node, proof, size2, root2, size1, someHash)],
        ["wrong root2", checkTree(node, proof, size2, someHash, size1, root1)],
        ["swapped roots", checkTree(node, proof, size2, root1, size1, root2)],
        ["empty proof", checkTree(node, [], size2, root2, size1, root1)],
        ["trailing root1", checkTree(node, [...proof, root1], size2, root2, size1, root1)],
        [
          "preceding proof[0]",
          checkTree(node, [proof[0] ?? root1, ...proof], size2, root2, size1, root1),
        ],
        ["truncated", checkTree(node, proof.slice(0, -1), size2, root2, size1, root1)],
        ...proof.map((_, i): [string, Promise<void>] => [
          `proof[${i}] bit 4`,
          checkTree(node, flip(proof, i, 16), size2, root2, size1, root1),
        ]),
      ];
      for (const [name, probe] of probes) {
        expect(await rejects(probe), `${size1} to ${size2}: ${name}`).toBe(true);
      }
    }
  });

  it("refuses impossible arguments as invalid input rather than proof failures", async () => {
    const root = h(ROOTS[0] ?? "");
    for (const [t, n] of [
      [0, 0],
      [1, 1],
      [1, -1],
      [2 ** 60, 0],
    ] as const) {
      await expect(checkRecord(node, [], t, root, n, root)).rejects.toMatchObject({
        code: "invalid-input",
      });
    }
    await expect(checkTree(node, [], 1, root, 2, root)).rejects.toMatchObject({
      code: "invalid-input",
    });
    await expect(checkTree(node, [], 1, root, 0, root)).rejects.toMatchObject({
      code: "invalid-input",
    });
  });
});

/** RFC 6962 §2.1 MTH, PATH and PROOF, written from the RFC's recursive definitions. */
function reference(leaves: Uint8Array[]) {
  const crypto = node;
  const sha = (...parts: Uint8Array[]) => crypto.sha256(...parts) as Uint8Array;
  const k = (n: number) => {
    let p = 1;
    while (p * 2 < n) p *= 2;
    return p;
  };
  const mth = (d: Uint8Array[]): Uint8Array => {
    if (d.length === 1) return sha(new Uint8Array([0]), d[0] ?? new Uint8Array());
    const split = k(d.length);
    return sha(new Uint8Array([1]), mth(d.slice(0, split)), mth(d.slice(split)));
  };
  const path = (m: number, d: Uint8Array[]): Uint8Array[] => {
    if (d.length === 1) return [];
    const split = k(d.length);
    return m < split
      ? [...path(m, d.slice(0, split)), mth(d.slice(split))]
      : [...path(m - split, d.slice(split)), mth(d.slice(0, split))];
  };
  const subproof = (m: number, d: Uint8Array[], b: boolean): Uint8Array[] => {
    if (m === d.length) return b ? [] : [mth(d)];
    const split = k(d.length);
    return m <= split
      ? [...subproof(m, d.slice(0, split), b), mth(d.slice(split))]
      : [...subproof(m - split, d.slice(split), false), mth(d.slice(0, split))];
  };
  return {
    root: (n: number) => mth(leaves.slice(0, n)),
    path: (m: number, n: number) => path(m, leaves.slice(0, n)),
    proof: (m: number, n: number) => subproof(m, leaves.slice(0, n), true),
  };
}

describe("against RFC 6962's definitions", () => {
  it("roots, audit paths and consistency proofs agree for every size up to 70", async () => {
    const leaves = Array.from({ length: 70 }, (_, i) => new TextEncoder().encode(`leaf ${i}`));
    const ref = reference(leaves);
    const tree = createMemoryTree(node);
    for (const leaf of leaves) await tree.append(leaf);
    for (let n = 1; n <= leaves.length; n++) {
      expect(toHex(await tree.root(n)), `root ${n}`).toBe(toHex(ref.root(n)));
      for (let m = 0; m < n; m++) {
        expect((await tree.proveRecord(m, n)).map(toHex), `path ${m} in ${n}`).toEqual(
          ref.path(m, n).map(toHex),
        );
        expect((await tree.proveTree(m + 1, n)).map(toHex), `proof ${m + 1} to ${n}`).toEqual(
          ref.proof(m + 1, n).map(toHex),
        );
      }
    }
  });

  it("every built proof checks, for random sizes and positions", async () => {
    const tree = createMemoryTree(node);
    for (let i = 0; i < 300; i++) await tree.append(new Uint8Array([i & 0xff, i >> 8]));
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 1, max: 300 })
          .chain((t) =>
            fc.tuple(
              fc.constant(t),
              fc.integer({ min: 0, max: t - 1 }),
              fc.integer({ min: 1, max: t }),
            ),
          ),
        async ([t, n, m]) => {
          const leafHash = await recordHash(node, new Uint8Array([n & 0xff, n >> 8]));
          const root = await tree.root(t);
          await checkRecord(node, await tree.proveRecord(n, t), t, root, n, leafHash);
          await checkTree(node, await tree.proveTree(m, t), t, root, m, await tree.root(m));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("stored hash layout", () => {
  it("splitStoredHashIndex inverts storedHashIndex (Go's TestSplitStoredHashIndex)", () => {
    for (let l = 0; l < 10; l++) {
      for (let n = 0; n < 100; n++) {
        expect(splitStoredHashIndex(storedHashIndex(l, n))).toEqual({ level: l, n });
      }
    }
  });

  it("a tree of n leaves stores 2n - popcount(n) hashes, exactly as many as appended", async () => {
    const tree = createMemoryTree(node);
    const stored: number[] = [];
    for (let n = 1; n <= 100; n++) {
      await tree.append(new Uint8Array([n]));
      stored.push(storedHashCount(n));
      const popcount = n.toString(2).replaceAll("0", "").length;
      expect(storedHashCount(n)).toBe(2 * n - popcount);
    }
    // The hash of leaf n sits right where its first stored hash goes.
    expect(storedHashIndex(0, 99)).toBe(stored[98]);
  });

  it("index arithmetic stays exact beyond 32 bits", () => {
    const n = 2 ** 40 + 12345;
    const index = storedHashIndex(3, n);
    expect(index).toBeGreaterThan(2 ** 43);
    expect(splitStoredHashIndex(index)).toEqual({ level: 3, n });
    expect(storedHashCount(2 ** 45)).toBe(2 ** 46 - 1);
  });
});
