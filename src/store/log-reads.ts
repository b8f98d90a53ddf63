/**
 * Reading a log in log-index order, for exports and follow streams (docs/export.md).
 * A keyset read over `event_index`'s primary key (project_id, environment, log_index):
 * each page starts at a log index and runs up to an exclusive end, so a reader holds no
 * cursor or transaction between pages (a client that goes away leaves nothing open),
 * and memory is one page whatever the export's size.
 *
 * Only what the integrator has derived is read: `event_logs.size` is the count of
 * integrated events, and every index row below it is committed with it (one pass
 * writes both), so a page bounded by a size read before it is complete: no event below
 * the bound can appear later. Filters are the list's blind indexes (store/event-reads.ts).
 *
 * Erased events (docs/lifecycle.md) have no index row; a read without filters also reads
 * the range's tombstones, so that every position below the size is accounted for.
 */
import type { Queryable } from "./db.js";
import {
  addFilterConditions,
  EVENT_ROW_JOINS,
  type EventFilters,
  type StoredEventRow,
} from "./event-reads.js";

/** The filters of the list, without its paging. */
export type LogFilters = EventFilters;

/** One page request in log-index order. */
export interface LogPageQuery extends LogFilters {
  /** First log index read (inclusive). */
  fromIndex: bigint;
  /** End of the range (exclusive): at most the log's size. */
  endIndex: bigint;
  /** Most events in the page. */
  limit: number;
  /**
   * Most bytes of ciphertext in the page: an event that would take the page past it is
   * left for the next page, unless it is the page's first.
   */
  maxBytes: number;
}

/** What remains of an erased event at its position (docs/lifecycle.md). */
export interface StoredTombstone {
  eventId: string;
  logIndex: bigint;
  receivedAt: Date;
  erasedAt: Date;
}

/** One page: its rows, and where the next page starts. */
export interface LogPage {
  rows: StoredEventRow[];
  /**
   * The tombstones of the page's range (read without filters only: no filter or search
   * matches an erased event), in log-index order.
   */
  tombstones: StoredTombstone[];
  /**
   * The log index the next page starts at: past the last row, or `endIndex` when the
   * range is read to its end (filtered-out events need not be read again).
   */
  nextIndex: bigint;
}

/** Reads logs in log-index order. */
export interface LogReader {
  /** Events integrated so far in the log: its next log index (0 for an unknown log). */
  size(projectId: string, environment: string): Promise<bigint>;
  /** Up to `limit` events of [fromIndex, endIndex) that match, by log index. */
  page(query: LogPageQuery): Promise<LogPage>;
}

interface Row {
  id: string;
  occurred_us: string;
  log_index: string;
  received_at: Date;
  key_version: number;
  /** Null for a row that matched but does not fit in the page's bytes. */
  payload: Uint8Array | null;
  context: Uint8Array | null;
}

/** Creates the reader. */
export function createLogReader(db: Queryable): LogReader {
  return {
    async size(projectId, environment) {
      const [row] = await db.query<{ size: string }>(
        "select size::text as size from event_logs where project_id = $1 and environment = $2",
        [projectId, environment],
      );
      return row ? BigInt(row.size) : 0n;
    },

    async page(query) {
      if (query.fromIndex >= query.endIndex) {
        return { rows: [], tombstones: [], nextIndex: query.endIndex };
      }
      const params: unknown[] = [
        query.projectId,
        query.environment,
        String(query.fromIndex),
        String(query.endIndex),
      ];
      const where = [
        "project_id = $1",
        "environment = $2",
        "log_index >= $3::int8",
        "log_index < $4::int8",
      ];
      addFilterConditions(query, params, where);
      const unfiltered = where.length === 4;
      params.push(query.limit, query.maxBytes);
      const [limit, maxBytes] = [`$${params.length - 1}`, `$${params.length}`];
      // As in event-reads.ts: a row fits when the page up to it holds at most maxBytes
      // (the first always does); rows that do not fit come back without ciphertext.
      const rows = await db.query<Row>(
        `select id, occurred_us, log_index, received_at, key_version,
                case when fits then payload end as payload,
                case when fits then context end as context
           from (select s.*,
                        row_number() over w = 1 or sum(size) over w <= ${maxBytes}::int8
                          as fits
                   from (select i.id, i.log_index, i.occurred_us,
                                e.received_at, e.key_version, e.payload,
                                c.ciphertext as context,
                                octet_length(e.payload)::int8
                                  + coalesce(octet_length(c.ciphertext), 0) as size
                           from (select id, xid, log_index, received_at, retention_days,
                                        (extract(epoch from occurred_at) * 1000000)::int8::text
                                          as occurred_us
                                   from event_index
                                  where ${where.join(" and ")}
                                  order by log_index
                                  limit ${limit}::int) i
                           ${EVENT_ROW_JOINS}) s
                 window w as (order by log_index)) p
          order by log_index`,
        params,
      );
      const page: StoredEventRow[] = [];
      for (const row of rows) {
        if (row.payload === null) break;
        const micros = BigInt(row.occurred_us);
        page.push({
          eventId: row.id,
          occurredAt: new Date(Number(floorDiv(micros, 1000n))),
          occurredMicros: micros,
          receivedAt: row.received_at,
          logIndex: BigInt(row.log_index),
          keyVersion: row.key_version,
          payload: row.payload,
          context: row.context,
        });
      }
      const last = page.at(-1);
      // A short page (fewer rows matched than asked, none left out for bytes) read the
      // range to its end.
      const whole = rows.length < query.limit && page.length === rows.length;
      let nextIndex = whole || !last ? query.endIndex : last.logIndex + 1n;
      if (!unfiltered) return { rows: page, tombstones: [], nextIndex };
      const tombstones = await readTombstones(db, query, nextIndex);
      const lastTombstone = tombstones.at(-1);
      if (tombstones.length === query.limit && lastTombstone) {
        // As many tombstones as a page holds: the page ends at the last of them.
        nextIndex = lastTombstone.logIndex + 1n;
        return { rows: page.filter((row) => row.logIndex < nextIndex), tombstones, nextIndex };
      }
      return { rows: page, tombstones, nextIndex };
    },
  };
}

/** Up to `query.limit` tombstones of [fromIndex, endIndex), by log index. */
async function readTombstones(
  db: Queryable,
  query: LogPageQuery,
  endIndex: bigint,
): Promise<StoredTombstone[]> {
  if (query.fromIndex >= endIndex) return [];
  const rows = await db.query<{
    id: string;
    log_index: string;
    received_at: Date;
    erased_at: Date;
  }>(
    `select id, log_index::text as log_index, received_at, erased_at from event_tombstones
      where project_id = $1 and environment = $2 and log_index >= $3::int8 and log_index < $4::int8
      -- The column, not the text alias of the same name (text orders "108" before "2").
      order by event_tombstones.log_index limit $5::int`,
    [query.projectId, query.environment, String(query.fromIndex), String(endIndex), query.limit],
  );
  return rows.map((row) => ({
    eventId: row.id,
    logIndex: BigInt(row.log_index),
    receivedAt: row.received_at,
    erasedAt: row.erased_at,
  }));
}

/** a / b rounded towards minus infinity (timestamps before the epoch). */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}
