/**
 * How an exported or followed event is written over REST: as the list's JSON record
 * (one NDJSON line, one SSE `data:`) or as a CSV row (docs/export.md).
 *
 * JSON: exactly the object GET /api/events lists for the event (`logIndex` a number,
 * `salt` base64), by the same rendering. CSV (RFC 4180): a header row, CRLF line ends, a field
 * quoted when it holds a comma, a quote, CR or LF (quotes doubled); `context` and
 * `changes` as JSON text; `salt` in hex (base64 may start with `+`, which the formula
 * guard would have to alter); absent fields empty. Spreadsheets run a cell that starts with
 * `=`, `+`, `-`, `@`, a tab or a CR as a formula (CSV injection), so such a cell is
 * written with a leading `'`, which they show as text; `logIndex` (digits only) and the
 * JSON columns (starting with `{` or `[`) never need it.
 *
 * An erased event (docs/lifecycle.md) is written as its tombstone: the JSON object
 * `{"eventId", "logIndex", "receivedAt", "erasedAt"}`, or a CSV row with those four
 * columns filled and the others empty (`erasedAt`, empty for events). An event whose
 * stored content does not decrypt is written as `{"eventId", "logIndex", "receivedAt",
 * "unreadable"}` (why, in words), or a CSV row with those four (`unreadable` is the last
 * column), so that a damaged row is named at its position and the rest still flows.
 */
import { StoredEventSchema } from "../../gen/audit/v1/event_pb.js";
import { storedEventMessage } from "../api/event-operations.js";
import type { ChunkEntry, EventChunk } from "../api/event-stream-operations.js";
import { restJson } from "./rest-rendering.js";

type EventJson = Record<string, unknown>;
type ListedEvent = EventChunk["events"][number];
type Tombstone = EventChunk["erased"][number];
type Unreadable = EventChunk["unreadable"][number];

/** The JSON record of an erased event: its tombstone. */
export function tombstoneJson(erased: Tombstone): EventJson {
  return {
    eventId: erased.eventId,
    logIndex: Number(erased.logIndex),
    receivedAt: erased.receivedAt.toISOString(),
    erasedAt: erased.erasedAt.toISOString(),
  };
}

/** The JSON record of an event whose stored content does not decrypt. */
export function unreadableJson(unreadable: Unreadable): EventJson {
  return {
    eventId: unreadable.eventId,
    logIndex: Number(unreadable.logIndex),
    receivedAt: unreadable.receivedAt.toISOString(),
    unreadable: unreadable.reason,
  };
}

/** The JSON record of a chunk's entry, whichever its kind. */
export function entryJson(entry: ChunkEntry): EventJson {
  if ("event" in entry) return eventJson(entry.event);
  return "erased" in entry ? tombstoneJson(entry.erased) : unreadableJson(entry.unreadable);
}

/**
 * The JSON record of an event, as the list renders it: the same REST JSON (empty strings
 * written, `logIndex` a number), which is also what the event's leaf commits to, so that
 * `audit verify` checks an export as it is.
 */
export function eventJson(event: ListedEvent): EventJson {
  return restJson(StoredEventSchema, storedEventMessage(event)) as EventJson;
}

/** The CSV columns, in order: the record's fields. */
export const CSV_COLUMNS = [
  "logIndex",
  "eventId",
  "occurredAt",
  "receivedAt",
  "actionKey",
  "action",
  "actionDescription",
  "entityType",
  "entityId",
  "actorType",
  "actorId",
  "actorDisplay",
  "tenantId",
  "source",
  "context",
  "changes",
  "salt",
  "erasedAt",
  "unreadable",
] as const;

/** The CSV header row. */
export const CSV_HEADER = `${CSV_COLUMNS.join(",")}\r\n`;

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV field: guarded against formulas, quoted when RFC 4180 requires it. */
export function csvField(value: string): string {
  const guarded = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

/** The CSV row of an event's JSON record, with its CRLF. */
export function csvRow(json: EventJson): string {
  const fields = CSV_COLUMNS.map((column) => {
    const value = json[column];
    if (value === undefined || value === null) return "";
    if (column === "changes" && Array.isArray(value) && value.length === 0) return "";
    if (column === "salt" && typeof value === "string") {
      return Buffer.from(value, "base64").toString("hex");
    }
    return csvField(typeof value === "string" ? value : JSON.stringify(value));
  });
  return `${fields.join(",")}\r\n`;
}
