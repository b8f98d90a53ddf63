/**
 * How stored values become text on screen.
 *
 * The service stores every string HTML-encoded (`&` `<` `>` `"` `'` as `&amp;` `&lt;`
 * `&gt;` `&quot;` `&#x27;`, spec 4.1). The viewer decodes exactly those five entities,
 * in one pass, so a user reads what the caller sent (`Carol <Admin>`, not `Carol
 * &lt;Admin&gt;`) and can type it back into a filter, which matches the raw values too.
 * This is safe because decoded text is only ever rendered as a text node (lit text
 * bindings); nothing here produces markup.
 */

const ENTITIES: Readonly<Record<string, string>> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#x27;": "'",
};

/** The text a caller sent, from its stored (HTML-encoded) form. */
export function decodeEntities(text: string): string {
  // One pass: `&amp;lt;` (a caller who sent `&lt;`) becomes `&lt;`, not `<`.
  return text.replace(/&(?:amp|lt|gt|quot|#x27);/g, (entity) => ENTITIES[entity] ?? entity);
}

/** A stored JSON value with every string and object key decoded. */
export function decodeJson(value: unknown): unknown {
  if (typeof value === "string") return decodeEntities(value);
  if (Array.isArray(value)) return value.map(decodeJson);
  if (typeof value === "object" && value !== null) {
    // fromEntries defines own properties: a key `__proto__` stays a plain key.
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [decodeEntities(key), decodeJson(item)]),
    );
  }
  return value;
}

/** A JSON value as indented text. */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? "null";
}

/** An ISO date-time as `YYYY-MM-DD HH:MM:SS` in the browser's time zone. */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const two = (n: number) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`
  );
}

/**
 * The ISO date-time of a `datetime-local` input value (the browser's time zone), or
 * undefined when empty or not a date. `end` makes the bound cover the whole minute (or
 * second) shown, since the service's `to` is inclusive to the millisecond.
 */
export function localInputToIso(value: string, end: boolean): string | undefined {
  if (value.length === 0) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return undefined;
  if (end) {
    const withSeconds = /T\d{2}:\d{2}:\d{2}/.test(value);
    date.setTime(date.getTime() + (withSeconds ? 999 : 59_999));
  }
  return date.toISOString();
}
