/**
 * Random bytes from the operating system's CSPRNG, drawn in blocks: one system call
 * per 16 KiB instead of one per IV or id. Every byte is handed out once.
 */
import { randomFillSync } from "node:crypto";

const POOL_BYTES = 16 * 1024;
let pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/** `size` fresh random bytes (at most 1 KiB), owned by the caller. */
export function randomBytesFromPool(size: number): Buffer {
  if (size > 1024) throw new Error("draw large random buffers directly");
  if (offset + size > POOL_BYTES) {
    // A new buffer each refill: earlier draws stay valid and are never overwritten.
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + size);
  offset += size;
  return bytes;
}
