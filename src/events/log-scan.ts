/**
 * What exports and follow streams share: a reader's filters as blind indexes
 * (reader-query.ts, as the list computes them), and pages of a log read in log-index order
 * and decrypted.
 *
 * A search word whose token is not exact is checked on each decrypted event
 * (reader-query.ts `searchCheck`): a page may then hold fewer events than it read.
 *
 * Invariants: a reader reads only its own project and environment; a tenant-restricted
 * token only its tenant, whatever the parameters say (asking for another tenant matches
 * nothing). Only the events of a page are decrypted, one page at a time.
 */
import type { ReaderPrincipal } from "../auth/authenticator.js";
import { UnreadableEventError } from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import type { LogReader, StoredTombstone } from "../store/log-reads.js";
import type { LogStreamFilters } from "./log-stream-params.js";
import { blindFilters, type ListedEvent, openMatchingEvent, searchCheck } from "./reader-query.js";

/**
 * Most bytes of stored ciphertext in one page read: as the list's pages (2 MiB), so
 * that memory stays bounded however large the events are.
 */
export const SCAN_MAX_BYTES = 2 * 1024 * 1024;

/** Most events in one page read: large enough for throughput, small enough for memory. */
export const SCAN_MAX_EVENTS = 1_000;

/** What remains of an erased event: its id, position, receivedAt and erasedAt. */
export type ErasedEvent = StoredTombstone;

/**
 * An event whose stored content does not decrypt (altered or damaged in storage): named
 * at its position, so that one damaged row neither ends a stream nor hides the others.
 */
export interface UnreadableEvent {
  eventId: string;
  logIndex: bigint;
  receivedAt: Date;
  reason: string;
}

/** Decrypted events of one page and where the next page starts. */
export interface ScannedPage {
  events: ListedEvent[];
  /** Erased events of the page's range (reads without filters only), by log index. */
  erased: ErasedEvent[];
  /** Events of the page that matched but do not decrypt, by log index. */
  unreadable: UnreadableEvent[];
  nextIndex: bigint;
}

/** Whether a page holds anything to hand over: an event, a tombstone or an unreadable event. */
export function holdsEntries(page: ScannedPage): boolean {
  return page.events.length > 0 || page.erased.length > 0 || page.unreadable.length > 0;
}

/** Reads one log's matching events, page by page. */
export interface LogScan {
  readonly projectId: string;
  readonly environment: string;
  /** The log's integrated size now. */
  size(): Promise<bigint>;
  /** The matching events of [fromIndex, endIndex), one page of them. */
  page(fromIndex: bigint, endIndex: bigint, limit?: number): Promise<ScannedPage>;
}

/** Dependencies of a scan. */
export interface LogScanDeps {
  keyring: Keyring;
  reader: LogReader;
}

/**
 * The scan of a reader's log with its filters; undefined when nothing can match (a
 * tenant-restricted token asking for another tenant).
 */
export async function createLogScan(
  deps: LogScanDeps,
  principal: ReaderPrincipal,
  params: LogStreamFilters,
): Promise<LogScan | undefined> {
  const scope = { projectId: principal.projectId, environment: principal.environment };
  const keys = await deps.keyring.forProject(principal.projectId);
  const filters = blindFilters(keys, principal, params);
  if (!filters) return undefined;
  const check = searchCheck(params);

  return {
    ...scope,
    size: () => deps.reader.size(scope.projectId, scope.environment),
    async page(fromIndex, endIndex, limit = SCAN_MAX_EVENTS) {
      const page = await deps.reader.page({
        ...filters,
        fromIndex,
        endIndex,
        limit,
        maxBytes: SCAN_MAX_BYTES,
      });
      const events: ListedEvent[] = [];
      const unreadable: UnreadableEvent[] = [];
      // One at a time: a page of up to SCAN_MAX_EVENTS is decrypted in order, not all at once.
      // Events a search's check refuses are dropped; the next page starts past them all the same.
      for (const row of page.rows) {
        try {
          const event = await openMatchingEvent(keys, principal, row, check);
          if (event) events.push(event);
        } catch (error) {
          if (!(error instanceof UnreadableEventError)) throw error;
          const { eventId, logIndex, receivedAt } = row;
          unreadable.push({ eventId, logIndex, receivedAt, reason: error.message });
        }
      }
      return { events, erased: page.tombstones, unreadable, nextIndex: page.nextIndex };
    },
  };
}
