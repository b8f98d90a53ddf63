/**
 * What the verifier names when the input is not what an auditor would hope (outside audit
 * of 2026-11-28): a changed event in a whole log checked with a bundle that carries only
 * the consistency proof, a validly signed checkpoint with another root, a member name
 * given twice, and the tombstones it accepted, listed.
 */
import { describe, expect, it } from "vitest";
import { toBase64 } from "../../src/tlog/bytes.js";
import { signCheckpoint } from "../../src/tlog/checkpoint.js";
import { eventsOfText } from "../../src/tlog/event-input.js";
import { listedEventLeaf } from "../../src/tlog/leaf.js";
import { createMemoryTree, type MemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseSignerKey, signerKey, verifierKey } from "../../src/tlog/note.js";
import { bundleProofSource, type ProofSource, verifyLog } from "../../src/tlog/verify.js";

const crypto = createNodeLogCrypto();
const ORIGIN = "audit.test/proj_f/test";

function listed(i: number): Record<string, unknown> {
  return {
    eventId: `0193a5b2-7c1e-7d3f-8a9b-${i.toString(16).padStart(12, "0")}`,
    receivedAt: new Date(Date.UTC(2026, 10, 28, 8, 0, i)).toISOString(),
    occurredAt: "2026-11-28T08:00:00.000Z",
    actionKey: "document.update",
    entityType: "document",
    entityId: `doc_${i}`,
    actorType: "user",
    actorId: `user_${i}`,
    context: { ip: "203.0.113.7", geo: { city: "Berlin" } },
    logIndex: i,
    salt: toBase64(new Uint8Array(32).fill(i + 1)),
  };
}

async function log(n: number) {
  const events = Array.from({ length: n }, (_, i) => listed(i));
  const tree = createMemoryTree(crypto);
  const leaves: Uint8Array[] = [];
  for (const event of events) {
    const { leaf } = await listedEventLeaf(crypto, event);
    leaves.push(leaf);
    await tree.append(leaf);
  }
  const signer = await parseSignerKey(
    crypto,
    await signerKey(crypto, ORIGIN, new Uint8Array(32).fill(9)),
  );
  const vkey = await verifierKey(crypto, ORIGIN, signer.publicKey);
  const checkpointAt = async (size: number, t: MemoryTree = tree) =>
    signCheckpoint(crypto, { origin: ORIGIN, size, rootHash: await t.root(size) }, signer);
  return { events, tree, leaves, signer, vkey, checkpointAt };
}

function proofsOf(tree: MemoryTree, events: Record<string, unknown>[], leaves: Uint8Array[]) {
  const source: ProofSource = {
    async inclusion(eventId, treeSize) {
      const index = events.findIndex((e) => e.eventId === eventId);
      return {
        logIndex: index,
        treeSize,
        leaf: toBase64(leaves[index] ?? new Uint8Array()),
        hashes: (await tree.proveRecord(index, treeSize)).map(toBase64),
      };
    },
    async consistency(from, to) {
      return { from, to, hashes: (await tree.proveTree(from, to)).map(toBase64) };
    },
  };
  return source;
}

describe("a changed event in a whole log, with a bundle of the consistency proof only", () => {
  it("names the root first, one line for the events without proofs, and where the change lies", async () => {
    const { events, tree, leaves, vkey, checkpointAt } = await log(12);
    const bundle = {
      inclusion: [],
      consistency: [await proofsOf(tree, events, leaves).consistency(5, 12)],
    };
    const changed = events.map((e, i) => (i === 8 ? { ...e, actorId: "user_43" } : e));
    const report = await verifyLog({
      crypto,
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      earlierCheckpoint: await checkpointAt(5),
      events: changed,
      proofs: bundleProofSource(bundle),
    });
    expect(report.ok).toBe(false);
    expect(report.failures[0]?.subject).toBe("checkpoint");
    expect(report.failures[0]?.problem).toMatch(/another root/);
    const events12 = report.failures.filter((f) => f.subject === "events");
    expect(events12).toHaveLength(1);
    expect(events12[0]?.problem).toMatch(/12 of 12 events have no inclusion proof/);
    expect(report.failures.some((f) => /^event /.test(f.subject))).toBe(false);
    // The change (logIndex 8) is after the earlier checkpoint's 5 events: those still hold.
    expect(report.checked.join("\n")).toMatch(/first 5 leaves form a tree with the earlier/);
    expect(report.checked.join("\n")).not.toMatch(/inclusion: 0 of/);
  });

  it("says the earlier checkpoint's events changed too when the change lies among them", async () => {
    const { events, vkey, checkpointAt } = await log(12);
    const changed = events.map((e, i) => (i === 2 ? { ...e, actorId: "mallory" } : e));
    const report = await verifyLog({
      crypto,
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      earlierCheckpoint: await checkpointAt(5),
      events: changed,
    });
    expect(report.failures.map((f) => f.subject)).toEqual([
      "checkpoint",
      "earlier checkpoint",
      "earlier checkpoint",
    ]);
    expect(report.failures[1]?.problem).toMatch(
      /first 5 events do not form a tree with its root either/,
    );
  });
});

describe("a validly signed checkpoint with another root", () => {
  it("names the checkpoint first, not the first event", async () => {
    const { events, tree, leaves, signer, vkey } = await log(10);
    const forged = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 10, rootHash: new Uint8Array(32).fill(7) },
      signer,
    );
    const report = await verifyLog({
      crypto,
      verifierKey: vkey,
      checkpoint: forged,
      events,
      proofs: proofsOf(tree, events, leaves),
    });
    expect(report.ok).toBe(false);
    expect(report.failures[0]?.subject).toBe("checkpoint");
    expect(report.failures[0]?.problem).toMatch(/no event's inclusion proof leads to its root/);
  });
});

describe("events whose JSON gives a member name twice", () => {
  it("fails the event that holds it, naming the member, and verifies the others", async () => {
    const { events, vkey, checkpointAt } = await log(4);
    const lines = events.map((e) => JSON.stringify(e));
    // A forged actorId first; JSON.parse keeps the genuine last one, other readers the first.
    lines[2] = (lines[2] ?? "").replace('{"eventId"', '{"actorId":"mallory","eventId"');
    lines[3] = (lines[3] ?? "").replace('"city":"Berlin"', '"city":"Paris","city":"Berlin"');
    const report = await verifyLog({
      crypto,
      verifierKey: vkey,
      checkpoint: await checkpointAt(4),
      events: eventsOfText(lines.join("\n")),
      complete: false,
      proofs: proofsOf(createMemoryTree(crypto), [], []),
    });
    const named = report.failures.filter((f) => /twice/.test(f.problem));
    expect(named.map((f) => f.subject)).toEqual([
      `event ${String(events[2]?.eventId)}`,
      `event ${String(events[3]?.eventId)}`,
    ]);
    expect(named[0]?.problem).toMatch(/member actorId twice/);
    expect(named[1]?.problem).toMatch(/member context\.geo\.city twice/);
  });
});

describe("erased events", () => {
  it("are listed by logIndex, id and erasure time, for the auditor to match with erasure records", async () => {
    const { events, tree, leaves, vkey, checkpointAt } = await log(6);
    const tombstone = {
      eventId: events[3]?.eventId,
      logIndex: 3,
      receivedAt: events[3]?.receivedAt,
      erasedAt: "2026-11-28T09:00:00.000Z",
    };
    const report = await verifyLog({
      crypto,
      verifierKey: vkey,
      checkpoint: await checkpointAt(6),
      events: events.map((e, i) => (i === 3 ? tombstone : e)),
      proofs: proofsOf(tree, events, leaves),
    });
    expect(report.failures).toEqual([]);
    expect(report.checked.join("\n")).toContain(
      `erased events (match them with your erasure records): event ${String(events[3]?.eventId)} (logIndex 3) at 2026-11-28T09:00:00.000Z`,
    );
  });
});
