/**
 * List Events, the same for every protocol: who may read (an API key, or a frontend
 * token narrowed to a tenant or not), which events match, and one keyset page of them.
 *
 * Invariants: a reader sees only its own project and environment, and a
 * tenant-restricted token only its tenant, whatever the parameters say. Filters and
 * search are blind indexes (reader-query.ts) computed from the raw parameter values (as ingestion
 * computed them from the raw values it was sent) and matched by the database; only the
 * events of the page are decrypted. Events come newest `occurredAt` first, ties by
 * `eventId` descending, and a page's cursor resumes exactly after its last event. Every
 * event acknowledged before the request began is listed (read-your-writes: the list
 * waits, bounded, for the integrator, log/read-your-writes.ts).
 */
import type { Authenticator } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import type { Keyring, ProjectKeys } from "../crypto/keyring.js";
import type { ReadYourWrites } from "../log/read-your-writes.js";
import type { EventPageQuery, EventReader, StoredEventPage } from "../store/event-reads.js";
import type { CursorCodec } from "./cursor.js";
import { parseListParams } from "./list-params.js";
import {
  blindFilters,
  type ListedEvent,
  openListedEvent,
  openMatchingEvent,
  type SearchCheck,
  searchCheck,
} from "./reader-query.js";

/**
 * Most bytes of stored ciphertext (the events' JSON, encrypted) in one page: an event that
 * would take the page past it starts the next page, so a page of large events holds fewer
 * than `limit` of them and its cursor leads on to the rest. A page holds one event at
 * least, however large (a 1 MB body can store several MB once HTML-encoded). 2 MiB keeps
 * pages of events up to about 10 KB whole, and REST bodies and most gRPC replies under
 * the 4 MiB that gRPC clients (grpc-js, grpc-go) accept by default; the protobuf form of
 * `context` and `changes` is larger than their JSON where they hold many numbers.
 */
export const PAGE_MAX_BYTES = 2 * 1024 * 1024;

/** A List Events request, as any transport hands it over. */
export interface ListRequest {
  credential: Credential;
  /** The request's JSON form (query parameters or RPC fields); checked here. */
  params: () => unknown;
}

/** One event of a page: every field that was created, as stored, decrypted. */
export type { ListedEvent } from "./reader-query.js";

/** One page of events. */
export interface EventPage {
  events: ListedEvent[];
  /** Resumes after the last event; undefined on the last page. */
  nextCursor: string | undefined;
}

/** Dependencies of the list service. */
export interface ListDeps {
  authenticator: Authenticator;
  keyring: Keyring;
  reader: EventReader;
  cursors: CursorCodec;
  /** Waits for the integrator to list what was acknowledged before the request. */
  readYourWrites: ReadYourWrites;
}

/** The List Events operation. */
export interface ListService {
  listEvents(request: ListRequest): Promise<EventPage>;
}

/** Creates the list service. */
export function createListService(deps: ListDeps): ListService {
  return {
    async listEvents(request) {
      const principal = await deps.authenticator.requireReader(request.credential);
      const params = parseListParams(request.params());
      const scope = { projectId: principal.projectId, environment: principal.environment };
      const after =
        params.cursor === undefined ? undefined : deps.cursors.decode(scope, params.cursor);

      const keys = await deps.keyring.forProject(principal.projectId);
      const filters = blindFilters(keys, principal, params);
      if (!filters) return { events: [], nextCursor: undefined };
      const query: EventPageQuery = { ...filters, limit: params.limit, maxBytes: PAGE_MAX_BYTES };
      if (after) query.after = after;
      await deps.readYourWrites.awaitIntegrated(scope.projectId, scope.environment);
      const check = searchCheck(params);
      let page: StoredEventPage;
      let events: ListedEvent[];
      if (check) {
        ({ page, events } = await checkedPage(deps.reader, keys, scope, query, check));
      } else {
        page = await deps.reader.page(query);
        events = await Promise.all(page.rows.map((row) => openListedEvent(keys, scope, row)));
      }
      const last = page.rows.at(-1);
      const nextCursor =
        page.more && last
          ? deps.cursors.encode(scope, {
              occurredMicros: last.occurredMicros,
              eventId: last.eventId,
            })
          : undefined;
      return { events, nextCursor };
    },
  };
}

/**
 * The page a search gives when some of its words are checked after decryption: the
 * database's matches are read in pages and those the check refuses dropped, until the
 * page holds `limit` events or its bytes, and one more match tells that another page
 * follows. The page, its bytes and its `more` are those the database would give if it
 * matched the words exactly (event-reads.ts): an event counts towards the bytes only when
 * it is listed, and the cursor is the last listed event's.
 */
async function checkedPage(
  reader: EventReader,
  keys: ProjectKeys,
  scope: { projectId: string; environment: string },
  query: EventPageQuery,
  check: SearchCheck,
): Promise<{ page: StoredEventPage; events: ListedEvent[] }> {
  const rows: StoredEventPage["rows"] = [];
  const events: ListedEvent[] = [];
  let bytes = 0;
  let after = query.after;
  for (;;) {
    const read = await reader.page(after ? { ...query, after } : query);
    for (const row of read.rows) {
      after = { occurredMicros: row.occurredMicros, eventId: row.eventId };
      const event = await openMatchingEvent(keys, scope, row, check);
      if (!event) continue;
      const size = row.payload.byteLength + (row.context?.byteLength ?? 0);
      if (rows.length === query.limit || (rows.length > 0 && bytes + size > query.maxBytes)) {
        return { page: { rows, more: true }, events };
      }
      rows.push(row);
      events.push(event);
      bytes += size;
    }
    // A page read ends early only at a row past its bytes, read first by the next one.
    if (!read.more) return { page: { rows, more: false }, events };
  }
}
