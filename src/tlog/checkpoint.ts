/**
 * Checkpoints (C2SP tlog-checkpoint): the signed tree head of a log. The note text is
 *
 *   <origin>\n<tree size in decimal>\n<base64 root hash>\n[extension lines]
 *
 * signed as a note (note.ts). The origin names one log and nothing else; the size has no
 * sign, no leading zeros; the root is 32 bytes in standard base64.
 *
 * Invariant: formatCheckpoint writes no extension lines; parseCheckpoint accepts
 * non-empty extension lines (the spec allows them) and ignores them.
 */
import { fromBase64, toBase64 } from "./bytes.js";
import type { LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";
import {
  type NoteSignature,
  type NoteSigner,
  type NoteVerifier,
  openNote,
  signNote,
} from "./note.js";
import { HASH_SIZE, type Hash } from "./tree.js";

/** A tree head. */
export interface Checkpoint {
  /** The log's unique name, the first line. */
  readonly origin: string;
  /** Number of leaves. */
  readonly size: number;
  /** RFC 6962 root hash of the first `size` leaves. */
  readonly rootHash: Hash;
}

/** A checkpoint read from a signed note, with the note as published. */
export interface SignedCheckpoint extends Checkpoint {
  /** The whole signed note, text and signatures. */
  readonly note: string;
  /** Its signatures by the given verifier keys, all verified. */
  readonly signatures: readonly NoteSignature[];
}

/** The checkpoint's note text (unsigned). */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  const { origin, size, rootHash } = checkpoint;
  if (origin === "" || /[\n\r]/.test(origin)) {
    throw new TlogError("invalid-input", "a checkpoint origin is one non-empty line");
  }
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new TlogError("invalid-input", "a checkpoint size is a non-negative integer");
  }
  if (rootHash.length !== HASH_SIZE)
    throw new TlogError("invalid-input", "a root hash is 32 bytes");
  return `${origin}\n${size}\n${toBase64(rootHash)}\n`;
}

/** Parses a checkpoint's note text. Throws TlogError "malformed". */
export function parseCheckpoint(text: string): Checkpoint {
  const malformed = (why: string) => new TlogError("malformed", `malformed checkpoint: ${why}`);
  if (!text.endsWith("\n")) throw malformed("text does not end in a newline");
  const lines = text.slice(0, -1).split("\n");
  const [origin, sizeText, hashText, ...extensions] = lines;
  if (origin === undefined || origin === "") throw malformed("no origin line");
  if (sizeText === undefined || !/^(0|[1-9][0-9]*)$/.test(sizeText)) {
    throw malformed("tree size is not a decimal number");
  }
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw malformed("tree size too large");
  const rootHash = hashText === undefined ? undefined : fromBase64(hashText);
  if (rootHash === undefined || rootHash.length !== HASH_SIZE) {
    throw malformed("root hash is not 32 bytes of base64");
  }
  if (extensions.some((line) => line === "")) throw malformed("empty extension line");
  return { origin, size, rootHash };
}

/** Formats and signs a checkpoint: the signed note to publish. */
export async function signCheckpoint(
  crypto: LogCrypto,
  checkpoint: Checkpoint,
  signer: NoteSigner,
): Promise<string> {
  return signNote(crypto, formatCheckpoint(checkpoint), signer);
}

/**
 * Opens a signed checkpoint with the log's verifier keys (several: the keys before and
 * after a rotation) and checks that it is the checkpoint of that log: its origin must be
 * the name of a key that signed it. One signing key may sign many logs, and a signature
 * line's name is not signed, so without that check another log's checkpoint, its
 * signature line relabelled, would pass for this log's. `expectedOrigin` also pins the
 * origin (an earlier checkpoint must be of the same log as the later one). Throws
 * TlogError ("malformed", "bad-signature", "unverified", or "invalid-input" for another
 * log's checkpoint).
 */
export async function openCheckpoint(
  crypto: LogCrypto,
  note: string | Uint8Array,
  verifiers: NoteVerifier | readonly NoteVerifier[],
  expectedOrigin?: string,
): Promise<SignedCheckpoint> {
  const opened = await openNote(crypto, note, verifiers);
  const checkpoint = parseCheckpoint(opened.text);
  if (!opened.sigs.some((sig) => sig.name === checkpoint.origin)) {
    const names = [...new Set(opened.sigs.map((sig) => sig.name))];
    throw new TlogError(
      "invalid-input",
      `checkpoint is for log ${JSON.stringify(checkpoint.origin)}, not for the key's log ${names.map((name) => JSON.stringify(name)).join(", ")}`,
    );
  }
  if (expectedOrigin !== undefined && checkpoint.origin !== expectedOrigin) {
    throw new TlogError(
      "invalid-input",
      `checkpoint is for log ${JSON.stringify(checkpoint.origin)}, not ${JSON.stringify(expectedOrigin)}`,
    );
  }
  return {
    ...checkpoint,
    note: typeof note === "string" ? note : new TextDecoder().decode(note),
    signatures: opened.sigs,
  };
}
