/** Identifiers. */
import { randomBytesFromPool } from "./crypto/random-pool.js";

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits, so ids sort by
 * creation time and index well.
 */
export function uuidv7(now: number = Date.now()): string {
  const bytes = Buffer.from(randomBytesFromPool(16));
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  return uuidFromBytes(bytes);
}

/** The canonical text form of a UUID's 16 bytes. */
export function uuidFromBytes(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID in its canonical text form. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
