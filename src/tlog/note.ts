/**
 * Signed notes (C2SP signed-note; Go's `golang.org/x/mod/sumdb/note`) with Ed25519 keys.
 *
 * A note is UTF-8 text ending in a newline, then a blank line, then signature lines
 * "— <key name> <base64(key id || signature)>\n" (U+2014 EM DASH, space). The key id is
 * the first 4 bytes, big-endian, of SHA-256(name || 0x0A || 0x01 || public key); the
 * signature is Ed25519 over the text including its final newline.
 *
 * Key encodings, as Go writes them:
 * - verifier key: `<name>+<8 lower-case hex key id>+<base64(0x01 || 32-byte public key)>`
 * - signer key:   `PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 || 32-byte seed)>`
 *   (a secret: whoever holds it signs checkpoints; never log it).
 *
 * Invariant: openNote accepts exactly what Go's note.Open accepts for the same verifiers, and
 * signNote writes what Go's note.Sign writes, byte for byte (Ed25519 is deterministic).
 */
import {
  bytesEqual,
  concatBytes,
  decodeUtf8,
  fromBase64,
  isWellFormedText,
  toBase64,
  utf8,
} from "./bytes.js";
import type { LogCrypto } from "./crypto.js";
import { TlogError } from "./errors.js";

const ALG_ED25519 = 0x01;
const SIGNATURE_PREFIX = "— ";
const MAX_SIGNATURES = 100;

/** A parsed verifier key. */
export interface NoteVerifier {
  readonly name: string;
  /** The 32-bit key id. */
  readonly keyId: number;
  /** The 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
  /** The encoded verifier key. */
  readonly encoded: string;
}

/** A parsed signer key (secret). */
export interface NoteSigner {
  readonly name: string;
  readonly keyId: number;
  readonly seed: Uint8Array;
  readonly publicKey: Uint8Array;
}

/** One signature line of a note. */
export interface NoteSignature {
  readonly name: string;
  readonly keyId: number;
  /** base64(key id || signature), as on the line. */
  readonly base64: string;
}

/** A note opened with a verifier: its text and which signatures held. */
export interface OpenedNote {
  /** The text, including its final newline. */
  readonly text: string;
  /** Signatures by the given verifiers that verified (one per verifier at most). */
  readonly sigs: NoteSignature[];
  /** Signatures by keys not given, left unverified. */
  readonly unverifiedSigs: NoteSignature[];
}

/**
 * A valid key name: non-empty, no Unicode white space, no "+" (Go's isValidName; well-formed
 * UTF-16 stands in for valid UTF-8 here).
 */
export function isValidKeyName(name: string): boolean {
  return (
    name !== "" && isWellFormedText(name) && !/\p{White_Space}/u.test(name) && !name.includes("+")
  );
}

/** The 32-bit key id of a name and its encoded public key (0x01 || key). */
export async function keyId(crypto: LogCrypto, name: string, key: Uint8Array): Promise<number> {
  const sum = await crypto.sha256(utf8(name), new Uint8Array([0x0a]), key);
  return (
    (((sum[0] ?? 0) << 24) | ((sum[1] ?? 0) << 16) | ((sum[2] ?? 0) << 8) | (sum[3] ?? 0)) >>> 0
  );
}

function hex8(id: number): string {
  return id.toString(16).padStart(8, "0");
}

/** Splits s at the first sep: [before, after] (after "" when absent), like Go's chop. */
function chop(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ""] : [s.slice(0, i), s.slice(i + sep.length)];
}

function parseHexId(text: string): number | undefined {
  return /^[0-9a-fA-F]{8}$/.test(text) ? Number.parseInt(text, 16) : undefined;
}

/** Parses and checks an encoded verifier key. Throws TlogError "malformed". */
export async function parseVerifierKey(crypto: LogCrypto, vkey: string): Promise<NoteVerifier> {
  const [name, rest] = chop(vkey, "+");
  const [hash16, key64] = chop(rest, "+");
  const id = parseHexId(hash16);
  const key = fromBase64(key64);
  if (id === undefined || key === undefined || !isValidKeyName(name) || key.length === 0) {
    throw new TlogError("malformed", "malformed verifier id");
  }
  if (id !== (await keyId(crypto, name, key))) {
    throw new TlogError("malformed", "invalid verifier hash");
  }
  if (key[0] !== ALG_ED25519) throw new TlogError("malformed", "unknown verifier algorithm");
  if (key.length !== 33) throw new TlogError("malformed", "malformed verifier id");
  return { name, keyId: id, publicKey: key.slice(1), encoded: vkey };
}

/** Parses and checks an encoded signer key. Throws TlogError "malformed". */
export async function parseSignerKey(crypto: LogCrypto, skey: string): Promise<NoteSigner> {
  const [priv1, r1] = chop(skey, "+");
  const [priv2, r2] = chop(r1, "+");
  const [name, r3] = chop(r2, "+");
  const [hash16, key64] = chop(r3, "+");
  const id = parseHexId(hash16);
  const key = fromBase64(key64);
  if (
    priv1 !== "PRIVATE" ||
    priv2 !== "KEY" ||
    id === undefined ||
    key === undefined ||
    !isValidKeyName(name) ||
    key.length === 0
  ) {
    throw new TlogError("malformed", "malformed signer key");
  }
  if (key[0] !== ALG_ED25519) throw new TlogError("malformed", "unknown signer algorithm");
  if (key.length !== 33) throw new TlogError("malformed", "malformed signer key");
  const seed = key.slice(1);
  const publicKey = await crypto.ed25519PublicKey(seed);
  // The id names the public key, so it can only be checked once that is derived.
  if (id !== (await keyId(crypto, name, concatBytes(new Uint8Array([ALG_ED25519]), publicKey)))) {
    throw new TlogError("malformed", "invalid signer key hash");
  }
  return { name, keyId: id, seed, publicKey };
}

/** The encoded verifier key of a name and Ed25519 public key. */
export async function verifierKey(
  crypto: LogCrypto,
  name: string,
  publicKey: Uint8Array,
): Promise<string> {
  if (!isValidKeyName(name)) throw new TlogError("invalid-input", "invalid key name");
  if (publicKey.length !== 32) throw new TlogError("invalid-input", "an Ed25519 key is 32 bytes");
  const key = concatBytes(new Uint8Array([ALG_ED25519]), publicKey);
  return `${name}+${hex8(await keyId(crypto, name, key))}+${toBase64(key)}`;
}

/** The encoded signer key of a name and 32-byte Ed25519 seed (a secret). */
export async function signerKey(
  crypto: LogCrypto,
  name: string,
  seed: Uint8Array,
): Promise<string> {
  if (!isValidKeyName(name)) throw new TlogError("invalid-input", "invalid key name");
  if (seed.length !== 32) throw new TlogError("invalid-input", "an Ed25519 seed is 32 bytes");
  const publicKey = await crypto.ed25519PublicKey(seed);
  const id = await keyId(crypto, name, concatBytes(new Uint8Array([ALG_ED25519]), publicKey));
  return `PRIVATE+KEY+${name}+${hex8(id)}+${toBase64(concatBytes(new Uint8Array([ALG_ED25519]), seed))}`;
}

/** Signs a note text (which must end in a newline) with one signer: the encoded note. */
export async function signNote(
  crypto: LogCrypto,
  text: string,
  signer: NoteSigner,
): Promise<string> {
  if (!text.endsWith("\n") || !isWellFormedText(text)) {
    throw new TlogError("malformed", "malformed note");
  }
  const signature = await crypto.ed25519Sign(signer.seed, utf8(text));
  const id = new Uint8Array([
    signer.keyId >>> 24,
    (signer.keyId >>> 16) & 0xff,
    (signer.keyId >>> 8) & 0xff,
    signer.keyId & 0xff,
  ]);
  return `${text}\n${SIGNATURE_PREFIX}${signer.name} ${toBase64(concatBytes(id, signature))}\n`;
}

/**
 * Adds a signer's signature to a signed note whose text is `text`, after those it has (as
 * Go's note.Sign does for a note with signatures): the note unchanged when it already
 * carries one by that name and key id. Whoever verifies with another key still finds
 * theirs, so a checkpoint signed again after a key rotation verifies with the old key and
 * with the new one. The existing signatures are not checked here; the text is: a note
 * whose text is not `text` throws TlogError "invalid-input" and is never signed.
 */
export async function cosignNote(
  crypto: LogCrypto,
  note: string,
  signer: NoteSigner,
  text: string,
): Promise<string> {
  const parts = splitNote(note);
  if (parts === undefined) throw new TlogError("malformed", "malformed note");
  if (parts.text !== text)
    throw new TlogError("invalid-input", "the note's text is not the one given");
  const prefix = `${SIGNATURE_PREFIX}${signer.name} `;
  const already = parts.sigs.split("\n").some((line) => {
    const raw = line.startsWith(prefix) ? fromBase64(line.slice(prefix.length)) : undefined;
    return raw !== undefined && raw.length >= 4 && readKeyId(raw) === signer.keyId;
  });
  if (already) return note;
  // signNote's note is the text, a blank line and the new signature line.
  const signed = await signNote(crypto, text, signer);
  return `${note}${signed.slice(text.length + 1)}`;
}

/** A note's text (with its final newline) and its signature lines; undefined: no note. */
function splitNote(note: string): { text: string; sigs: string } | undefined {
  const split = note.lastIndexOf("\n\n");
  if (split < 0) return undefined;
  const sigs = note.slice(split + 2);
  if (sigs.length === 0 || !sigs.endsWith("\n")) return undefined;
  return { text: note.slice(0, split + 1), sigs };
}

function readKeyId(raw: Uint8Array): number {
  return (
    (((raw[0] ?? 0) << 24) | ((raw[1] ?? 0) << 16) | ((raw[2] ?? 0) << 8) | (raw[3] ?? 0)) >>> 0
  );
}

/**
 * Opens a signed note with the trusted verifiers, as Go's note.Open with a key list: the
 * text and its signatures. A signature is checked when its name and key id are those of
 * a given verifier (several: the keys before and after a rotation). Throws TlogError:
 * "malformed" for a note not in the format, "bad-signature" when a given verifier's
 * signature does not verify, "unverified" when the note carries no signature by any.
 */
export async function openNote(
  crypto: LogCrypto,
  message: string | Uint8Array,
  verifiers: NoteVerifier | readonly NoteVerifier[],
): Promise<OpenedNote> {
  const trusted: readonly NoteVerifier[] = "publicKey" in verifiers ? [verifiers] : verifiers;
  const malformed = () => new TlogError("malformed", "malformed note");
  const msg = typeof message === "string" ? message : decodeUtf8(message);
  if (msg === undefined || !isWellFormedText(msg)) throw malformed();
  // No ASCII control characters but newline.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: that is the rule being checked
  if (/[\u0000-\u0009\u000b-\u001f]/.test(msg)) throw malformed();
  const parts = splitNote(msg);
  if (parts === undefined) throw malformed();
  const { text } = parts;
  let { sigs } = parts;

  const verified: NoteSignature[] = [];
  const unverified: NoteSignature[] = [];
  const seenUnverified = new Set<string>();
  let numSig = 0;
  while (sigs.length > 0) {
    const i = sigs.indexOf("\n");
    let line = sigs.slice(0, i);
    sigs = sigs.slice(i + 1);
    if (!line.startsWith(SIGNATURE_PREFIX)) throw malformed();
    line = line.slice(SIGNATURE_PREFIX.length);
    const [name, b64] = chop(line, " ");
    const raw = fromBase64(b64);
    if (raw === undefined || !isValidKeyName(name) || b64 === "" || raw.length < 5) {
      throw malformed();
    }
    const id = readKeyId(raw);
    if (++numSig > MAX_SIGNATURES) throw malformed();
    const verifier = trusted.find((one) => one.name === name && one.keyId === id);
    if (verifier === undefined) {
      if (!seenUnverified.has(line)) {
        seenUnverified.add(line);
        unverified.push({ name, keyId: id, base64: b64 });
      }
      continue;
    }
    // Repeated signatures by one verifier are dropped, as Go does.
    if (verified.some((sig) => sig.name === name && sig.keyId === id)) continue;
    if (!(await crypto.ed25519Verify(verifier.publicKey, utf8(text), raw.subarray(4)))) {
      throw new TlogError("bad-signature", `invalid signature for key ${name}+${hex8(id)}`);
    }
    verified.push({ name, keyId: id, base64: b64 });
  }
  if (verified.length === 0) {
    throw new TlogError("unverified", "note has no verifiable signatures");
  }
  return { text, sigs: verified, unverifiedSigs: unverified };
}

/** True when two verifiers are the same key under the same name. */
export function sameVerifier(a: NoteVerifier, b: NoteVerifier): boolean {
  return a.name === b.name && a.keyId === b.keyId && bytesEqual(a.publicKey, b.publicKey);
}
