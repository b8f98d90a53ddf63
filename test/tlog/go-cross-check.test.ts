/**
 * Our proofs, checkpoints and layout checked by Go's own `golang.org/x/mod/sumdb/tlog`
 * and `sumdb/note` (Debian's golang-golang-x-mod-dev), through test/tlog/go-checker: the
 * service is verified that way from outside. Needs `go` and that package; `.ci/run`
 * installs both. Without them this test fails and says so rather than skipping.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toBase64 } from "../../src/tlog/bytes.js";
import { signCheckpoint } from "../../src/tlog/checkpoint.js";
import { listedEventLeaf } from "../../src/tlog/leaf.js";
import { createMemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseSignerKey, signerKey, signNote, verifierKey } from "../../src/tlog/note.js";
import { newTiles, tilePath } from "../../src/tlog/tile.js";
import { storedHashIndex } from "../../src/tlog/tree.js";
import { buildGoChecker, type GoChecker } from "./go-checker-build.js";

const crypto = createNodeLogCrypto();
const ORIGIN = "audit.test/proj_go/test";
let checker: GoChecker | undefined;

interface Result {
  ok: boolean;
  error?: string;
}
interface Reply {
  checkpoints: Result[] | null;
  opened: { origin: string; size: number; root: string }[] | null;
  inclusion: Result[] | null;
  consistency: Result[] | null;
  roots: string[] | null;
  recordProofs: string[][] | null;
  treeProofs: string[][] | null;
  storedHashIndex: number[] | null;
  newTiles: (string[] | null)[] | null;
  signed: string[] | null;
}

function runGo(request: unknown): Reply {
  if (checker === undefined) throw new Error("the Go checker was not built");
  const out = execFileSync(checker.path, [], { input: JSON.stringify(request), encoding: "utf8" });
  return JSON.parse(out) as Reply;
}

beforeAll(async () => {
  checker = await buildGoChecker();
}, 300_000);

afterAll(() => {
  checker?.remove();
});

/** A log of n events as the service lists them, with their leaves in a tree. */
async function eventLog(n: number) {
  const tree = createMemoryTree(crypto);
  const leaves: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const hex = i.toString(16).padStart(12, "0");
    const { leaf } = await listedEventLeaf(crypto, {
      eventId: `0193a5b2-7c1e-7d3f-8a9b-${hex}`,
      receivedAt: new Date(Date.UTC(2026, 10, 25, 8, 0, i)).toISOString(),
      occurredAt: "2026-11-25T08:00:00.000Z",
      actionKey: "user.login",
      entityType: "user",
      entityId: `user_${i}`,
      actorType: "user",
      actorId: `user_${i}`,
      context: { n: i, half: i / 2 },
      logIndex: i,
      salt: toBase64(new Uint8Array(32).fill(i)),
    });
    leaves.push(leaf);
    await tree.append(leaf);
  }
  return { tree, leaves };
}

async function keys(name: string, fill: number) {
  const skey = await signerKey(crypto, name, new Uint8Array(32).fill(fill));
  const signer = await parseSignerKey(crypto, skey);
  return { skey, signer, vkey: await verifierKey(crypto, name, signer.publicKey) };
}

describe("Go's sumdb/tlog and sumdb/note accept our log", () => {
  it("opens our checkpoints and checks every inclusion and consistency proof", async () => {
    const { tree, leaves } = await eventLog(37);
    const { signer, vkey } = await keys(ORIGIN, 1);
    const sizes = [1, 2, 5, 8, 16, 17, 36, 37];
    const checkpoints = await Promise.all(
      sizes.map(async (size) =>
        signCheckpoint(crypto, { origin: ORIGIN, size, rootHash: await tree.root(size) }, signer),
      ),
    );
    const inclusion = [];
    for (const size of sizes) {
      for (let i = 0; i < size; i++) {
        inclusion.push({
          leaf: toBase64(leaves[i] ?? new Uint8Array()),
          logIndex: i,
          treeSize: size,
          hashes: (await tree.proveRecord(i, size)).map(toBase64),
        });
      }
    }
    const consistency = [];
    for (const from of sizes) {
      for (const to of sizes.filter((s) => s >= from)) {
        consistency.push({ from, to, hashes: (await tree.proveTree(from, to)).map(toBase64) });
      }
    }
    const reply = runGo({ verifierKey: vkey, checkpoints, inclusion, consistency });
    expect(reply.checkpoints).toEqual(sizes.map(() => ({ ok: true })));
    expect(reply.opened?.map((c) => [c.origin, c.size])).toEqual(sizes.map((s) => [ORIGIN, s]));
    expect(reply.inclusion?.filter((r) => !r.ok)).toEqual([]);
    expect(reply.inclusion).toHaveLength(inclusion.length);
    expect(reply.consistency?.filter((r) => !r.ok)).toEqual([]);
    expect(reply.consistency).toHaveLength(consistency.length);
  });

  it("and rejects what we reject: changed proofs, leaves, indexes and checkpoints", async () => {
    const { tree, leaves } = await eventLog(20);
    const { signer, vkey } = await keys(ORIGIN, 2);
    const other = await keys(ORIGIN, 3);
    const good = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 20, rootHash: await tree.root(20) },
      signer,
    );
    const old = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 7, rootHash: await tree.root(7) },
      signer,
    );
    const proof = (await tree.proveRecord(5, 20)).map(toBase64);
    const flipped = [...proof];
    flipped[1] = toBase64((await tree.proveRecord(6, 20))[1] ?? new Uint8Array(32));
    const changedLeaf = (leaves[5] ?? new Uint8Array()).slice();
    changedLeaf[40] = (changedLeaf[40] ?? 0) ^ 1;
    const treeProof = (await tree.proveTree(7, 20)).map(toBase64);
    const reply = runGo({
      verifierKey: vkey,
      checkpoints: [
        good,
        old,
        good.replace("\n20\n", "\n21\n"),
        await signCheckpoint(
          crypto,
          { origin: ORIGIN, size: 20, rootHash: await tree.root(20) },
          other.signer,
        ),
      ],
      inclusion: [
        { leaf: toBase64(leaves[5] ?? new Uint8Array()), logIndex: 5, treeSize: 20, hashes: proof },
        { leaf: toBase64(changedLeaf), logIndex: 5, treeSize: 20, hashes: proof },
        { leaf: toBase64(leaves[5] ?? new Uint8Array()), logIndex: 4, treeSize: 20, hashes: proof },
        {
          leaf: toBase64(leaves[5] ?? new Uint8Array()),
          logIndex: 5,
          treeSize: 20,
          hashes: flipped,
        },
        {
          leaf: toBase64(leaves[5] ?? new Uint8Array()),
          logIndex: 5,
          treeSize: 20,
          hashes: proof.slice(1),
        },
      ],
      consistency: [
        { from: 7, to: 20, hashes: treeProof },
        { from: 7, to: 20, hashes: treeProof.slice(0, -1) },
        { from: 7, to: 20, hashes: [...treeProof].reverse() },
      ],
    });
    expect(reply.checkpoints?.map((r) => r.ok)).toEqual([true, true, false, false]);
    expect(reply.checkpoints?.[2]?.error).toBe(
      `invalid signature for key audit.test/proj_go/test+${vkey.split("+")[1]}`,
    );
    expect(reply.checkpoints?.[3]?.error).toBe("note has no verifiable signatures");
    expect(reply.inclusion?.map((r) => r.ok)).toEqual([true, false, false, false, false]);
    expect(reply.consistency?.map((r) => r.ok)).toEqual([true, false, false]);
  });

  it("computes the same roots and proofs from the same leaves", async () => {
    const { tree, leaves } = await eventLog(33);
    const reply = runGo({ leaves: leaves.map(toBase64) });
    const roots: string[] = [];
    const recordProofs: string[][] = [];
    const treeProofs: string[][] = [];
    for (let t = 1; t <= 33; t++) {
      roots.push(toBase64(await tree.root(t)));
      for (const i of [0, t - 1]) recordProofs.push((await tree.proveRecord(i, t)).map(toBase64));
      for (const m of [1, Math.max(1, t - 1)])
        treeProofs.push((await tree.proveTree(m, t)).map(toBase64));
    }
    expect(reply.roots).toEqual(roots);
    expect(reply.recordProofs?.map((p) => p ?? [])).toEqual(recordProofs);
    expect(reply.treeProofs?.map((p) => p ?? [])).toEqual(treeProofs);
  });

  it("agrees on the stored-hash layout and the tiles to write", () => {
    const pairs: [number, number][] = [
      [0, 0],
      [0, 5],
      [3, 1_000_000],
      [0, 2 ** 40 + 3],
      [7, 2 ** 33 + 1],
    ];
    const tileArgs: [number, number, number][] = [
      [2, 5, 9],
      [8, 0, 1000],
      [8, 255, 70_000],
      [1, 3, 17],
    ];
    const reply = runGo({ storedHashIndex: pairs, newTiles: tileArgs });
    expect(reply.storedHashIndex).toEqual(pairs.map(([l, n]) => storedHashIndex(l, n)));
    expect(reply.newTiles).toEqual(tileArgs.map(([h, a, b]) => newTiles(h, a, b).map(tilePath)));
  });

  it("signs a checkpoint text to exactly our bytes with our signer key", async () => {
    const { skey, signer } = await keys(ORIGIN, 4);
    const text = `${ORIGIN}\n3\n${toBase64(new Uint8Array(32).fill(9))}\n`;
    const reply = runGo({ sign: [{ signerKey: skey, text }] });
    expect(reply.signed).toEqual([await signNote(crypto, text, signer)]);
  });
});
