/**
 * Byte helpers for the verifiable log, written against the web platform only (no Buffer,
 * no node: imports) so the same modules run in Node and in the browser viewer.
 *
 * Base64 is the standard alphabet with padding (RFC 4648 §4), which is what signed notes,
 * checkpoints and Go's `encoding/base64.StdEncoding` use. Decoding is strict: no white
 * space, padding required, and the unused low bits of the last character must be zero, so
 * one byte string has exactly one accepted text form.
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

/** Standard base64 with padding. */
export function toBase64(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out +=
      ALPHABET.charAt(n >>> 18) +
      ALPHABET.charAt((n >>> 12) & 63) +
      ALPHABET.charAt((n >>> 6) & 63) +
      ALPHABET.charAt(n & 63);
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = (bytes[i] ?? 0) << 16;
    out += `${ALPHABET.charAt(n >>> 18)}${ALPHABET.charAt((n >>> 12) & 63)}==`;
  } else if (rest === 2) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8);
    out += `${ALPHABET.charAt(n >>> 18)}${ALPHABET.charAt((n >>> 12) & 63)}${ALPHABET.charAt((n >>> 6) & 63)}=`;
  }
  return out;
}

/** Decodes standard padded base64; undefined for anything else. */
export function fromBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const last = i + 4 === text.length;
    const values = [0, 0, 0, 0];
    for (let j = 0; j < 4; j++) {
      const code = text.charCodeAt(i + j);
      if (last && j >= 4 - padding) {
        if (code !== 0x3d) return undefined;
        continue;
      }
      const value = code < 128 ? (DECODE[code] ?? -1) : -1;
      if (value < 0) return undefined;
      values[j] = value;
    }
    const n = ((values[0] ?? 0) << 18) | ((values[1] ?? 0) << 12) | ((values[2] ?? 0) << 6);
    const m = n | (values[3] ?? 0);
    if (last && padding === 2 && (n & 0xffff) !== 0) return undefined;
    if (last && padding === 1 && (m & 0xff) !== 0) return undefined;
    out[o++] = m >>> 16;
    if (o < out.length) out[o++] = (m >>> 8) & 0xff;
    if (o < out.length) out[o++] = m & 0xff;
  }
  return out;
}

/** Lower-case hexadecimal. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** Decodes hexadecimal (either case, even length); undefined for anything else. */
export function fromHex(text: string): Uint8Array | undefined {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) return undefined;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** The concatenation of the parts. */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** True when both hold the same bytes. Not constant-time: everything compared is public. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const encoder = new TextEncoder();

/** UTF-8 of a string that holds no lone surrogates (checked by the callers that care). */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when the string is well-formed UTF-16 (no lone surrogates), so it has a UTF-8 form. */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** Decodes UTF-8, refusing malformed input (undefined). */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
