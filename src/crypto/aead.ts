/**
 * AES-256-GCM with associated data. A sealed value is
 * `[format 1 byte][iv 12 bytes][tag 16 bytes][ciphertext]`. The associated data binds
 * a ciphertext to where it belongs (project, event, column): moved elsewhere, it no
 * longer opens.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from "node:crypto";
import { randomBytesFromPool } from "./random-pool.js";

const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;

// Each key's KeyObject, made once per key buffer (the keyring keeps one buffer per key):
// a cipher made from a raw buffer imports the key again every time, and sealing and
// opening run for every event (about a fifth of their cost, measured).
const keyObjects = new WeakMap<Buffer, KeyObject>();

function keyObjectOf(key: Buffer): KeyObject {
  let keyObject = keyObjects.get(key);
  if (keyObject === undefined) {
    keyObject = createSecretKey(key);
    keyObjects.set(key, keyObject);
  }
  return keyObject;
}

/** Encrypts `plaintext` under the 32-byte `key`, bound to `associatedData`. */
export function seal(key: Buffer, plaintext: Buffer, associatedData: string): Buffer {
  const iv = randomBytesFromPool(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyObjectOf(key), iv);
  cipher.setAAD(Buffer.from(associatedData, "utf8"));
  // Written into one buffer: GCM's ciphertext is as long as the plaintext.
  const sealed = Buffer.allocUnsafe(HEADER_BYTES + plaintext.length);
  sealed[0] = FORMAT;
  iv.copy(sealed, 1);
  const written = cipher.update(plaintext).copy(sealed, HEADER_BYTES);
  const rest = cipher.final();
  if (written + rest.length !== plaintext.length) throw new Error("AES-GCM changed the length");
  rest.copy(sealed, HEADER_BYTES + written);
  cipher.getAuthTag().copy(sealed, 1 + IV_BYTES);
  return sealed;
}

/** Decrypts a value made by `seal`; throws if the key, data or associated data differ. */
export function open(key: Buffer, sealed: Uint8Array, associatedData: string): Buffer {
  const data = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (data.length < HEADER_BYTES || data[0] !== FORMAT) {
    throw new Error("unknown ciphertext format");
  }
  const decipher = createDecipheriv(
    "aes-256-gcm",
    keyObjectOf(key),
    data.subarray(1, 1 + IV_BYTES),
  );
  decipher.setAAD(Buffer.from(associatedData, "utf8"));
  decipher.setAuthTag(data.subarray(1 + IV_BYTES, HEADER_BYTES));
  return Buffer.concat([decipher.update(data.subarray(HEADER_BYTES)), decipher.final()]);
}
