/**
 * The response headers that carry an export's range of log positions (end exclusive), so
 * that a client can tell where a complete export ends and resume a cut one: sent by REST's
 * export (rest-streams.ts) and ExportEvents (connect-stream-routes.ts), and exposed to
 * cross-origin pages (cors.ts, edge.ts).
 */

/** The names of the range headers, first index then end index. */
export const EXPORT_RANGE_HEADERS = ["x-export-from-index", "x-export-end-index"] as const;

/** The range headers of an opened stream; none for a follow stream, which has no end. */
export function exportRangeHeaders(range: {
  fromIndex: bigint;
  endIndex?: bigint;
}): Record<string, string> {
  if (range.endIndex === undefined) return {};
  const [from, end] = EXPORT_RANGE_HEADERS;
  return { [from]: String(range.fromIndex), [end]: String(range.endIndex) };
}
