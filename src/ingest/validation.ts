/**
 * Validation of request bodies against the rules declared in the protos
 * (`audit.v1.field` and `audit.v1.message` options, proto/audit/v1/rules.proto). The
 * rules are read from the message descriptors once, at start-up, and applied to the
 * JSON form of a request, so REST and every RPC protocol get the same checks and the
 * same messages. Issues use the spec's shape: `{path, message, code}`, every failing
 * field listed. Unknown fields are dropped from the output.
 */

import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { getOption, hasOption, ScalarType } from "@bufbuild/protobuf";
import {
  type FieldRules,
  field as fieldRulesOption,
  message as messageRulesOption,
} from "../../gen/audit/v1/rules_pb.js";
import type { FieldIssue } from "../errors.js";
import { MAX_NESTING, NUMBER_OUT_OF_RANGE } from "../vocabulary/json-limits.js";
import { longerThan } from "../vocabulary/text-length.js";

type Path = (string | number)[];

/** Checks one JSON value; pushes issues and returns the cleaned value. */
type Check = (value: unknown, path: Path, issues: FieldIssue[]) => unknown;

/** A compiled validator for one message type. */
export interface Validator<T> {
  /** The cleaned value when `issues` is empty; unusable otherwise. */
  validate(value: unknown): { value: T; issues: FieldIssue[] };
}

/**
 * Compiles a validator for `schema`. The caller names the TypeScript shape `T` of a
 * valid JSON value; the checks compiled from the descriptor make that true at run time.
 */
export function compileValidator<T>(schema: DescMessage): Validator<T> {
  const check = compileMessage(schema);
  return {
    validate(value) {
      const issues: FieldIssue[] = [];
      const cleaned = check(value, [], issues) as T;
      return { value: cleaned, issues };
    },
  };
}

/** The JSON type name of a value, as zod reports it. */
function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function invalidType(expected: string, value: unknown, path: Path): FieldIssue {
  return value === undefined
    ? { path, message: "Required", code: "invalid_type" }
    : { path, message: `Expected ${expected}, received ${typeName(value)}`, code: "invalid_type" };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function compileMessage(schema: DescMessage): Check {
  const fields = schema.fields.map((descField) => ({
    name: descField.jsonName,
    required: rulesOf(descField)?.required ?? false,
    check: compileField(descField),
  }));
  const oneOf = hasOption(schema, messageRulesOption)
    ? getOption(schema, messageRulesOption).requireOneOf.map(
        (protoName) => schema.fields.find((f) => f.name === protoName)?.jsonName ?? protoName,
      )
    : [];

  return (value, path, issues) => {
    if (!isPlainObject(value)) {
      issues.push(invalidType("object", value, path));
      return undefined;
    }
    const out: Record<string, unknown> = {};
    for (const { name, required, check } of fields) {
      // Own properties only: `__proto__` or `constructor` in a body are plain unknown keys.
      const present = Object.hasOwn(value, name) && value[name] !== undefined;
      if (!present) {
        if (required)
          issues.push({ path: [...path, name], message: "Required", code: "invalid_type" });
        continue;
      }
      const cleaned = check(value[name], [...path, name], issues);
      if (cleaned !== undefined) out[name] = cleaned;
    }
    // One of them supplied: present and not the empty string (`"actionKey": ""` names no
    // action, so an event with only empty ones is refused like one with neither).
    if (
      oneOf.length > 0 &&
      !oneOf.some(
        (name) => Object.hasOwn(value, name) && value[name] !== undefined && value[name] !== "",
      )
    ) {
      issues.push({
        path,
        message: `Either ${oneOf.join(" or ")} is required`,
        code: "custom",
      });
    }
    return out;
  };
}

function rulesOf(descField: DescField): FieldRules | undefined {
  return hasOption(descField, fieldRulesOption)
    ? getOption(descField, fieldRulesOption)
    : undefined;
}

function compileField(descField: DescField): Check {
  const rules = rulesOf(descField);
  if (descField.fieldKind === "list") {
    if (descField.listKind !== "message") {
      throw new Error(`unsupported list of ${descField.listKind} in ${descField.name}`);
    }
    const element = compileMessageField(descField.message, rules);
    const maxItems = rules?.maxItems ?? 0;
    return (value, path, issues) => {
      if (!Array.isArray(value)) {
        issues.push(invalidType("array", value, path));
        return undefined;
      }
      if (maxItems > 0 && value.length > maxItems) {
        issues.push({
          path,
          message: `Array must contain at most ${maxItems} element(s)`,
          code: "too_big",
        });
        return undefined;
      }
      return value.map((item, index) => element(item, [...path, index], issues));
    };
  }
  if (descField.fieldKind === "message") return compileMessageField(descField.message, rules);
  if (descField.fieldKind === "scalar") return compileScalar(descField.scalar, rules);
  throw new Error(`unsupported field kind ${descField.fieldKind} of ${descField.name}`);
}

function compileMessageField(schema: DescMessage, rules: FieldRules | undefined): Check {
  const maxBytes = rules?.maxJsonBytes ?? 0;
  const sizeCheck = (value: unknown, path: Path, issues: FieldIssue[]) => {
    if (maxBytes > 0 && Buffer.byteLength(JSON.stringify(value), "utf8") > maxBytes) {
      issues.push({
        path,
        message: `Must be at most ${maxBytes / 1024}KB when serialized`,
        code: "too_big",
      });
    }
  };
  switch (schema.typeName) {
    case "google.protobuf.Struct":
      return (value, path, issues) => {
        if (!isPlainObject(value)) {
          issues.push(invalidType("object", value, path));
          return undefined;
        }
        sizeCheck(value, path, issues);
        storableCheck(value, path, issues);
        return value;
      };
    case "google.protobuf.Value":
      // Any JSON value, null included.
      return (value, path, issues) => {
        sizeCheck(value, path, issues);
        storableCheck(value, path, issues);
        return value;
      };
    default:
      return compileMessage(schema);
  }
}

/**
 * A `__proto__` key cannot be read back: JSON readers and protobuf runtimes (Struct
 * fields are a plain object) turn it into the object's prototype instead of a key, so
 * the event would silently lose it. It is refused rather than stored and lost.
 */
const RESERVED_KEY = "__proto__";
const NO_KIND =
  "Value has no kind set: a google.protobuf.Value holds null, a number, a string, a bool, a struct or a list";

/** Refuses JSON that could not be stored and read back as sent. */
function storableCheck(value: unknown, path: Path, issues: FieldIssue[]): void {
  // Every protocol comes through here; REST bodies were already depth-checked as text.
  if (nesting(value, 0) > MAX_NESTING) {
    issues.push({
      path,
      message: `Must be nested at most ${MAX_NESTING} levels deep`,
      code: "too_big",
    });
    return;
  }
  const found = findUnstorable(value, []);
  if (found) issues.push({ ...found, path: [...path, ...found.path] });
}

/** How deep arrays and objects nest in `value`, stopping once past the limit. */
function nesting(value: unknown, depth: number): number {
  if (depth > MAX_NESTING || typeof value !== "object" || value === null) return depth;
  let deepest = depth + 1;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    deepest = Math.max(deepest, nesting(item, depth + 1));
    if (deepest > MAX_NESTING) break;
  }
  return deepest;
}

/**
 * The first part of `value` that could not be read back as sent: a `__proto__` key, or
 * a number beyond the range of a double (`1e400` parses as Infinity, which JSON writes
 * as null; protobuf's Value cannot hold it either). `at` is the path walked so far, a
 * stack shared by the walk and copied only into an issue found (most values have none).
 */
function findUnstorable(value: unknown, at: Path): FieldIssue | undefined {
  if (value === undefined) {
    // Only over RPC: a google.protobuf.Value with no kind inside a list or a struct of
    // `before` or `after` (lenient-json.ts). Stored, it would read back as null in a
    // list and not at all in an object.
    return { path: [...at], message: NO_KIND, code: "invalid_type" };
  }
  if (typeof value === "number" && !Number.isFinite(value)) {
    return {
      path: [...at],
      message: NUMBER_OUT_OF_RANGE,
      code: "custom",
    };
  }
  if (typeof value !== "object" || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      if (typeof item !== "object" && typeof item !== "number" && item !== undefined) continue;
      at.push(index);
      const found = findUnstorable(item, at);
      at.pop();
      if (found) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (key === RESERVED_KEY) {
      return {
        path: [...at, key],
        message: `Key ${RESERVED_KEY} is not allowed: it cannot be read back`,
        code: "custom",
      };
    }
    const item: unknown = (value as Record<string, unknown>)[key];
    if (typeof item !== "object" && typeof item !== "number" && item !== undefined) continue;
    at.push(key);
    const found = findUnstorable(item, at);
    at.pop();
    if (found) return found;
  }
  return undefined;
}

/** An ISO 8601 date-time with a zone, as accepted; isDateTime checks the ranges too. */
export const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))$/i;

// The instants stored and returned: years 0001 to 9999 in UTC, the range that both
// PostgreSQL and the RFC 3339 form of the answers (`toISOString`) write with four digits.
const EARLIEST_INSTANT = Date.parse("0001-01-01T00:00:00.000Z");
const LATEST_INSTANT = Date.parse("9999-12-31T23:59:59.999Z");

/**
 * True for an ISO 8601 date-time with a zone that names a real instant between years
 * 0001 and 9999 in UTC. Each part is range-checked: `Date.parse` alone would roll
 * 2023-02-29 over to March 1st.
 */
export function isDateTime(value: string): boolean {
  const parts = DATE_TIME.exec(value);
  const instant = Date.parse(value);
  if (!parts || !(instant >= EARLIEST_INSTANT && instant <= LATEST_INSTANT)) return false;
  const [year, month, day, hour, minute, second, zoneHour, zoneMinute] = parts
    .slice(1)
    .map((part) => (part === undefined ? 0 : Number(part)));
  const daysInMonth = new Date(Date.UTC(year ?? 0, month ?? 0, 0)).getUTCDate();
  return (
    (month ?? 0) >= 1 &&
    (month ?? 0) <= 12 &&
    (day ?? 0) >= 1 &&
    (day ?? 0) <= daysInMonth &&
    (hour ?? 0) <= 23 &&
    (minute ?? 0) <= 59 &&
    (second ?? 0) <= 59 &&
    (zoneHour ?? 0) <= 23 &&
    (zoneMinute ?? 0) <= 59
  );
}

function compileScalar(scalar: ScalarType, rules: FieldRules | undefined): Check {
  if (scalar === ScalarType.BOOL) {
    return (value, path, issues) => {
      if (typeof value !== "boolean") {
        issues.push(invalidType("boolean", value, path));
        return undefined;
      }
      return value;
    };
  }
  if (scalar !== ScalarType.STRING) throw new Error(`unsupported scalar type ${scalar}`);
  const maxLen = rules?.maxLen ?? 0;
  const allowed = rules?.in ?? [];
  const dateTime = rules?.dateTime ?? false;
  return (value, path, issues) => {
    if (typeof value !== "string") {
      issues.push(invalidType("string", value, path));
      return undefined;
    }
    if (allowed.length > 0 && !allowed.includes(value)) {
      const expected = allowed.map((option) => `'${option}'`).join(" | ");
      issues.push({
        path,
        message: `Invalid enum value. Expected ${expected}, received '${value}'`,
        code: "invalid_enum_value",
      });
    }
    // Lengths count Unicode code points, so an emoji is one character.
    if (maxLen > 0 && longerThan(value, maxLen)) {
      issues.push({
        path,
        message: `String must contain at most ${maxLen} character(s)`,
        code: "too_big",
      });
    }
    if (dateTime && !isDateTime(value)) {
      issues.push({ path, message: "Invalid datetime", code: "invalid_string" });
    }
    return value;
  };
}
