/**
 * The service stores string fields HTML-encoded (spec 4.1), so that a viewer that puts
 * them into a page can never be made to run a script. Encoded: `&` `<` `>` `"` `'`, in
 * every string of the event: the top-level fields, each change's path, and every
 * string and object key inside `context`, `before` and `after`. Length limits apply to
 * what the caller sent, before encoding.
 */
import type { JsonValue } from "@bufbuild/protobuf";

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#x27;",
};
const SIGNIFICANT = /[&<>"']/;
const SIGNIFICANT_ALL = /[&<>"']/g;

/** `text` with HTML-significant characters encoded. */
export function encodeHtml(text: string): string {
  return SIGNIFICANT.test(text)
    ? text.replace(SIGNIFICANT_ALL, (char) => ENTITIES[char] ?? char)
    : text;
}

/** A JSON value with every string and object key encoded. */
export function encodeJson(value: JsonValue): JsonValue {
  if (typeof value === "string") return encodeHtml(value);
  if (Array.isArray(value)) return value.map(encodeJson);
  if (value !== null && typeof value === "object") {
    // No prototype: a `__proto__` key in the data stays an ordinary key.
    const out: Record<string, JsonValue> = Object.create(null);
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) out[encodeHtml(key)] = encodeJson(item);
    }
    return out;
  }
  return value;
}
