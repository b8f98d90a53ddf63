/**
 * Canonical JSON for idempotency: object keys sorted, no white space, so that two
 * bodies that differ only in key order or formatting hash the same.
 */
import { hash } from "node:crypto";

/** The canonical serialization of a parsed JSON value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
}

/** SHA-256 of the canonical serialization. */
export function canonicalHash(value: unknown): Buffer {
  return hash("sha256", canonicalJson(value), "buffer");
}
