/**
 * The offline verifier: given events as GET /api/events lists them, the log's verifier
 * key, a signed checkpoint, proofs, and optionally an earlier checkpoint the auditor kept,
 * decide whether every event is in the log unchanged and whether the log only grew.
 * Used by `audit verify` (src/cli/audit.ts) and, one event at a time, by the viewer.
 * No node: imports: it runs in the browser with WebCrypto.
 *
 * What is checked, in order:
 * 1. the checkpoint (and the earlier one) open with a verifier key (the log's key, or
 *    its keys before and after a rotation) whose name is the checkpoint's origin; both
 *    checkpoints name one log;
 * 2. each event's leaf is recomputed from its own content and salt (leaf.ts); no two
 *    events claim one logIndex;
 * 3. inclusion: with `complete` input (every logIndex below the checkpoint's size), the
 *    tree of the recomputed leaves must have the checkpoint's root, which proves every
 *    event at once with no proof at all; otherwise, or when that root differs, each event
 *    is checked with its inclusion proof, which names the events that fail;
 * 4. consistency: the earlier checkpoint's tree is a prefix of the checkpoint's (its root
 *    recomputed from the leaves when complete, and the consistency proof when proofs are
 *    given).
 *
 * An erased event appears as its tombstone, `{eventId, logIndex, receivedAt, erasedAt}`
 * (docs/lifecycle.md): its content and salt are gone, so its leaf cannot be recomputed.
 * Its leaf comes from its inclusion proof instead (proofs are then needed), which must
 * lead to the checkpoint's root and whose eventId, logIndex and receivedAt must be the
 * tombstone's; the leaf then takes its place in step 3 like any other. An event the
 * service cannot decrypt appears as `{eventId, logIndex, receivedAt, unreadable}`: a
 * failure named at its position (its content cannot be checked), the others checked on.
 *
 * Invariant: `ok` is true only when every check held and at least the checkpoint opened;
 * every failure names its subject (an event by eventId and logIndex, a logIndex, or a
 * checkpoint), first failure first.
 */
import { bytesEqual, fromBase64, toBase64 } from "./bytes.js";
import { openCheckpoint, type SignedCheckpoint } from "./checkpoint.js";
import type { LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";
import { UnreadableEvent } from "./event-input.js";
import {
  COMMITTED_FIELDS,
  decodeLeaf,
  describeLeafDifference,
  listedEventLeaf,
  parseReceivedAt,
} from "./leaf.js";
import { createMemoryTree } from "./memory-tree.js";
import { type NoteVerifier, parseVerifierKey } from "./note.js";
import { checkRecord, checkTree, HASH_SIZE, type Hash, recordHash } from "./tree.js";

/** GET /api/log/proof/inclusion's body. */
export interface InclusionProof {
  readonly logIndex: number;
  readonly treeSize: number;
  /** The leaf bytes, base64. */
  readonly leaf: string;
  /** The audit path, base64, leaf end first (RFC 6962 order). */
  readonly hashes: readonly string[];
}

/** GET /api/log/proof/consistency's body. */
export interface ConsistencyProof {
  readonly from: number;
  readonly to: number;
  readonly hashes: readonly string[];
}

/** Where proofs come from: the service's endpoints, or a bundle file. */
export interface ProofSource {
  inclusion(eventId: string, treeSize: number): Promise<InclusionProof>;
  consistency(from: number, to: number): Promise<ConsistencyProof>;
}

/** A check that did not hold, and what it was about. */
export interface Failure {
  /** "checkpoint", "earlier checkpoint", "verifier key", "event <id> (logIndex n)", ... */
  readonly subject: string;
  readonly problem: string;
}

/** What verifyLog found. */
export interface VerifyReport {
  readonly ok: boolean;
  /** One line per check that held, in the order made. */
  readonly checked: string[];
  /** Every check that failed, first failure first. */
  readonly failures: Failure[];
  /** The checkpoint verified against, when it opened. */
  readonly checkpoint?: SignedCheckpoint;
  readonly eventsRead: number;
  /** Events past the checkpoint's size, left unchecked (beyondCheckpoint: "skip"). */
  readonly eventsSkipped: number;
}

/** Inputs of verifyLog. */
export interface VerifyOptions {
  readonly crypto: LogCrypto;
  /**
   * The log's verifier key, `<name>+<id>+<key>`: pin it, do not take it from the log.
   * Several keys separated by white space (the log's keys before and after a rotation):
   * each checkpoint must be signed by one of them.
   */
  readonly verifierKey: string;
  /** The signed checkpoint to verify against. */
  readonly checkpoint: string;
  /** A checkpoint kept from before, to prove the log only grew since. */
  readonly earlierCheckpoint?: string;
  /** The events, as GET /api/events lists them (any order). */
  readonly events: AsyncIterable<unknown> | Iterable<unknown>;
  /** Proofs; without them only complete input can be checked. */
  readonly proofs?: ProofSource;
  /**
   * True when the events are the whole log up to the checkpoint, so that a missing
   * logIndex is a failure (an event deleted) and the root can be recomputed. Default true.
   */
  readonly complete?: boolean;
  /** Events at or past the checkpoint's size: a failure (default) or skipped. */
  readonly beyondCheckpoint?: "fail" | "skip";
}

interface EventEntry {
  readonly eventId: string;
  readonly leaf: Uint8Array;
  /** A tombstone's entry: its leaf is the service's, already proven by its proof. */
  readonly erased?: boolean;
}

/** Whether a listed object is a tombstone (an erased event): it has `erasedAt`. */
export function isTombstone(event: Readonly<Record<string, unknown>>): boolean {
  return typeof event.erasedAt === "string";
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The members of a tombstone, exactly (docs/lifecycle.md). */
const TOMBSTONE_MEMBERS = ["eventId", "logIndex", "receivedAt", "erasedAt"];

/**
 * Checks a tombstone against a checkpoint with its inclusion proof: the served leaf must
 * name the tombstone's eventId, logIndex and receivedAt, and its audit path must lead to
 * the checkpoint's root. Returns the leaf when it holds, else the problem in words.
 */
export async function checkTombstoneInclusion(
  crypto: LogCrypto,
  tombstone: Readonly<Record<string, unknown>>,
  proof: InclusionProof,
  checkpoint: { readonly size: number; readonly rootHash: Hash },
): Promise<{ leaf: Uint8Array } | { problem: string }> {
  // A tombstone's leaf is taken from the log, not recomputed: content beside `erasedAt`
  // would pass unchecked, so a record with more members than a tombstone's is refused
  // (an event's content changed and marked erased must not verify).
  const extra = Object.keys(tombstone).filter((name) => !TOMBSTONE_MEMBERS.includes(name));
  if (extra.length > 0) {
    return {
      problem: `marked erased (erasedAt) but carries ${extra.join(", ")}: a tombstone has only ${TOMBSTONE_MEMBERS.join(", ")}, and content beside erasedAt cannot be verified`,
    };
  }
  const { eventId, logIndex, receivedAt } = tombstone;
  if (typeof eventId !== "string" || !UUID_TEXT.test(eventId)) {
    return { problem: "a tombstone without a valid eventId" };
  }
  if (typeof logIndex !== "number" || !Number.isSafeInteger(logIndex) || logIndex < 0) {
    return { problem: "a tombstone without a logIndex" };
  }
  let receivedAtMs: number;
  try {
    receivedAtMs = parseReceivedAt(String(receivedAt));
  } catch (error) {
    return { problem: `a tombstone without a valid receivedAt: ${describeError(error)}` };
  }
  if (Number(proof.logIndex) !== logIndex) {
    return {
      problem: `the service places it at logIndex ${proof.logIndex}, the tombstone says ${logIndex}`,
    };
  }
  if (Number(proof.treeSize) !== checkpoint.size) {
    return {
      problem: `the proof is for tree size ${proof.treeSize}, not the checkpoint's ${checkpoint.size}`,
    };
  }
  const served = fromBase64(proof.leaf);
  if (served === undefined) return { problem: "the service's leaf is not base64" };
  let fields: ReturnType<typeof decodeLeaf>;
  try {
    fields = decodeLeaf(served);
  } catch (error) {
    return { problem: `the service's leaf is unusable: ${describeError(error)}` };
  }
  const differences: string[] = [];
  if (fields.eventId !== eventId) differences.push(`eventId ${fields.eventId}`);
  if (fields.logIndex !== logIndex) differences.push(`logIndex ${fields.logIndex}`);
  if (fields.receivedAtMs !== receivedAtMs) {
    differences.push(`receivedAt ${new Date(fields.receivedAtMs).toISOString()}`);
  }
  if (differences.length > 0) {
    return { problem: `the logged leaf is not this tombstone's: it has ${differences.join(", ")}` };
  }
  try {
    await checkRecord(
      crypto,
      decodeHashes(proof.hashes),
      checkpoint.size,
      checkpoint.rootHash,
      logIndex,
      await recordHash(crypto, served),
    );
  } catch (error) {
    return {
      problem:
        error instanceof TlogError && error.code === "proof-failed"
          ? "its inclusion proof does not lead to the checkpoint's root (the tree was changed)"
          : `its inclusion proof is unusable: ${describeError(error)}`,
    };
  }
  return { leaf: served };
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function eventSubject(eventId: string, logIndex: number): string {
  return `event ${eventId} (logIndex ${logIndex})`;
}

function decodeHashes(hashes: readonly string[]): Hash[] {
  return hashes.map((text) => {
    const hash = fromBase64(text);
    if (hash === undefined || hash.length !== HASH_SIZE) {
      throw new TlogError("malformed", "a proof hash is not 32 bytes of base64");
    }
    return hash;
  });
}

/**
 * Checks one event against a checkpoint with its inclusion proof: its leaf recomputed from
 * its content and salt, the service's leaf, and the audit path to the checkpoint's root.
 * Returns undefined when it holds, else the problem in words.
 */
export async function checkEventInclusion(
  crypto: LogCrypto,
  event: Readonly<Record<string, unknown>>,
  proof: InclusionProof,
  checkpoint: { readonly size: number; readonly rootHash: Hash },
): Promise<string | undefined> {
  let leaf: Uint8Array;
  let logIndex: number;
  try {
    ({ leaf, logIndex } = await listedEventLeaf(crypto, event));
  } catch (error) {
    return `cannot recompute its leaf: ${describeError(error)}`;
  }
  // Proto JSON clients may hand the 64-bit positions over as decimal strings.
  const servedIndex = Number(proof.logIndex);
  const servedSize = Number(proof.treeSize);
  if (servedIndex !== logIndex) {
    return `the service places it at logIndex ${proof.logIndex}, the event says ${logIndex}`;
  }
  if (servedSize !== checkpoint.size) {
    return `the proof is for tree size ${proof.treeSize}, not the checkpoint's ${checkpoint.size}`;
  }
  const served = fromBase64(proof.leaf);
  if (served === undefined) return "the service's leaf is not base64";
  const difference = describeLeafDifference(leaf, served);
  if (difference !== undefined) {
    return `its content or metadata changed since it was logged: ${difference}`;
  }
  try {
    await checkRecord(
      crypto,
      decodeHashes(proof.hashes),
      checkpoint.size,
      checkpoint.rootHash,
      logIndex,
      await recordHash(crypto, leaf),
    );
  } catch (error) {
    return error instanceof TlogError && error.code === "proof-failed"
      ? "its inclusion proof does not lead to the checkpoint's root (the event or the tree was changed)"
      : `its inclusion proof is unusable: ${describeError(error)}`;
  }
  return undefined;
}

/**
 * The verifier keys in `keys`, separated by white space (a key has none): one log's, before
 * and after rotations. Throws TlogError "malformed" for a key that is not one, for none,
 * and for keys of different logs.
 */
export async function parseVerifierKeys(crypto: LogCrypto, keys: string): Promise<NoteVerifier[]> {
  const encoded = keys.split(/\s+/).filter((key) => key !== "");
  if (encoded.length === 0) throw new TlogError("malformed", "no verifier key given");
  const verifiers = await Promise.all(encoded.map((key) => parseVerifierKey(crypto, key)));
  // One log's keys (a rotation keeps the name): keys of several logs would let any of
  // their checkpoints pass for the log audited.
  const names = new Set(verifiers.map((verifier) => verifier.name));
  if (names.size > 1) {
    throw new TlogError(
      "malformed",
      `the verifier keys name different logs: ${[...names].join(", ")}`,
    );
  }
  return verifiers;
}

/** The keys that signed a checkpoint, as `<name>+<key id>`. */
function signersOf(checkpoint: SignedCheckpoint): string {
  return checkpoint.signatures
    .map((sig) => `${sig.name}+${sig.keyId.toString(16).padStart(8, "0")}`)
    .join(", ");
}

/** Verifies events against a checkpoint; see the module comment. */
export async function verifyLog(options: VerifyOptions): Promise<VerifyReport> {
  const { crypto, proofs } = options;
  const complete = options.complete ?? true;
  const checked: string[] = [];
  const failures: Failure[] = [];
  const fail = (subject: string, problem: string) => failures.push({ subject, problem });
  const report = (extra: Partial<VerifyReport>): VerifyReport => ({
    ok: failures.length === 0,
    checked,
    failures,
    eventsRead: 0,
    eventsSkipped: 0,
    ...extra,
  });

  // 1. Checkpoints.
  let verifiers: NoteVerifier[];
  try {
    verifiers = await parseVerifierKeys(crypto, options.verifierKey);
  } catch (error) {
    fail("verifier key", describeError(error));
    return report({});
  }
  let checkpoint: SignedCheckpoint;
  try {
    checkpoint = await openCheckpoint(crypto, options.checkpoint, verifiers);
  } catch (error) {
    fail("checkpoint", describeError(error));
    return report({});
  }
  checked.push(
    `checkpoint: signed by ${signersOf(checkpoint)}; ` +
      `log ${checkpoint.origin}, size ${checkpoint.size}, root ${toBase64(checkpoint.rootHash)}`,
  );
  let earlier: SignedCheckpoint | undefined;
  if (options.earlierCheckpoint !== undefined) {
    try {
      earlier = await openCheckpoint(
        crypto,
        options.earlierCheckpoint,
        verifiers,
        checkpoint.origin,
      );
      if (earlier.size > checkpoint.size) {
        fail(
          "earlier checkpoint",
          `its size ${earlier.size} is larger than the checkpoint's ${checkpoint.size}: the log shrank, or the two were given in the wrong order`,
        );
        earlier = undefined;
      } else {
        checked.push(
          `earlier checkpoint: size ${earlier.size}, root ${toBase64(earlier.rootHash)}`,
        );
      }
    } catch (error) {
      fail("earlier checkpoint", describeError(error));
    }
  }

  // 2. Events and their leaves.
  const byIndex = new Map<number, EventEntry>();
  const listed = new Map<number, Readonly<Record<string, unknown>>>();
  let eventsRead = 0;
  let eventsSkipped = 0;
  let unreadable = 0;
  let erased = 0;
  const erasedEvents: string[] = [];
  // Positions the service named as unreadable: failed already, not also "deleted".
  const namedUnreadable = new Set<number>();
  // Members of events that their commitment does not cover: said, as nothing proves them.
  const uncommittedMembers = new Set<string>();
  let withUncommitted = 0;
  for await (const item of options.events) {
    eventsRead++;
    const event =
      item !== null && typeof item === "object" && !Array.isArray(item)
        ? (item as Readonly<Record<string, unknown>>)
        : undefined;
    const id = typeof event?.eventId === "string" ? event.eventId : `#${eventsRead} of the input`;
    if (item instanceof UnreadableEvent) {
      fail(`event ${item.eventId ?? id}`, item.problem);
      unreadable++;
      continue;
    }
    if (event === undefined) {
      fail(`event ${id}`, "not a JSON object");
      unreadable++;
      continue;
    }
    if (typeof event.unreadable === "string") {
      // The service names an event whose stored content does not decrypt at its
      // position (docs/export.md): a failure, and its position is accounted for.
      const logIndex = typeof event.logIndex === "number" ? event.logIndex : -1;
      fail(eventSubject(id, logIndex), `the service cannot read it: ${event.unreadable}`);
      if (logIndex >= 0) namedUnreadable.add(logIndex);
      unreadable++;
      continue;
    }
    let entry: EventEntry & { logIndex: number };
    if (isTombstone(event)) {
      const logIndex = typeof event.logIndex === "number" ? event.logIndex : -1;
      const subject = eventSubject(id, logIndex);
      if (logIndex >= checkpoint.size) {
        if (options.beyondCheckpoint === "skip") {
          eventsSkipped++;
          continue;
        }
        fail(
          subject,
          `not covered by the checkpoint (size ${checkpoint.size}): verify against a newer checkpoint`,
        );
        continue;
      }
      if (proofs === undefined) {
        fail(
          subject,
          "erased: its leaf is checked by its inclusion proof, which needs proofs (--url or --bundle)",
        );
        unreadable++;
        continue;
      }
      let proof: InclusionProof;
      try {
        proof = await proofs.inclusion(id, checkpoint.size);
      } catch (error) {
        fail(subject, `erased, and no inclusion proof: ${describeError(error)}`);
        unreadable++;
        continue;
      }
      const checkedTombstone = await checkTombstoneInclusion(crypto, event, proof, checkpoint);
      if ("problem" in checkedTombstone) {
        fail(subject, checkedTombstone.problem);
        unreadable++;
        continue;
      }
      erased++;
      if (erasedEvents.length < LISTED_ERASURES) {
        erasedEvents.push(`${subject} at ${String(event.erasedAt)}`);
      }
      entry = { eventId: id, leaf: checkedTombstone.leaf, logIndex, erased: true };
    } else {
      const extra = Object.keys(event).filter((name) => !LISTED_MEMBERS.has(name));
      if (extra.length > 0) {
        withUncommitted++;
        for (const name of extra) uncommittedMembers.add(name);
      }
      try {
        const computed = await listedEventLeaf(crypto, event);
        entry = { eventId: computed.eventId, leaf: computed.leaf, logIndex: computed.logIndex };
      } catch (error) {
        fail(`event ${id}`, `cannot recompute its leaf: ${describeError(error)}`);
        unreadable++;
        continue;
      }
    }
    if (entry.logIndex >= checkpoint.size) {
      if (options.beyondCheckpoint === "skip") {
        eventsSkipped++;
        continue;
      }
      fail(
        eventSubject(entry.eventId, entry.logIndex),
        `not covered by the checkpoint (size ${checkpoint.size}): verify against a newer checkpoint`,
      );
      continue;
    }
    const previous = byIndex.get(entry.logIndex);
    if (previous !== undefined) {
      fail(
        eventSubject(entry.eventId, entry.logIndex),
        `event ${previous.eventId} claims the same logIndex`,
      );
      continue;
    }
    byIndex.set(entry.logIndex, entry);
    listed.set(entry.logIndex, event);
  }
  checked.push(
    `events: ${eventsRead} read, ${byIndex.size - erased} with a leaf recomputed from their content and salt` +
      (erased > 0
        ? `, ${erased} erased (tombstones) with the logged leaf proven by its inclusion proof`
        : "") +
      (eventsSkipped > 0 ? `, ${eventsSkipped} newer than the checkpoint skipped` : ""),
  );
  if (withUncommitted > 0) {
    // Not a failure: a member the API adds later is not committed either (leaf.ts).
    checked.push(
      `not proven: ${withUncommitted} event(s) carry members their commitment does not cover (${[...uncommittedMembers].sort().join(", ")}); what these say is not verified`,
    );
  }
  if (erased > 0) {
    // A tombstone's leaf is the event's, so the log cannot tell an erasure from a copy
    // that replaced a live event by a tombstone: listed, to be matched with the records
    // of the erasures asked for.
    checked.push(
      `erased events (match them with your erasure records): ${erasedEvents.join("; ")}` +
        (erased > erasedEvents.length ? `; and ${erased - erasedEvents.length} more` : ""),
    );
  }

  // 3. Inclusion.
  let missing = 0;
  if (complete) {
    for (let i = 0; i < checkpoint.size; i++) {
      if (byIndex.has(i) || namedUnreadable.has(i)) continue;
      missing++;
      if (missing <= 100) {
        fail(
          `logIndex ${i}`,
          "no event in the input holds this position of the log: an event was deleted, or the input is not the whole log",
        );
      }
    }
    if (missing > 100) fail("logIndex", `${missing - 100} more positions have no event`);
  }
  let rootMatches = false;
  let rootDiffers = false;
  let tree: Awaited<ReturnType<typeof createMemoryTree>> | undefined;
  if (complete && missing === 0 && unreadable === 0 && byIndex.size === checkpoint.size) {
    tree = createMemoryTree(crypto);
    for (let i = 0; i < checkpoint.size; i++) {
      const entry = byIndex.get(i);
      if (entry !== undefined) await tree.append(entry.leaf);
    }
    rootMatches = bytesEqual(await tree.root(), checkpoint.rootHash);
    rootDiffers = !rootMatches;
    if (rootMatches) {
      checked.push(
        `inclusion: the ${checkpoint.size} events' leaves, in logIndex order, form a tree with the checkpoint's root`,
      );
    } else if (proofs === undefined) {
      fail(
        "checkpoint",
        "the events' leaves form a tree with another root: give proofs (--url or --bundle) to name the events that changed",
      );
    }
  }
  if (!rootMatches && proofs !== undefined) {
    // Each event by its proof. Its failures are reported first (the changed events),
    // unless none of the events' proofs leads to the root: then the checkpoint's root is
    // what is wrong, and it comes first.
    let held = 0;
    const eventFailures: [subject: string, problem: string][] = [];
    const unproven: string[] = [];
    for (const [logIndex, entry] of [...byIndex.entries()].sort((a, b) => a[0] - b[0])) {
      const subject = eventSubject(entry.eventId, logIndex);
      if (entry.erased) {
        // Proven when read (step 2).
        held++;
        continue;
      }
      let proof: InclusionProof;
      try {
        proof = await proofs.inclusion(entry.eventId, checkpoint.size);
      } catch (error) {
        // Where the root already failed, a missing proof only leaves the event unnamed:
        // one line for all of them, not one per event of a bundle that carries none.
        if (rootDiffers) unproven.push(subject);
        else eventFailures.push([subject, `no inclusion proof: ${describeError(error)}`]);
        continue;
      }
      const problem = await checkEventInclusion(
        crypto,
        listed.get(logIndex) ?? {},
        proof,
        checkpoint,
      );
      if (problem === undefined) held++;
      else eventFailures.push([subject, problem]);
    }
    const rootProblem =
      "the events' leaves, in logIndex order, form a tree with another root than the checkpoint's";
    const noneLeads = rootDiffers && held === 0 && eventFailures.length > 1;
    if (noneLeads) {
      fail(
        "checkpoint",
        `${rootProblem}, and no event's inclusion proof leads to its root: the checkpoint's root is not this log's (or every event changed)`,
      );
    }
    for (const [subject, problem] of eventFailures) fail(subject, problem);
    // Named events explain a root that differs; with none named, the root is the finding.
    if (rootDiffers && eventFailures.length === 0)
      fail(
        "checkpoint",
        `${rootProblem}: an event changed, or the checkpoint's root is not this log's`,
      );
    if (unproven.length > 0) {
      fail(
        "events",
        `${unproven.length} of ${byIndex.size} events have no inclusion proof, so the changed events among them cannot be named (first: ${unproven[0]})`,
      );
    }
    if (held === byIndex.size) {
      checked.push(
        `inclusion: ${held} of ${byIndex.size} events proven in the checkpoint's tree by their inclusion proofs`,
      );
    }
  } else if (!complete && proofs === undefined && byIndex.size > 0) {
    fail("events", "inclusion not checked: partial input needs proofs (--url or --bundle)");
  }
  // The earlier checkpoint's root from the leaves too; where the root differs, it says
  // whether the change lies among the events the earlier checkpoint covered.
  if (tree !== undefined && earlier !== undefined) {
    if (bytesEqual(await tree.root(earlier.size), earlier.rootHash)) {
      checked.push(
        `consistency: the first ${earlier.size} leaves form a tree with the earlier checkpoint's root`,
      );
    } else {
      fail(
        "earlier checkpoint",
        rootMatches
          ? `the first ${earlier.size} events do not form a tree with its root: the log was rewritten after it was published`
          : `the first ${earlier.size} events do not form a tree with its root either: an event it covers changed, or the log was rewritten after it was published`,
      );
    }
  }

  // 4. Consistency by proof.
  if (earlier !== undefined && proofs !== undefined) {
    await checkConsistency(crypto, proofs, earlier, checkpoint, checked, fail);
  } else if (earlier !== undefined && !rootMatches) {
    fail("earlier checkpoint", "consistency not checked: it needs a proof (--url or --bundle)");
  }

  return report({ checkpoint, eventsRead, eventsSkipped });
}

async function checkConsistency(
  crypto: LogCrypto,
  proofs: ProofSource,
  earlier: SignedCheckpoint,
  checkpoint: SignedCheckpoint,
  checked: string[],
  fail: (subject: string, problem: string) => void,
): Promise<void> {
  if (earlier.size === 0) {
    checked.push("consistency: the earlier checkpoint is of the empty log");
    return;
  }
  if (earlier.size === checkpoint.size) {
    if (bytesEqual(earlier.rootHash, checkpoint.rootHash)) {
      checked.push("consistency: both checkpoints have the same size and root");
    } else {
      fail("earlier checkpoint", "same size as the checkpoint but another root: the log forked");
    }
    return;
  }
  let proof: ConsistencyProof;
  try {
    proof = await proofs.consistency(earlier.size, checkpoint.size);
  } catch (error) {
    fail("earlier checkpoint", `no consistency proof: ${describeError(error)}`);
    return;
  }
  try {
    if (Number(proof.from) !== earlier.size || Number(proof.to) !== checkpoint.size) {
      throw new TlogError("invalid-input", `the proof is from ${proof.from} to ${proof.to}`);
    }
    await checkTree(
      crypto,
      decodeHashes(proof.hashes),
      checkpoint.size,
      checkpoint.rootHash,
      earlier.size,
      earlier.rootHash,
    );
    checked.push(
      `consistency: proof of ${proof.hashes.length} hashes shows the tree of size ${earlier.size} is a prefix of the tree of size ${checkpoint.size}`,
    );
  } catch (error) {
    fail(
      "earlier checkpoint",
      error instanceof TlogError && error.code === "proof-failed"
        ? "the checkpoint's tree does not extend the earlier one: the log was rewritten after the earlier checkpoint was published"
        : `consistency proof unusable: ${describeError(error)}`,
    );
  }
}

/** The members a listed event has: the committed ones, its position and its salt. */
const LISTED_MEMBERS: ReadonlySet<string> = new Set([...COMMITTED_FIELDS, "logIndex", "salt"]);

/** How many erased events the report names one by one. */
const LISTED_ERASURES = 50;

/** A proof bundle file: proofs (and optionally checkpoints) gathered for offline checks. */
export interface ProofBundle {
  readonly checkpoint?: string;
  readonly earlierCheckpoint?: string;
  readonly inclusion?: readonly (InclusionProof & { readonly eventId: string })[];
  readonly consistency?: readonly ConsistencyProof[];
}

/** A ProofSource over a bundle; a proof the bundle lacks is an error naming it. */
export function bundleProofSource(bundle: ProofBundle): ProofSource {
  return {
    async inclusion(eventId, treeSize) {
      const proof = bundle.inclusion?.find((p) => p.eventId === eventId && p.treeSize === treeSize);
      if (proof === undefined) {
        throw new Error(`the bundle has no inclusion proof for tree size ${treeSize}`);
      }
      return proof;
    },
    async consistency(from, to) {
      const proof = bundle.consistency?.find((p) => p.from === from && p.to === to);
      if (proof === undefined)
        throw new Error(`the bundle has no consistency proof ${from} to ${to}`);
      return proof;
    },
  };
}
