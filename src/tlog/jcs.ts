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
  // JSON.stringify writes strings, numbers and literals exactly as RFC 8785 does, and
  // members in their enumeration order: with every object's members in sorted order it
  // writes the canonical form, at about half the cost of writing it piece by piece (the
  // leaf of every event pays it). What it cannot order (names like "1", which objects
  // always enumerate first, in numeric order) and what is not JSON goes the long way.
  const sorted = sortedForStringify(value);
  return sorted === NOT_SORTABLE ? write(value, undefined, "$") : JSON.stringify(sorted);
}

/** The UTF-8 bytes of the canonical form. */
export function canonicalBytes(value: unknown): Uint8Array {
  return utf8(canonicalize(value));
}

/** Where a value sits, kept as links and spelled out only for an error message. */
interface Place {
  parent: Place | undefined;
  step: string | number;
}

function spell(place: Place | undefined, step: string | number): string {
  const steps: (string | number)[] = [step];
  for (let at = place; at; at = at.parent) steps.unshift(at.step);
  return steps
    .map((part, i) =>
      i === 0 ? String(part) : typeof part === "number" ? `[${part}]` : `.${part}`,
    )
    .join("");
}

function refuse(place: Place | undefined, step: string | number, why: string): never {
  throw new TlogError("malformed", `cannot canonicalize ${spell(place, step)}: ${why}`);
}

// JSON.stringify escapes exactly what RFC 8785 escapes (§3.2.2.2), and lone surrogates as
// \udxxx. The text is built by concatenation (V8 joins the pieces once, when hashed).
function write(value: unknown, parent: Place | undefined, step: string | number): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) refuse(parent, step, `${value} is not a JSON number`);
      // Number::toString is the ECMAScript serialisation RFC 8785 adopts; -0 gives "0".
      return String(value);
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    default:
      refuse(parent, step, `${typeof value} is not a JSON value`);
  }
  if (value === null) return "null";
  const place: Place = { parent, step };
  if (Array.isArray(value)) {
    let text = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) text += ",";
      text += write(value[i], place, i);
    }
    return `${text}]`;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    refuse(parent, step, "not a plain JSON object");
  }
  const record = value as Record<string, unknown>;
  // Default sort order compares UTF-16 code units, exactly what §3.2.3 asks.
  const keys = Object.keys(record).sort();
  let text = "{";
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (i > 0) text += ",";
    text += `${JSON.stringify(key)}:${write(record[key], place, key)}`;
  }
  return `${text}}`;
}

const NOT_SORTABLE: unique symbol = Symbol("not sortable");

/**
 * True for a member name that may be an array index, which objects enumerate before the
 * others whatever their order of insertion. Any name starting with a digit, to stay clear
 * of the engine's exact rule: such names (and "__proto__", which a copy would take as its
 * prototype) only take the long way.
 */
function mayBeIndexName(name: string): boolean {
  const first = name.charCodeAt(0);
  return first >= 0x30 && first <= 0x39;
}

/**
 * The value with each object's members in sorted order (objects copied only where they
 * were not), checked to be JSON that JSON.stringify writes canonically; NOT_SORTABLE
 * when it is not (the caller then writes it member by member, and refuses what is not
 * JSON with the place).
 */
function sortedForStringify(value: unknown): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : NOT_SORTABLE;
    case "object":
      break;
    default:
      return NOT_SORTABLE;
  }
  if (value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = sortedForStringify(value[i]);
      if (item === NOT_SORTABLE) return NOT_SORTABLE;
      if (item !== value[i]) {
        copy ??= value.slice();
        copy[i] = item;
      }
    }
    return copy ?? value;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return NOT_SORTABLE;
  const record = value as Record<string, unknown>;
  const names = Object.keys(record);
  let inOrder = true;
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    if (mayBeIndexName(name) || name === "__proto__") return NOT_SORTABLE;
    if (i > 0 && (names[i - 1] as string) > name) inOrder = false;
  }
  if (!inOrder) names.sort();
  let copy: Record<string, unknown> | undefined = inOrder ? undefined : {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const member = record[name];
    const sorted = sortedForStringify(member);
    if (sorted === NOT_SORTABLE) return NOT_SORTABLE;
    if (copy === undefined && sorted !== member) {
      copy = {};
      for (let j = 0; j < i; j++) copy[names[j] as string] = record[names[j] as string];
    }
    if (copy !== undefined) copy[name] = sorted;
  }
  return copy ?? value;
}
