/**
 * The offline verifier over a log built here (the service's part is played by a tree in
 * memory): every honest input verifies, and each kind of tampering is detected and named
 * with the event or checkpoint it concerns.
 */
import { describe, expect, it } from "vitest";
import { toBase64 } from "../../src/tlog/bytes.js";
import { signCheckpoint } from "../../src/tlog/checkpoint.js";
import { eventsOfText } from "../../src/tlog/event-input.js";
import { listedEventLeaf } from "../../src/tlog/leaf.js";
import { createMemoryTree, type MemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseSignerKey, signerKey, verifierKey } from "../../src/tlog/note.js";
import {
  bundleProofSource,
  type ProofSource,
  type VerifyOptions,
  verifyLog,
} from "../../src/tlog/verify.js";

const crypto = createNodeLogCrypto();
const ORIGIN = "audit.test/proj_v/test";

function listed(i: number): Record<string, unknown> {
  return {
    eventId: `0193a5b2-7c1e-7d3f-8a9b-${i.toString(16).padStart(12, "0")}`,
    receivedAt: new Date(Date.UTC(2026, 10, 25, 8, 0, i)).toISOString(),
    occurredAt: "2026-11-25T08:00:00.000Z",
    actionKey: "document.update",
    entityType: "document",
    entityId: `doc_${i}`,
    actorType: "user",
    actorId: `user_${i % 3}`,
    changes: [{ op: "set", path: "title", before: "a", after: `b${i}` }],
    logIndex: i,
    salt: toBase64(new Uint8Array(32).fill(i + 1)),
  };
}

/** A log of n events, its tree, a key, and signed checkpoints at the sizes asked. */
async function log(n: number) {
  const events = Array.from({ length: n }, (_, i) => listed(i));
  const tree = createMemoryTree(crypto);
  for (const event of events) await tree.append((await listedEventLeaf(crypto, event)).leaf);
  const signer = await parseSignerKey(
    crypto,
    await signerKey(crypto, ORIGIN, new Uint8Array(32).fill(5)),
  );
  const vkey = await verifierKey(crypto, ORIGIN, signer.publicKey);
  const checkpointAt = async (size: number, t: MemoryTree = tree) =>
    signCheckpoint(crypto, { origin: ORIGIN, size, rootHash: await t.root(size) }, signer);
  return { events, tree, signer, vkey, checkpointAt };
}

/** Proofs as the service serves them: leaves and hashes from the given tree. */
function serviceProofs(
  tree: MemoryTree,
  events: Record<string, unknown>[],
  leaves?: Uint8Array[],
): ProofSource {
  return {
    async inclusion(eventId, treeSize) {
      const index = events.findIndex((e) => e.eventId === eventId);
      if (index < 0) throw new Error("Event not found");
      const leaf = leaves?.[index] ?? (await listedEventLeaf(crypto, events[index] ?? {})).leaf;
      return {
        logIndex: index,
        treeSize,
        leaf: toBase64(leaf),
        hashes: (await tree.proveRecord(index, treeSize)).map(toBase64),
      };
    },
    async consistency(from, to) {
      return { from, to, hashes: (await tree.proveTree(from, to)).map(toBase64) };
    },
  };
}

async function verify(options: Omit<VerifyOptions, "crypto">) {
  return verifyLog({ crypto, ...options });
}

describe("verifyLog on an honest log", () => {
  it("verifies the whole log from the events alone, and an earlier checkpoint", async () => {
    const { events, vkey, checkpointAt } = await log(25);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(25),
      earlierCheckpoint: await checkpointAt(10),
      events,
    });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.checked.join("\n")).toMatch(/size 25/);
    expect(report.checked.join("\n")).toMatch(/form a tree with the checkpoint's root/);
    expect(report.checked.join("\n")).toMatch(/first 10 leaves/);
  });

  it("verifies part of the log with inclusion proofs and a consistency proof", async () => {
    const { events, tree, vkey, checkpointAt } = await log(25);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(20),
      earlierCheckpoint: await checkpointAt(3),
      events: [events[19], events[4], events[0], events[22]],
      proofs: serviceProofs(tree, events),
      complete: false,
      beyondCheckpoint: "skip",
    });
    expect(report.failures).toEqual([]);
    expect(report.eventsSkipped).toBe(1);
    expect(report.checked.join("\n")).toMatch(/3 of 3 events proven/);
    expect(report.checked.join("\n")).toMatch(
      /proof of \d+ hashes shows the tree of size 3 is a prefix/,
    );
  });

  it("verifies from a bundle file's proofs", async () => {
    const { events, tree, vkey, checkpointAt } = await log(9);
    const source = serviceProofs(tree, events);
    const bundle = {
      inclusion: await Promise.all(
        events.map(async (e) => ({
          eventId: String(e.eventId),
          ...(await source.inclusion(String(e.eventId), 9)),
        })),
      ),
      consistency: [await source.consistency(4, 9)],
    };
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(9),
      earlierCheckpoint: await checkpointAt(4),
      events: events.slice(2),
      complete: false,
      proofs: bundleProofSource(JSON.parse(JSON.stringify(bundle))),
    });
    expect(report.failures).toEqual([]);
  });
});

describe("verifyLog names what was tampered with", () => {
  it("an event whose content changed", async () => {
    const { events, tree, vkey, checkpointAt } = await log(12);
    const changed = events.map((e, i) => (i === 7 ? { ...e, actorId: "someone_else" } : e));
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      events: changed,
      proofs: serviceProofs(tree, events),
    });
    expect(report.ok).toBe(false);
    expect(report.failures[0]?.subject).toBe(`event ${events[7]?.eventId} (logIndex 7)`);
    expect(report.failures[0]?.problem).toMatch(
      /content or metadata changed.*commitment to other content/,
    );
    expect(report.failures).toHaveLength(1);
  });

  it("without proofs, a changed event still fails the checkpoint", async () => {
    const { events, vkey, checkpointAt } = await log(12);
    const changed = events.map((e, i) => (i === 2 ? { ...e, entityId: "doc_x" } : e));
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      events: changed,
    });
    expect(report.failures).toEqual([
      { subject: "checkpoint", problem: expect.stringMatching(/another root: give proofs/) },
    ]);
  });

  it("an event deleted from the log", async () => {
    const { events, tree, vkey, checkpointAt } = await log(12);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      events: events.filter((_, i) => i !== 5),
      proofs: serviceProofs(tree, events),
    });
    expect(report.failures[0]).toEqual({
      subject: "logIndex 5",
      problem: expect.stringMatching(/an event was deleted/),
    });
    expect(report.failures).toHaveLength(1);
  });

  it("two events swapped in the log order", async () => {
    const { events, tree, vkey, checkpointAt } = await log(12);
    const swapped = events.map((e, i) =>
      i === 3 ? { ...e, logIndex: 4 } : i === 4 ? { ...e, logIndex: 3 } : e,
    );
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      events: swapped,
      proofs: serviceProofs(tree, swapped),
    });
    expect(report.failures.map((f) => f.subject)).toEqual([
      `event ${events[4]?.eventId} (logIndex 3)`,
      `event ${events[3]?.eventId} (logIndex 4)`,
    ]);
  });

  it("a leaf changed in the service's store", async () => {
    const { events, tree, vkey, checkpointAt } = await log(12);
    const leaves = await Promise.all(
      events.map(async (e) => (await listedEventLeaf(crypto, e)).leaf),
    );
    const forged = leaves.map((leaf, i) => {
      if (i !== 9) return leaf;
      const copy = leaf.slice();
      copy[64] = (copy[64] ?? 0) ^ 0xff;
      return copy;
    });
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(12),
      events,
      complete: false,
      proofs: serviceProofs(tree, events, forged),
    });
    expect(report.failures).toEqual([
      {
        subject: `event ${events[9]?.eventId} (logIndex 9)`,
        problem: expect.stringMatching(/the service's leaf has a commitment to other content/),
      },
    ]);
  });

  it("the tree rewritten after a checkpoint was published", async () => {
    const { events, vkey, checkpointAt } = await log(12);
    const published = await checkpointAt(8);
    // The log is rebuilt with event 6 changed, then grows and is signed again.
    const rewritten = events.map((e, i) => (i === 6 ? { ...e, actorId: "rewritten" } : e));
    const tree = createMemoryTree(crypto);
    for (const event of rewritten) await tree.append((await listedEventLeaf(crypto, event)).leaf);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(12, tree),
      earlierCheckpoint: published,
      events: rewritten,
      proofs: serviceProofs(tree, rewritten),
    });
    expect(report.failures).toContainEqual({
      subject: "earlier checkpoint",
      problem: expect.stringMatching(/rewritten after/),
    });
    expect(report.ok).toBe(false);
  });

  it("a checkpoint not signed by the pinned key, or altered", async () => {
    const { events, vkey, checkpointAt } = await log(4);
    const other = await parseSignerKey(
      crypto,
      await signerKey(crypto, ORIGIN, new Uint8Array(32).fill(6)),
    );
    const foreign = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 4, rootHash: new Uint8Array(32) },
      other,
    );
    const forged = (await checkpointAt(4)).replace("\n4\n", "\n3\n");
    for (const [checkpoint, problem] of [
      [foreign, /no verifiable signatures/],
      [forged, /invalid signature/],
    ] as const) {
      const report = await verify({ verifierKey: vkey, checkpoint, events });
      expect(report.failures).toEqual([
        { subject: "checkpoint", problem: expect.stringMatching(problem) },
      ]);
    }
  });

  it("another log's checkpoint relabelled with the pinned key's name (one key signs many logs)", async () => {
    const { events, signer, vkey } = await log(4);
    // The same signing key under another log's name: the signature line's name and key
    // id are not signed, so they can be rewritten to the pinned key's.
    const otherLog = `${ORIGIN}-live`;
    const otherSigner = await parseSignerKey(
      crypto,
      await signerKey(crypto, otherLog, new Uint8Array(32).fill(5)),
    );
    expect(otherSigner.publicKey).toEqual(signer.publicKey);
    const tree = createMemoryTree(crypto);
    for (const event of events) await tree.append((await listedEventLeaf(crypto, event)).leaf);
    const theirs = await signCheckpoint(
      crypto,
      { origin: otherLog, size: 4, rootHash: await tree.root(4) },
      otherSigner,
    );
    const pinnedId = vkey.split("+")[1] as string;
    const idBytes = Buffer.from(pinnedId, "hex");
    const relabelled = theirs.replace(/\u2014 \S+ (\S+)\n$/, (_line, b64: string) => {
      const raw = Buffer.from(b64, "base64");
      idBytes.copy(raw, 0);
      return `\u2014 ${ORIGIN} ${raw.toString("base64")}\n`;
    });
    expect(relabelled).not.toBe(theirs);
    const report = await verify({ verifierKey: vkey, checkpoint: relabelled, events });
    expect(report.ok).toBe(false);
    expect(report.failures).toEqual([
      {
        subject: "checkpoint",
        problem: `checkpoint is for log "${otherLog}", not for the key's log "${ORIGIN}"`,
      },
    ]);
  });

  it("checkpoints signed before and after a key rotation, with both keys pinned", async () => {
    const { events, tree, vkey, checkpointAt } = await log(6);
    const before = await checkpointAt(3);
    const rotated = await parseSignerKey(
      crypto,
      await signerKey(crypto, ORIGIN, new Uint8Array(32).fill(7)),
    );
    const newKey = await verifierKey(crypto, ORIGIN, rotated.publicKey);
    const after = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 6, rootHash: await tree.root(6) },
      rotated,
    );
    const both = await verify({
      verifierKey: `${vkey}\n${newKey}`,
      checkpoint: after,
      earlierCheckpoint: before,
      events: events.slice(3),
      complete: false,
      proofs: serviceProofs(tree, events),
    });
    expect(both.failures).toEqual([]);
    expect(both.ok).toBe(true);
    expect(both.checked[0]).toContain(`signed by ${newKey.split("+").slice(0, 2).join("+")};`);
    const newOnly = await verify({
      verifierKey: newKey,
      checkpoint: after,
      earlierCheckpoint: before,
      events: events.slice(3),
      complete: false,
      proofs: serviceProofs(tree, events),
    });
    expect(newOnly.failures).toEqual([
      { subject: "earlier checkpoint", problem: "note has no verifiable signatures" },
    ]);
    // Keys of two logs together: refused, whatever the checkpoint.
    const otherLog = await verifierKey(crypto, `${ORIGIN}-live`, rotated.publicKey);
    const mixed = await verify({ verifierKey: `${vkey} ${otherLog}`, checkpoint: after, events });
    expect(mixed.failures).toEqual([
      {
        subject: "verifier key",
        problem: `the verifier keys name different logs: ${ORIGIN}, ${ORIGIN}-live`,
      },
    ]);
  });

  it("an earlier checkpoint of another log or larger than the checkpoint", async () => {
    const { events, vkey, checkpointAt } = await log(6);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(3),
      earlierCheckpoint: await checkpointAt(6),
      events: events.slice(0, 3),
    });
    expect(report.failures).toEqual([
      {
        subject: "earlier checkpoint",
        problem: expect.stringMatching(/larger than the checkpoint's 3/),
      },
    ]);
  });

  it("events the checkpoint does not cover, two events at one index, and unreadable events", async () => {
    const { events, vkey, checkpointAt } = await log(6);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(5),
      events: [
        ...events,
        { ...events[1], eventId: events[2]?.eventId, logIndex: 1 },
        { eventId: "x" },
        7,
      ],
    });
    expect(report.failures.map((f) => f.subject)).toEqual([
      `event ${events[5]?.eventId} (logIndex 5)`,
      `event ${events[2]?.eventId} (logIndex 1)`,
      "event x",
      "event #9 of the input",
    ]);
  });
});

// What the verifier names when the input is not what an auditor would hope (outside audit
// of 2026-11-28).
describe("a changed event in a whole log, with a bundle of the consistency proof only", () => {
  it("names the root first, one line for the events without proofs, and where the change lies", async () => {
    const { events, tree, vkey, checkpointAt } = await log(12);
    const bundle = {
      inclusion: [],
      consistency: [await serviceProofs(tree, events).consistency(5, 12)],
    };
    const changed = events.map((e, i) => (i === 8 ? { ...e, actorId: "user_43" } : e));
    const report = await verify({
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
    const report = await verify({
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
    const { events, tree, signer, vkey } = await log(10);
    const forged = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 10, rootHash: new Uint8Array(32).fill(7) },
      signer,
    );
    const report = await verify({
      verifierKey: vkey,
      checkpoint: forged,
      events,
      proofs: serviceProofs(tree, events),
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
    lines[3] = (lines[3] ?? "").replace('"path":"title"', '"path":"body","path":"title"');
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(4),
      events: eventsOfText(lines.join("\n")),
      complete: false,
      proofs: serviceProofs(createMemoryTree(crypto), []),
    });
    const named = report.failures.filter((f) => /twice/.test(f.problem));
    expect(named.map((f) => f.subject)).toEqual([
      `event ${String(events[2]?.eventId)}`,
      `event ${String(events[3]?.eventId)}`,
    ]);
    expect(named[0]?.problem).toMatch(/member actorId twice/);
    expect(named[1]?.problem).toMatch(/member changes\[0\]\.path twice/);
  });
});

describe("what an export may hold beyond the commitment", () => {
  it("a number rewritten in a longer form that reads as the same float fails by name; the others verify", async () => {
    const { events, vkey, signer } = await log(3);
    events[1] = { ...events[1], context: { amountCents: 9007199254740992 } };
    const lines = events.map((e) => JSON.stringify(e));
    // Rebuilt with the context, then the number written as another value that reads the same here.
    const tree = createMemoryTree(crypto);
    for (const event of events) await tree.append((await listedEventLeaf(crypto, event)).leaf);
    const checkpoint = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 3, rootHash: await tree.root(3) },
      signer,
    );
    lines[1] = (lines[1] ?? "").replace("9007199254740992", "9007199254740993");
    const report = await verify({
      verifierKey: vkey,
      checkpoint,
      events: eventsOfText(lines.join("\n")),
    });
    expect(report.ok).toBe(false);
    expect(report.failures[0]).toEqual({
      subject: `event ${String(events[1]?.eventId)}`,
      problem: expect.stringMatching(/writes the number context\.amountCents as 9007199254740993/),
    });
  });

  it("members the commitment does not cover are said, not verified, and fail nothing", async () => {
    const { events, vkey, checkpointAt } = await log(3);
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(3),
      events: events.map((e, i) => (i === 2 ? { ...e, ip: "203.0.113.9", actorEmail: "a@b" } : e)),
    });
    expect(report.ok).toBe(true);
    expect(report.checked).toContain(
      "not proven: 1 event(s) carry members their commitment does not cover (actorEmail, ip); what these say is not verified",
    );
  });
});

describe("erased events", () => {
  it("are listed by logIndex, id and erasure time, for the auditor to match with erasure records", async () => {
    const { events, tree, vkey, checkpointAt } = await log(6);
    const tombstone = {
      eventId: events[3]?.eventId,
      logIndex: 3,
      receivedAt: events[3]?.receivedAt,
      erasedAt: "2026-11-28T09:00:00.000Z",
    };
    const report = await verify({
      verifierKey: vkey,
      checkpoint: await checkpointAt(6),
      events: events.map((e, i) => (i === 3 ? tombstone : e)),
      proofs: serviceProofs(tree, events),
    });
    expect(report.failures).toEqual([]);
    expect(report.checked.join("\n")).toContain(
      `erased events (match them with your erasure records): event ${String(events[3]?.eventId)} (logIndex 3) at 2026-11-28T09:00:00.000Z`,
    );
  });
});
