/**
 * Array parameters as PostgreSQL array literals, for both drivers: postgres.js runs
 * without fetching array types (postgres-driver.ts), and PGlite's own serialisation of
 * arrays of Buffers, byte by byte in JavaScript, took most of the time of writing a
 * large event. The statement's cast (`$1::bytea[]`) reads the literal with the right
 * element type.
 */

/** A statement's parameters with each array written as its literal (`arrayLiteral`). */
export function withArrayLiterals(params: readonly unknown[]): unknown[] {
  return params.map((value) => (Array.isArray(value) ? arrayLiteral(value) : value));
}

/**
 * An array parameter as a PostgreSQL array literal, which the statement's cast
 * (`$1::bytea[]`) reads with the right element type: Buffers as bytea hex, Dates as ISO
 * timestamps, other scalars as text; null elements as NULL.
 */
export function arrayLiteral(values: readonly unknown[]): string {
  // Most elements (ids, numbers, timestamps) hold neither character: no regex for them.
  const quoted = (text: string) =>
    text.includes('"') || text.includes("\\") ? `"${text.replace(/[\\"]/g, "\\$&")}"` : `"${text}"`;
  const elements = values.map((value) => {
    if (value === null || value === undefined) return "NULL";
    // Hex needs no escaping; the backslash of \x is doubled inside the literal.
    if (value instanceof Uint8Array) {
      return `"\\\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}"`;
    }
    if (value instanceof Date) return quoted(value.toISOString());
    // Nested arrays and objects have no literal here: fail loudly rather than send
    // `1,2` or `[object Object]`.
    if (typeof value === "object") {
      throw new TypeError("array parameters hold scalars, Dates and Uint8Arrays only");
    }
    return quoted(String(value));
  });
  return `{${elements.join(",")}}`;
}
