/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the one text form of a JSON value that the
 * commitment of an event hashes, so that the server and any reader, in any language,
 * derive the same bytes from the same event.
 *
 * - Numbers: ECMAScript Number::toString (RFC 8785 §3.2.2.3): shortest round-trip
 *   digits, exponent form below 1e-6 and from 1e21; -0 is "0". NaN and infinities are
 *   not JSON and are refused.
 * - Strings: JSON.stringify's escaping (§3.2.2.2): `"` `\` and the controls U+0000-U+001F
 *   escaped (\b \t \n \f \r, else \u00xx lower-case), everything else literal UTF-8.
 *   Lone surrogates are not I-JSON, so RFC 8785 does not define them; here they are
 *   written as JSON.stringify writes them (`\udxxx`, lower-case), because the service
 *   stores what callers sent and a leaf must exist for every acknowledged event.
 * - Objects: members sorted by their names as arrays of UTF-16 code units (§3.2.3), which
 *   is JavaScript's default string order; no white space anywhere.
 *
 * Invariant: canonicalize(JSON.parse(canonicalize(v))) === canonicalize(v).
 */
import { utf8 } from "./bytes.js";
import { TlogError } from "./errors.js";

/** The RFC 8785 canonical form of a JSON value (as JSON.parse returns it). */
export function canonicalize(value: unknown): string {
  const parts: string[] = [];
  write(value, parts, "$");
  return parts.join("");
}

/** The UTF-8 bytes of the canonical form. */
export function canonicalBytes(value: unknown): Uint8Array {
  return utf8(canonicalize(value));
}

function refuse(path: string, why: string): never {
  throw new TlogError("malformed", `cannot canonicalize ${path}: ${why}`);
}

function writeString(text: string, parts: string[]): void {
  // JSON.stringify escapes exactly what RFC 8785 escapes, and lone surrogates as \udxxx.
  parts.push(JSON.stringify(text));
}

function write(value: unknown, parts: string[], path: string): void {
  switch (typeof value) {
    case "string":
      writeString(value, parts);
      return;
    case "number":
      if (!Number.isFinite(value)) refuse(path, `${value} is not a JSON number`);
      // Number::toString is the ECMAScript serialisation RFC 8785 adopts; -0 gives "0".
      parts.push(String(value));
      return;
    case "boolean":
      parts.push(value ? "true" : "false");
      return;
    case "object":
      break;
    default:
      refuse(path, `${typeof value} is not a JSON value`);
  }
  if (value === null) {
    parts.push("null");
    return;
  }
  if (Array.isArray(value)) {
    parts.push("[");
    value.forEach((item: unknown, i) => {
      if (i > 0) parts.push(",");
      write(item, parts, `${path}[${i}]`);
    });
    parts.push("]");
    return;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    refuse(path, "not a plain JSON object");
  }
  const record = value as Record<string, unknown>;
  // Default sort order compares UTF-16 code units, exactly what §3.2.3 asks.
  const keys = Object.keys(record).sort();
  parts.push("{");
  keys.forEach((key, i) => {
    if (i > 0) parts.push(",");
    writeString(key, parts);
    parts.push(":");
    write(record[key], parts, `${path}.${key}`);
  });
  parts.push("}");
}
