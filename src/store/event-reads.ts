/**
 * Reading pages of a project's events. Every filter runs in the database on blind
 * indexes (keyed values, crypto/blind-index.ts), never on plaintext, and the page is a keyset page in the one
 * order of the timeline index: `occurred_at desc, id desc`. Only the rows of the page
 * are returned (with their context), so only they are ever decrypted.
 *
 * Pages are read from `event_index`, what the integrator derived (docs/write-path.md),
 * joined to the journal for each event's ciphertext by the journal's key: events not yet
 * integrated are not seen here (the caller first waits for the integrator to pass what
 * the journal held when its request began, log/read-your-writes.ts), and the journal is
 * never scanned.
 *
 * A page is bounded twice: by its number of events and by the bytes of their ciphertext.
 * Events may be up to 1 MB as sent and several times that once their strings are
 * HTML-encoded (`'` becomes `&#x27;`), so 200 of them would make a response of hundreds
 * of megabytes, more than a process can serialize (and its building would stall every
 * other request).
 */
import type { Db } from "./db.js";

/** A position in the timeline: a page starts strictly after it. */
export interface TimelinePosition {
  /** occurred_at in microseconds since the Unix epoch (the database's precision). */
  occurredMicros: bigint;
  eventId: string;
}

/** One page request. Blind indexes are compared for equality; all given must match. */
export interface EventPageQuery {
  projectId: string;
  environment: string;
  actorIdx?: Buffer;
  entityTypeIdx?: Buffer;
  entityIdIdx?: Buffer;
  actionIdx?: Buffer;
  tenantIdx?: Buffer;
  /** Search token ids: an event matches when it has every one. */
  searchTokens?: bigint[];
  /** occurred_at lower bound, inclusive. */
  from?: Date;
  /** occurred_at upper bound, inclusive. */
  to?: Date;
  after?: TimelinePosition;
  /** Most events in the page. */
  limit: number;
  /**
   * Most bytes of ciphertext (payload and context) in the page: an event that would take
   * the page past it is left for the next page, unless it is the page's first.
   */
  maxBytes: number;
}

/** One page and whether more events match after it. */
export interface StoredEventPage {
  rows: StoredEventRow[];
  more: boolean;
}

/** One event as stored: ids, timestamps, ciphertext. */
export interface StoredEventRow {
  eventId: string;
  occurredAt: Date;
  occurredMicros: bigint;
  receivedAt: Date;
  /** The event's position in its log, from 0. */
  logIndex: bigint;
  keyVersion: number;
  payload: Uint8Array;
  context: Uint8Array | null;
}

/** Reads events. */
export interface EventReader {
  /**
   * Up to `limit` events within `maxBytes`, newest `occurred_at` first, ties by id
   * descending.
   */
  page(query: EventPageQuery): Promise<StoredEventPage>;
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

/** What a read filters on: a log, blind indexes, search tokens, occurredAt bounds. */
export type EventFilters = Omit<EventPageQuery, "after" | "limit" | "maxBytes">;

/**
 * Appends the conditions on event_index of `filters` (other than the log's, which the
 * caller places first) to `where`, and their values to `params`: one definition for every
 * read (the list's keyset pages, log-reads.ts's log-index ranges).
 */
export function addFilterConditions(filters: EventFilters, params: unknown[], where: string[]) {
  const add = (condition: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(condition(`$${params.length}`));
  };
  if (filters.actorIdx) add((n) => `actor_idx = ${n}`, filters.actorIdx);
  if (filters.entityTypeIdx) add((n) => `entity_type_idx = ${n}`, filters.entityTypeIdx);
  if (filters.entityIdIdx) add((n) => `entity_id_idx = ${n}`, filters.entityIdIdx);
  if (filters.actionIdx) {
    add((n) => `(action_idx = ${n} or legacy_action_idx = ${n})`, filters.actionIdx);
  }
  if (filters.tenantIdx) add((n) => `tenant_idx = ${n}`, filters.tenantIdx);
  if (filters.searchTokens && filters.searchTokens.length > 0) {
    // As decimal strings: both drivers pass them through to int8[] unchanged.
    add((n) => `search_tokens @> ${n}::int8[]`, filters.searchTokens.map(String));
  }
  if (filters.from) add((n) => `occurred_at >= ${n}`, filters.from);
  if (filters.to) add((n) => `occurred_at <= ${n}`, filters.to);
}

/**
 * The stored row and context of each index row `i` of a page (`$1`, `$2`: its project and
 * environment), probed by primary key one index row at a time: LATERAL, and `limit 1` so
 * that the planner cannot flatten it into an ordinary join. As a plain join, a planner
 * without statistics (PGlite runs no autovacuum, so its tables are never analyzed; a
 * PostgreSQL table right after a bulk load) scanned every event of the log once per index
 * row: 8 s for a page of 500 in a log of 66,000 events (outside audit, 2026-11-29).
 * Each probe names the row's partition (migration 12), so one partition is read, not all.
 */
export const EVENT_ROW_JOINS = `cross join lateral (
      select e.received_at, e.key_version, e.payload from events e
       where e.project_id = $1 and e.environment = $2 and e.xid = i.xid and e.id = i.id
         and e.retention_days = i.retention_days and e.received_at = i.received_at
       limit 1) e
    left join lateral (
      select c.ciphertext from event_contexts c
       where c.project_id = $1 and c.environment = $2 and c.event_id = i.id
         and c.retention_days = i.retention_days and c.received_at = i.received_at
       limit 1) c on true`;

/** Creates the reader. */
export function createEventReader(db: Db): EventReader {
  return {
    async page(query) {
      const params: unknown[] = [query.projectId, query.environment];
      const where = ["project_id = $1", "environment = $2"];
      addFilterConditions(query, params, where);
      if (query.after) {
        params.push(microsToTimestamp(query.after.occurredMicros), query.after.eventId);
        const [at, id] = [`$${params.length - 1}`, `$${params.length}`];
        // A row comparison is an index condition on (occurred_at desc, id desc).
        where.push(`(occurred_at, id) < (${at}::timestamptz, ${id}::uuid)`);
      }
      // One row more than the page tells whether another page follows.
      params.push(query.limit + 1, query.maxBytes);
      const [limit, maxBytes] = [`$${params.length - 1}`, `$${params.length}`];
      // A row fits when the page up to it holds at most maxBytes; the first row always
      // does, whatever its size. octet_length reads a stored value's size without
      // decompressing or fetching it, and rows that do not fit come back without their
      // ciphertext.
      const rows = await db.query<Row>(
        `select id, occurred_us, log_index, received_at, key_version,
                case when fits then payload end as payload,
                case when fits then context end as context
           from (select s.*,
                        row_number() over w = 1 or sum(size) over w <= ${maxBytes}::int8
                          as fits
                   from (select i.id, i.occurred_at, i.occurred_us, i.log_index,
                                e.received_at, e.key_version, e.payload,
                                c.ciphertext as context,
                                octet_length(e.payload)::int8
                                  + coalesce(octet_length(c.ciphertext), 0) as size
                           from (select id, xid, occurred_at, log_index::text as log_index,
                                        received_at, retention_days,
                                        (extract(epoch from occurred_at) * 1000000)::int8::text
                                          as occurred_us
                                   from event_index
                                  where ${where.join(" and ")}
                                  order by occurred_at desc, id desc
                                  limit ${limit}) i
                           ${EVENT_ROW_JOINS}) s
                 window w as (order by occurred_at desc, id desc)) p
          order by occurred_at desc, id desc`,
        params,
      );
      const page: StoredEventRow[] = [];
      for (const row of rows.slice(0, query.limit)) {
        if (row.payload === null) break;
        page.push({
          eventId: row.id,
          // From the epoch figure, not the driver's reading of the timestamp's text, which
          // V8 parses loosely: `0049-06-15 12:00:00+00` would come back as 2049.
          occurredAt: new Date(Number(floorMillis(BigInt(row.occurred_us)).millis)),
          occurredMicros: BigInt(row.occurred_us),
          receivedAt: row.received_at,
          logIndex: BigInt(row.log_index),
          keyVersion: row.key_version,
          payload: row.payload,
          context: row.context,
        });
      }
      return { rows: page, more: rows.length > page.length };
    },
  };
}

/** Whole milliseconds of `micros` (rounded down, before the epoch too) and the rest. */
function floorMillis(micros: bigint): { millis: bigint; rest: bigint } {
  const rest = ((micros % 1000n) + 1000n) % 1000n;
  return { millis: (micros - rest) / 1000n, rest };
}

/** Microseconds since the epoch as a timestamptz literal, exactly (no float rounding). */

function microsToTimestamp(micros: bigint): string {
  const { millis, rest } = floorMillis(micros);
  const iso = new Date(Number(millis)).toISOString();
  return `${iso.slice(0, -1)}${rest.toString().padStart(3, "0")}Z`;
}
