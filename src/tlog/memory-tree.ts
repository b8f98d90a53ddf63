/**
 * A log tree held in memory: the stored hashes in one array, appended leaf by leaf. For
 * tests, the CLI's bundle checks and small tools; the service stores its hashes in the
 * database behind the same HashReader interface.
 *
 * Invariant: after append() of leaves 0..n-1, `hashes` holds exactly storedHashCount(n)
 * hashes, at their storedHashIndex positions.
 */
import type { LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";
import {
  type Hash,
  type HashReader,
  proveRecord,
  proveTree,
  type RecordProof,
  recordHash,
  storedHashesForRecordHash,
  type TreeProof,
  treeHash,
} from "./tree.js";

/** A growing tree in memory. */
export interface MemoryTree extends HashReader {
  /** Number of leaves. */
  readonly size: number;
  /** Appends a leaf; returns its index. */
  append(leaf: Uint8Array): Promise<number>;
  /** Root hash of the first n leaves (default: all). */
  root(n?: number): Promise<Hash>;
  /** Inclusion proof of leaf index in the tree of size t (default: all). */
  proveRecord(index: number, t?: number): Promise<RecordProof>;
  /** Consistency proof from size n to size t (default: all). */
  proveTree(n: number, t?: number): Promise<TreeProof>;
}

/** A new, empty tree in memory. */
export function createMemoryTree(crypto: LogCrypto): MemoryTree {
  const hashes: Hash[] = [];
  let size = 0;
  const reader: HashReader = {
    readHashes(indexes) {
      return indexes.map((index) => {
        const hash = hashes[index];
        if (hash === undefined) throw new TlogError("storage", `no stored hash ${index}`);
        return hash;
      });
    },
  };
  return {
    get size() {
      return size;
    },
    readHashes: reader.readHashes,
    async append(leaf) {
      const index = size;
      const added = await storedHashesForRecordHash(
        crypto,
        index,
        await recordHash(crypto, leaf),
        reader,
      );
      hashes.push(...added);
      size++;
      return index;
    },
    root(n = size) {
      return treeHash(crypto, n, reader);
    },
    proveRecord(index, t = size) {
      return proveRecord(crypto, t, index, reader);
    },
    proveTree(n, t = size) {
      return proveTree(crypto, t, n, reader);
    },
  };
}
