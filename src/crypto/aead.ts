/**
 * AES-256-GCM with associated data. A sealed value is
 * `[format 1 byte][iv 12 bytes][tag 16 bytes][ciphertext]`. The associated data binds
 * a ciphertext to where it belongs (project, event, column): moved elsewhere, it no
 * longer opens.
 */
import { createCipheriv, createDecipheriv } from "node:crypto";
import { randomBytesFromPool } from "./random-pool.js";

const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;

/** Encrypts `plaintext` under the 32-byte `key`, bound to `associatedData`. */
export function seal(key: Buffer, plaintext: Buffer, associatedData: string): Buffer {
  const iv = randomBytesFromPool(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(associatedData, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(FORMAT), iv, cipher.getAuthTag(), body]);
}

/** Decrypts a value made by `seal`; throws if the key, data or associated data differ. */
export function open(key: Buffer, sealed: Uint8Array, associatedData: string): Buffer {
  const data = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (data.length < HEADER_BYTES || data[0] !== FORMAT) {
    throw new Error("unknown ciphertext format");
  }
  const decipher = createDecipheriv("aes-256-gcm", key, data.subarray(1, 1 + IV_BYTES));
  decipher.setAAD(Buffer.from(associatedData, "utf8"));
  decipher.setAuthTag(data.subarray(1 + IV_BYTES, HEADER_BYTES));
  return Buffer.concat([decipher.update(data.subarray(HEADER_BYTES)), decipher.final()]);
}
