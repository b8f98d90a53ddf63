/**
 * The Merkle tree of a log: RFC 6962 §2.1 (= RFC 9162 §2.1) hashing, the dense stored-hash
 * layout, tree hashes, inclusion ("record") and consistency ("tree") proofs and their
 * checks. Function for function this follows Go's `golang.org/x/mod/sumdb/tlog` (tlog.go),
 * so that its CheckRecord / CheckTree accept our proofs unchanged and its layout
 * arguments carry over: StoredHashIndex, StoredHashes, TreeHash, ProveRecord, ProveTree,
 * CheckRecord, CheckTree.
 *
 * Invariants:
 * - leaf hash = SHA-256(0x00 || leaf bytes); interior = SHA-256(0x01 || left || right);
 *   the tree of n leaves splits at the largest power of two smaller than n.
 * - The stored hashes of a tree of n leaves are those appended by storedHashes for
 *   leaves 0..n-1, at indexes storedHashIndex(0, i) onwards: 2n - popcount(n) of them
 *   (storedHashCount). A hash once stored never changes as the tree grows.
 * - Proof building reads all the hashes it needs from the HashReader in one call
 *   (at most 2 log2(n) of them), so a database-backed reader answers with one query.
 * - Numbers are JavaScript numbers, exact up to 2^53: sizes up to 2^52 leaves, far past
 *   any log here. No 32-bit bitwise operator touches an index.
 */
import { bytesEqual } from "./bytes.js";
import type { Awaitable, LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";

/** Size of a hash in bytes. */
export const HASH_SIZE = 32;

/** A SHA-256 hash: a leaf, interior node or tree root. */
export type Hash = Uint8Array;

/**
 * Reads stored hashes by stored-hash index (storedHashIndex). Must return exactly one hash
 * per index, in the order asked, or throw. Indexes come sorted when that helps a store.
 */
export interface HashReader {
  readHashes(indexes: readonly number[]): Awaitable<Hash[]>;
}

/** A proof that a tree contains a leaf (RFC 6962 "Merkle audit path"), leaf end first. */
export type RecordProof = Hash[];

/** A proof that a tree extends an earlier one (RFC 6962 "Merkle consistency proof"). */
export type TreeProof = Hash[];

const LEAF_PREFIX = new Uint8Array([0x00]);
const NODE_PREFIX = new Uint8Array([0x01]);

function checkCount(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TlogError("invalid-input", `${what} must be a non-negative integer, got ${value}`);
  }
}

/** floor(n / 2^k) without 32-bit truncation. */
function shr(n: number, k: number): number {
  return Math.floor(n / 2 ** k);
}

/** Trailing zero bits of n >= 1. */
function trailingZeros(n: number): number {
  let zeros = 0;
  while (n % 2 === 0) {
    n /= 2;
    zeros++;
  }
  return zeros;
}

/** The largest power of two k < n (n >= 2), and l = log2(k). */
function maxpow2(n: number): { k: number; l: number } {
  let l = 0;
  while (2 ** (l + 1) < n) l++;
  return { k: 2 ** l, l };
}

/** The leaf hash of a record: SHA-256(0x00 || data). */
export async function recordHash(crypto: LogCrypto, data: Uint8Array): Promise<Hash> {
  return crypto.sha256(LEAF_PREFIX, data);
}

/** The hash of an interior node: SHA-256(0x01 || left || right). */
export async function nodeHash(crypto: LogCrypto, left: Hash, right: Hash): Promise<Hash> {
  return crypto.sha256(NODE_PREFIX, left, right);
}

/**
 * Maps tree coordinates (level, n) to a dense linear order for storage (Crosby and
 * Wallach §3.3): level L's n'th hash is stored right after level L+1's (2n+1)'th.
 */
export function storedHashIndex(level: number, n: number): number {
  checkCount(level, "level");
  checkCount(n, "n");
  for (let l = level; l > 0; l--) n = 2 * n + 1;
  let i = 0;
  for (; n > 0; n = shr(n, 1)) i += n;
  return i + level;
}

/** The inverse of storedHashIndex: the (level, n) stored at an index. */
export function splitStoredHashIndex(index: number): { level: number; n: number } {
  checkCount(index, "index");
  // storedHashIndex(0, n) < 2n, so the leaf we want is in [index/2, index/2 + log2(index)].
  let n = shr(index, 1);
  let indexN = storedHashIndex(0, n);
  if (indexN > index) throw new Error("tlog: bad math in splitStoredHashIndex");
  for (;;) {
    // Leaf n adds 1 + trailingZeros(n + 1) hashes.
    const x = indexN + 1 + trailingZeros(n + 1);
    if (x > index) break;
    n++;
    indexN = x;
  }
  // The hash was stored with leaf n: it is one of (0, n), (1, n/2), (2, n/4), ...
  const level = index - indexN;
  return { level, n: shr(n, level) };
}

/** The number of hashes stored for a tree of n leaves. */
export function storedHashCount(n: number): number {
  checkCount(n, "n");
  if (n === 0) return 0;
  let count = storedHashIndex(0, n - 1) + 1;
  for (let i = n - 1; i % 2 === 1; i = shr(i, 1)) count++;
  return count;
}

/**
 * The hashes to store when appending leaf n with the given data, to be stored from index
 * storedHashIndex(0, n) on: the leaf hash and the hash of every subtree it completes.
 */
export async function storedHashes(
  crypto: LogCrypto,
  n: number,
  data: Uint8Array,
  reader: HashReader,
): Promise<Hash[]> {
  return storedHashesForRecordHash(crypto, n, await recordHash(crypto, data), reader);
}

/** storedHashes given the leaf hash rather than the leaf data. */
export async function storedHashesForRecordHash(
  crypto: LogCrypto,
  n: number,
  leafHash: Hash,
  reader: HashReader,
): Promise<Hash[]> {
  checkCount(n, "n");
  const hashes = [leafHash];
  // Each trailing 1 bit of n completes a subtree and consumes the hash of its left sibling.
  const m = trailingZeros(n + 1);
  const indexes: number[] = new Array(m);
  for (let i = 0; i < m; i++) indexes[m - 1 - i] = storedHashIndex(i, shr(n, i) - 1);
  const old = await readExactly(reader, indexes);
  let h = leafHash;
  for (let i = 0; i < m; i++) {
    h = await nodeHash(crypto, old[m - 1 - i], h);
    hashes.push(h);
  }
  return hashes;
}

async function readExactly(reader: HashReader, indexes: number[]): Promise<Hash[]> {
  if (indexes.length === 0) return [];
  const hashes = await reader.readHashes(indexes);
  if (hashes.length !== indexes.length) {
    throw new TlogError(
      "storage",
      `tlog: readHashes(${indexes.length} indexes) = ${hashes.length} hashes`,
    );
  }
  for (const hash of hashes) {
    if (hash.length !== HASH_SIZE) throw new TlogError("storage", "tlog: stored hash not 32 bytes");
  }
  return hashes;
}

/**
 * The root hash of the tree of n leaves, from the hashes stored for them (one read of at
 * most 1 + log2(n) hashes). The empty tree's hash is defined here, as in Go's tlog, as 32
 * zero bytes; checkpoints of size 0 carry it.
 */
export async function treeHash(crypto: LogCrypto, n: number, reader: HashReader): Promise<Hash> {
  checkCount(n, "n");
  if (n === 0) return new Uint8Array(HASH_SIZE);
  const indexes = subTreeIndex(0, n, []);
  const hashes = await readExactly(reader, indexes);
  const { hash, rest } = await subTreeHash(crypto, 0, n, hashes);
  if (rest.length !== 0) throw new Error("tlog: bad index math in treeHash");
  return hash;
}

/** Appends the stored-hash indexes needed for the hash of the subtree of leaves [lo, hi). */
function subTreeIndex(lo: number, hi: number, need: number[]): number[] {
  while (lo < hi) {
    const { k, l } = maxpow2(hi - lo + 1);
    if (lo % k !== 0) throw new Error("tlog: bad math in subTreeIndex");
    need.push(storedHashIndex(l, shr(lo, l)));
    lo += k;
  }
  return need;
}

/**
 * The hash of the subtree of leaves [lo, hi) from the hashes of subTreeIndex(lo, hi):
 * the subtree splits into complete subtrees of decreasing size, whose stored hashes are
 * combined right to left. Returns the hashes left over.
 */
async function subTreeHash(
  crypto: LogCrypto,
  lo: number,
  hi: number,
  hashes: Hash[],
): Promise<{ hash: Hash; rest: Hash[] }> {
  let numTree = 0;
  while (lo < hi) {
    const { k } = maxpow2(hi - lo + 1);
    if (lo % k !== 0 || lo >= hi) throw new Error("tlog: bad math in subTreeHash");
    numTree++;
    lo += k;
  }
  if (hashes.length < numTree) throw new Error("tlog: bad index math in subTreeHash");
  let h = hashes[numTree - 1];
  for (let i = numTree - 2; i >= 0; i--) h = await nodeHash(crypto, hashes[i], h);
  return { hash: h, rest: hashes.slice(numTree) };
}

/** The proof that the tree of size t contains leaf n. */
export async function proveRecord(
  crypto: LogCrypto,
  t: number,
  n: number,
  reader: HashReader,
): Promise<RecordProof> {
  checkCount(t, "tree size");
  checkCount(n, "leaf index");
  if (n >= t) throw new TlogError("invalid-input", "tlog: invalid inputs in proveRecord");
  const indexes = leafProofIndex(0, t, n, []);
  if (indexes.length === 0) return [];
  const hashes = await readExactly(reader, indexes);
  const { proof, rest } = await leafProof(crypto, 0, t, n, hashes);
  if (rest.length !== 0) throw new Error("tlog: bad index math in proveRecord");
  return proof;
}

/** Appends the indexes needed for the proof that leaf n is in the subtree [lo, hi). */
function leafProofIndex(lo: number, hi: number, n: number, need: number[]): number[] {
  if (!(lo <= n && n < hi)) throw new Error("tlog: bad math in leafProofIndex");
  if (lo + 1 === hi) return need;
  const { k } = maxpow2(hi - lo);
  if (n < lo + k) {
    leafProofIndex(lo, lo + k, n, need);
    subTreeIndex(lo + k, hi, need);
  } else {
    subTreeIndex(lo, lo + k, need);
    leafProofIndex(lo + k, hi, n, need);
  }
  return need;
}

/** The proof that leaf n is in the subtree [lo, hi): the hash of each path not taken. */
async function leafProof(
  crypto: LogCrypto,
  lo: number,
  hi: number,
  n: number,
  hashes: Hash[],
): Promise<{ proof: RecordProof; rest: Hash[] }> {
  if (!(lo <= n && n < hi)) throw new Error("tlog: bad math in leafProof");
  // The verifier has the leaf hash itself.
  if (lo + 1 === hi) return { proof: [], rest: hashes };
  const { k } = maxpow2(hi - lo);
  if (n < lo + k) {
    const left = await leafProof(crypto, lo, lo + k, n, hashes);
    const right = await subTreeHash(crypto, lo + k, hi, left.rest);
    return { proof: [...left.proof, right.hash], rest: right.rest };
  }
  const left = await subTreeHash(crypto, lo, lo + k, hashes);
  const right = await leafProof(crypto, lo + k, hi, n, left.rest);
  return { proof: [...right.proof, left.hash], rest: right.rest };
}

/**
 * Checks that proof shows that the tree of size t with root hash th has leaf n with leaf
 * hash h. Throws TlogError "invalid-input" or "proof-failed"; returns when it holds.
 */
export async function checkRecord(
  crypto: LogCrypto,
  proof: readonly Hash[],
  t: number,
  th: Hash,
  n: number,
  h: Hash,
): Promise<void> {
  if (!Number.isSafeInteger(t) || !Number.isSafeInteger(n) || t < 0 || n < 0 || n >= t) {
    throw new TlogError("invalid-input", "tlog: invalid inputs in checkRecord");
  }
  const root = await runRecordProof(crypto, proof, 0, t, n, h);
  if (!bytesEqual(root, th)) throw proofFailed();
}

function proofFailed(): TlogError {
  return new TlogError("proof-failed", "invalid transparency proof");
}

/** The root of the subtree [lo, hi) implied by the proof that leaf n is in it. */
async function runRecordProof(
  crypto: LogCrypto,
  proof: readonly Hash[],
  lo: number,
  hi: number,
  n: number,
  leafHash: Hash,
): Promise<Hash> {
  if (!(lo <= n && n < hi)) throw new Error("tlog: bad math in runRecordProof");
  if (lo + 1 === hi) {
    // At the leaf: the proof must hold nothing more.
    if (proof.length !== 0) throw proofFailed();
    return leafHash;
  }
  if (proof.length === 0) throw proofFailed();
  const last = proof[proof.length - 1];
  const inner = proof.slice(0, -1);
  const { k } = maxpow2(hi - lo);
  if (n < lo + k) {
    return nodeHash(crypto, await runRecordProof(crypto, inner, lo, lo + k, n, leafHash), last);
  }
  return nodeHash(crypto, last, await runRecordProof(crypto, inner, lo + k, hi, n, leafHash));
}

/** The proof that the tree of size t contains the tree of size n as a prefix. */
export async function proveTree(
  crypto: LogCrypto,
  t: number,
  n: number,
  reader: HashReader,
): Promise<TreeProof> {
  checkCount(t, "tree size");
  checkCount(n, "old tree size");
  if (t < 1 || n < 1 || n > t) {
    throw new TlogError("invalid-input", "tlog: invalid inputs in proveTree");
  }
  const indexes = treeProofIndex(0, t, n, []);
  if (indexes.length === 0) return [];
  const hashes = await readExactly(reader, indexes);
  const { proof, rest } = await treeProof(crypto, 0, t, n, hashes);
  if (rest.length !== 0) throw new Error("tlog: bad index math in proveTree");
  return proof;
}

/** Appends the indexes needed for the part of the consistency proof in subtree [lo, hi). */
function treeProofIndex(lo: number, hi: number, n: number, need: number[]): number[] {
  if (!(lo < n && n <= hi)) throw new Error("tlog: bad math in treeProofIndex");
  if (n === hi) {
    if (lo === 0) return need;
    return subTreeIndex(lo, hi, need);
  }
  const { k } = maxpow2(hi - lo);
  if (n <= lo + k) {
    treeProofIndex(lo, lo + k, n, need);
    subTreeIndex(lo + k, hi, need);
  } else {
    subTreeIndex(lo, lo + k, need);
    treeProofIndex(lo + k, hi, n, need);
  }
  return need;
}

/** The part of the consistency proof in subtree [lo, hi). */
async function treeProof(
  crypto: LogCrypto,
  lo: number,
  hi: number,
  n: number,
  hashes: Hash[],
): Promise<{ proof: TreeProof; rest: Hash[] }> {
  if (!(lo < n && n <= hi)) throw new Error("tlog: bad math in treeProof");
  if (n === hi) {
    // This subtree is entirely in the old tree. If it is the old tree, the verifier
    // knows its hash already.
    if (lo === 0) return { proof: [], rest: hashes };
    const { hash, rest } = await subTreeHash(crypto, lo, hi, hashes);
    return { proof: [hash], rest };
  }
  const { k } = maxpow2(hi - lo);
  if (n <= lo + k) {
    const left = await treeProof(crypto, lo, lo + k, n, hashes);
    const right = await subTreeHash(crypto, lo + k, hi, left.rest);
    return { proof: [...left.proof, right.hash], rest: right.rest };
  }
  const left = await subTreeHash(crypto, lo, lo + k, hashes);
  const right = await treeProof(crypto, lo + k, hi, n, left.rest);
  return { proof: [...right.proof, left.hash], rest: right.rest };
}

/**
 * Checks that proof shows that the tree of size t with root th contains as a prefix the
 * tree of size n with root h. Throws TlogError "invalid-input" or "proof-failed".
 */
export async function checkTree(
  crypto: LogCrypto,
  proof: readonly Hash[],
  t: number,
  th: Hash,
  n: number,
  h: Hash,
): Promise<void> {
  if (!Number.isSafeInteger(t) || !Number.isSafeInteger(n) || t < 1 || n < 1 || n > t) {
    throw new TlogError("invalid-input", "tlog: invalid inputs in checkTree");
  }
  const { oldHash, newHash } = await runTreeProof(crypto, proof, 0, t, n, h);
  if (!bytesEqual(newHash, th) || !bytesEqual(oldHash, h)) throw proofFailed();
}

/**
 * Runs the part of the consistency proof for subtree [lo, hi), where old is the root of
 * the old tree of n leaves: returns the subtree's implied hashes in the old and new tree.
 */
async function runTreeProof(
  crypto: LogCrypto,
  proof: readonly Hash[],
  lo: number,
  hi: number,
  n: number,
  old: Hash,
): Promise<{ oldHash: Hash; newHash: Hash }> {
  if (!(lo < n && n <= hi)) throw new Error("tlog: bad math in runTreeProof");
  if (n === hi) {
    if (lo === 0) {
      if (proof.length !== 0) throw proofFailed();
      return { oldHash: old, newHash: old };
    }
    if (proof.length !== 1) throw proofFailed();
    const only = proof[0];
    return { oldHash: only, newHash: only };
  }
  if (proof.length === 0) throw proofFailed();
  const last = proof[proof.length - 1];
  const inner = proof.slice(0, -1);
  const { k } = maxpow2(hi - lo);
  if (n <= lo + k) {
    const sub = await runTreeProof(crypto, inner, lo, lo + k, n, old);
    return { oldHash: sub.oldHash, newHash: await nodeHash(crypto, sub.newHash, last) };
  }
  const sub = await runTreeProof(crypto, inner, lo + k, hi, n, old);
  return {
    oldHash: await nodeHash(crypto, last, sub.oldHash),
    newHash: await nodeHash(crypto, last, sub.newHash),
  };
}
