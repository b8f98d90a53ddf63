/**
 * The parameters of Export Events and Follow Events, read from the request's JSON form
 * (REST query parameters arrive as strings, RPC fields as their JSON values: a uint64 as
 * a string) and checked once, with a 400 naming the parameter when one is wrong.
 *
 * Both take the list's filters, search and occurredAt range (list-params.ts, the same
 * rules and messages) and a log-index range: `fromIndex` (inclusive, 0 by default) and,
 * for an export, `toIndex` (inclusive). Paging parameters of the list (`limit`,
 * `cursor`) have no meaning here and are refused rather than silently ignored.
 */
import { ServiceError } from "../errors.js";
import { type ListParams, parseListParams } from "./list-params.js";

/** The largest log index a stored event may have (PostgreSQL's int8). */
export const MAX_LOG_INDEX = 2n ** 63n - 2n;

/** The largest fromIndex or toIndex a request may give: the RPC fields' uint64. */
const MAX_REQUEST_INDEX = 2n ** 64n - 1n;

/** The filters of a log stream: the list's, without paging. */
export type LogStreamFilters = Omit<ListParams, "limit" | "cursor">;

/** Checked parameters of an export. */
export interface ExportParams extends LogStreamFilters {
  fromIndex: bigint;
  /** Last log index exported (inclusive); unset: up to the log's end when it began. */
  toIndex?: bigint;
}

/** Checked parameters of a follow stream. */
export interface FollowParams extends LogStreamFilters {
  fromIndex: bigint;
}

const bad = (message: string) => new ServiceError("bad_request", message);

/** Checks the JSON form of an ExportEventsRequest. */
export function parseExportParams(json: unknown): ExportParams {
  const input = record(json, "Export Events");
  const params: ExportParams = { ...filters(input), fromIndex: logIndex(input, "fromIndex") ?? 0n };
  const toIndex = logIndex(input, "toIndex");
  if (toIndex !== undefined) {
    if (params.fromIndex > toIndex) throw bad("fromIndex must not be greater than toIndex");
    params.toIndex = toIndex;
  }
  return params;
}

/** Checks the JSON form of a FollowEventsRequest. */
export function parseFollowParams(json: unknown): FollowParams {
  const input = record(json, "Follow Events");
  // An export's parameters, refused rather than ignored: a follow has no end and one form.
  refuseGiven(
    input,
    ["toIndex", "format"],
    (name) => `${name} is a parameter of an export, not of a follow stream`,
  );
  return { ...filters(input), fromIndex: logIndex(input, "fromIndex") ?? 0n };
}

/**
 * The log index a `Last-Event-ID` names (an SSE client sends the `id:` of the last event
 * it received); a 400 for anything else.
 */
export function parseLastEventId(value: string): bigint {
  if (!/^\d{1,19}$/.test(value) || BigInt(value) > MAX_LOG_INDEX) {
    throw bad("Last-Event-ID must be the logIndex of an event (a non-negative integer)");
  }
  return BigInt(value);
}

function record(json: unknown, what: string): Record<string, unknown> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw bad(`Invalid request: expected the parameters of ${what}`);
  }
  return json as Record<string, unknown>;
}

function filters(input: Record<string, unknown>): LogStreamFilters {
  refuseGiven(
    input,
    ["limit", "cursor"],
    (name) => `${name} is not a parameter of a log stream: use fromIndex to resume`,
  );
  const { limit: _limit, cursor: _cursor, ...list } = parseListParams(input);
  return list;
}

/** Throws the 400 `message(name)` for the first of `names` the request gives. */
function refuseGiven(
  input: Record<string, unknown>,
  names: readonly string[],
  message: (name: string) => string,
): void {
  const given = names.find((name) => input[name] !== undefined && input[name] !== null);
  if (given !== undefined) throw bad(message(given));
}

function logIndex(input: Record<string, unknown>, name: string): bigint | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  const text = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== "string" || !/^\d+$/.test(text)) {
    throw bad(`${name} must be a log index (a non-negative integer)`);
  }
  // Any index the RPC's uint64 fields can carry: one past the log's end is judged (and
  // a toIndex cut to the end) against the log's size, never sent to the database.
  if (text.length > 20 || BigInt(text) > MAX_REQUEST_INDEX) {
    throw bad(`${name} must be at most ${MAX_REQUEST_INDEX}`);
  }
  return BigInt(text);
}
