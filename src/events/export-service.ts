/**
 * Export Events, the same for every protocol: the list's credentials, filters and
 * search, over a log-index range, in log-index order, as a stream of pages.
 *
 * Invariants: everything is checked before the first event is handed over (`open`
 * throws the 4xx), so a transport can still answer with an error body. The export ends
 * at the log's integrated size read once the integrator has passed every event
 * acknowledged before the request (read-your-writes, log/read-your-writes.ts): an export
 * is a fixed range, complete up to its start, and an export resumed at `fromIndex` =
 * the last log index received + 1 loses and repeats nothing. Memory is one page read
 * ahead and one being written: pages are read only as the consumer asks for them.
 */
import type { Authenticator } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import { ServiceError } from "../errors.js";
import type { ReadYourWrites } from "../log/read-your-writes.js";
import type { ListedEvent } from "./list-service.js";
import {
  createLogScan,
  type ErasedEvent,
  holdsEntries,
  type LogScanDeps,
  type UnreadableEvent,
} from "./log-scan.js";
import { parseExportParams } from "./log-stream-params.js";

/** An export request, as any transport hands it over. */
export interface ExportRequest {
  credential: Credential;
  /** The request's JSON form (query parameters or RPC fields); checked here. */
  params: () => unknown;
}

/** Events handed over together, and where a resumed stream would start after them. */
export interface EventChunk {
  events: ListedEvent[];
  /**
   * Erased events of the chunk's range, by log index (unfiltered reads only): their
   * tombstones, to merge with `events` by log index (docs/lifecycle.md).
   */
  erased: ErasedEvent[];
  /** Events of the chunk's range that do not decrypt, by log index: named, not skipped. */
  unreadable: UnreadableEvent[];
  /** The `fromIndex` that resumes after this chunk. */
  nextIndex: bigint;
}

/** An export checked and ready to stream. */
export interface OpenedExport {
  projectId: string;
  environment: string;
  /** First log index of the range. */
  fromIndex: bigint;
  /** End of the range (exclusive): at most the log's size when the export began. */
  endIndex: bigint;
  /**
   * The range's matching events, page by page in log-index order; stops early when
   * `signal` aborts (the client went away).
   */
  chunks(signal?: AbortSignal): AsyncGenerator<EventChunk>;
}

/** Dependencies of the export service. */
export interface ExportDeps extends LogScanDeps {
  authenticator: Authenticator;
  readYourWrites: ReadYourWrites;
}

/** The Export Events operation. */
export interface ExportService {
  /** Checks the request and fixes its range; throws the request's 4xx. */
  open(request: ExportRequest): Promise<OpenedExport>;
}

/** The message of an export that starts past the log's end. */
export const beyondLog = (name: string, value: bigint, size: bigint) =>
  `${name} ${value} is beyond the end of the log, which holds ${size} events`;

/** Creates the export service. */
export function createExportService(deps: ExportDeps): ExportService {
  return {
    async open(request) {
      const principal = await deps.authenticator.requireReader(request.credential);
      const params = parseExportParams(request.params());
      const scope = { projectId: principal.projectId, environment: principal.environment };
      await deps.readYourWrites.awaitIntegrated(scope.projectId, scope.environment);
      const scan = await createLogScan(deps, principal, params);
      const size = await deps.reader.size(scope.projectId, scope.environment);
      if (params.fromIndex > size) {
        throw new ServiceError("bad_request", beyondLog("fromIndex", params.fromIndex, size));
      }
      const limit = params.toIndex === undefined ? size : params.toIndex + 1n;
      const endIndex = limit < size ? limit : size;
      const fromIndex = params.fromIndex;
      return {
        ...scope,
        fromIndex,
        endIndex,
        async *chunks(signal) {
          if (!scan) return;
          // One page read ahead while the last is written: the database and the
          // consumer work at the same time, and memory stays at two pages.
          let next = fromIndex < endIndex ? scan.page(fromIndex, endIndex) : undefined;
          while (next && !signal?.aborted) {
            const page = await next;
            next = page.nextIndex < endIndex ? scan.page(page.nextIndex, endIndex) : undefined;
            // A read ahead that nobody awaits (the consumer stopped) must not be an
            // unhandled rejection.
            next?.catch(() => {});
            if (holdsEntries(page) || !next) yield page;
          }
        },
      };
    },
  };
}
