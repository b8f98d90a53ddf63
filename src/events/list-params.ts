/**
 * The parameters of List Events, read from the request's JSON form (REST query
 * parameters arrive as strings, RPC fields as their JSON values) and checked once, with
 * a 400 and a message naming the parameter when one is wrong.
 *
 * Rules: filters are exact values and may not be empty (an empty filter is most likely a
 * bug in the caller, and ignoring it would widen the result); `q` and `cursor` sent
 * empty count as not sent; `from` and `to` are ISO 8601 date-times with a zone, both
 * inclusive; `limit` is 1 to 200, 50 by default.
 */
import { words } from "../crypto/blind-index.js";
import { ServiceError } from "../errors.js";
import { isDateTime } from "../ingest/validation.js";
import { longerThan } from "../vocabulary/text-length.js";

/** Page size when none is asked for. */
export const DEFAULT_LIMIT = 50;
/** The largest page. */
export const MAX_LIMIT = 200;
/** The longest `q`. */
export const MAX_QUERY_CHARS = 512;
/** Most words in `q`: each is one more index lookup. */
export const MAX_QUERY_WORDS = 16;

/** The checked parameters. */
export interface ListParams {
  actorId?: string;
  entityType?: string;
  entityId?: string;
  /** Matches actionKey, or the legacy action of an event without one. */
  action?: string;
  tenantId?: string;
  /** The distinct words of `q`, lower-cased; every one must match. Empty: no search. */
  searchWords: string[];
  from?: Date;
  to?: Date;
  limit: number;
  cursor?: string;
}

const FILTERS = ["actorId", "entityType", "entityId", "action", "tenantId"] as const;

const bad = (message: string) => new ServiceError("bad_request", message);

/** Checks the JSON form of a ListEventsRequest. */
export function parseListParams(json: unknown): ListParams {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw bad("Invalid request: expected the parameters of List Events");
  }
  const input = json as Record<string, unknown>;
  const text = (name: string): string | undefined => {
    const value = input[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string") throw bad(`${name} must be a string`);
    return value;
  };

  const params: ListParams = { searchWords: [], limit: DEFAULT_LIMIT };
  for (const name of FILTERS) {
    const value = text(name);
    if (value === undefined) continue;
    if (value.length === 0) throw bad(`${name} must not be empty`);
    params[name] = value;
  }

  const q = text("q");
  if (q !== undefined && q.trim().length > 0) {
    if (longerThan(q, MAX_QUERY_CHARS))
      throw bad(`q must be at most ${MAX_QUERY_CHARS} characters`);
    const found = [...new Set(words(q))];
    if (found.length === 0) throw bad("q must contain at least one letter or digit");
    if (found.length > MAX_QUERY_WORDS) throw bad(`q must have at most ${MAX_QUERY_WORDS} words`);
    params.searchWords = found;
  }

  const from = dateTime("from", text("from"));
  const to = dateTime("to", text("to"));
  if (from) params.from = from;
  if (to) params.to = to;
  if (from && to && from.getTime() > to.getTime()) throw bad("from must not be later than to");

  const limit = input.limit;
  if (limit !== undefined && limit !== null) {
    const value =
      typeof limit === "number"
        ? limit
        : typeof limit === "string" && /^\d{1,6}$/.test(limit)
          ? Number(limit)
          : Number.NaN;
    if (!Number.isInteger(value) || value < 1 || value > MAX_LIMIT) {
      throw bad(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    params.limit = value;
  }

  const cursor = text("cursor");
  if (cursor !== undefined && cursor.length > 0) params.cursor = cursor;
  return params;
}

function dateTime(name: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  if (!isDateTime(value)) {
    throw bad(
      `${name} must be an ISO 8601 date-time with a time zone, like 2024-05-01T00:00:00Z, between years 0001 and 9999 in UTC`,
    );
  }
  // The same conversion as the event's occurredAt at ingestion, so bounds compare alike.
  return new Date(value);
}
