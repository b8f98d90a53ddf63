/**
 * What exports and follow streams share: a reader's scope and filters turned into blind
 * indexes (as list-service.ts computes them, from the raw values), and pages of a log
 * read in log-index order and decrypted.
 *
 * Invariants: a reader reads only its own project and environment; a tenant-restricted
 * token only its tenant, whatever the parameters say (asking for another tenant matches
 * nothing). Only the events of a page are decrypted, one page at a time.
 */
import type { ReaderPrincipal } from "../auth/authenticator.js";
import { queryToken } from "../crypto/blind-index.js";
import { filterIndex, openEvent, searchTokenId } from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import type { LogFilters, LogReader } from "../store/log-reads.js";
import type { ListedEvent } from "./list-service.js";
import type { LogStreamFilters } from "./log-stream-params.js";

/**
 * Most bytes of stored ciphertext in one page read: as the list's pages (2 MiB), so
 * that memory stays bounded however large the events are.
 */
export const SCAN_MAX_BYTES = 2 * 1024 * 1024;

/** Most events in one page read: large enough for throughput, small enough for memory. */
export const SCAN_MAX_EVENTS = 1_000;

/** Decrypted events of one page and where the next page starts. */
export interface ScannedPage {
  events: ListedEvent[];
  nextIndex: bigint;
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
  const restricted = principal.tenantId;
  if (restricted !== undefined && params.tenantId !== undefined && params.tenantId !== restricted) {
    return undefined;
  }
  const tenantId = restricted ?? params.tenantId;
  const keys = await deps.keyring.forProject(principal.projectId);
  const filters: LogFilters = {
    ...scope,
    searchTokens: params.searchWords.map((word) => searchTokenId(keys, queryToken(word))),
  };
  // Labels as ingestion computed them (event-cipher.ts sealEvent).
  if (params.actorId !== undefined) filters.actorIdx = filterIndex(keys, "actorId", params.actorId);
  if (params.entityType !== undefined) {
    filters.entityTypeIdx = filterIndex(keys, "entityType", params.entityType);
  }
  if (params.entityId !== undefined) {
    filters.entityIdIdx = filterIndex(keys, "entityId", params.entityId);
  }
  if (params.action !== undefined) filters.actionIdx = filterIndex(keys, "action", params.action);
  if (tenantId !== undefined) filters.tenantIdx = filterIndex(keys, "tenantId", tenantId);
  if (params.from) filters.from = params.from;
  if (params.to) filters.to = params.to;

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
      for (const row of page.rows) {
        const at = { ...scope, eventId: row.eventId };
        const opened = await openEvent(keys, at, row.keyVersion, row.payload, row.context);
        events.push({
          eventId: row.eventId,
          occurredAt: row.occurredAt,
          receivedAt: row.receivedAt,
          logIndex: row.logIndex,
          salt: opened.salt,
          payload: opened.payload,
          context: opened.context,
        });
      }
      return { events, nextIndex: page.nextIndex };
    },
  };
}
