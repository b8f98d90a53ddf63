/**
 * Follow Events, the same for every protocol: first the backlog of a reader's log from
 * `fromIndex`, then each event as the integrator sequences it, in log-index order, for
 * as long as the client reads and its credential holds.
 *
 * Invariants: `fromIndex` is checked against every event acknowledged before the
 * request (read-your-writes, as the list). Every event of the log at or after `fromIndex` that matches is handed
 * over exactly once and in order (the position moves only past what was read, and a
 * page is bounded by the log's integrated size read before it: nothing can appear below
 * it later). Nothing is buffered for a slow client: the next page is read only when the
 * consumer asks for it, so a consumer that does not read holds one page at most. The
 * stream learns of new events from `wake` (this instance's integrator and, through the
 * database, every other's), and looks again every `pollMs` without one, so a lost
 * notification delays an event by at most that. The credential is checked again at
 * least every `authCheckMs`: a frontend token that expires (or a key revoked) ends the
 * stream with its 401 or 403. When `stopping` aborts (the instance shuts down), every
 * stream ends at once with `unavailable`, so that a graceful stop does not wait for
 * followers and they resume, from their last logIndex, on another instance.
 */
import type { Authenticator } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import { Messages, ServiceError } from "../errors.js";
import type { ReadYourWrites } from "../log/read-your-writes.js";
import { beyondLog, type EventChunk } from "./export-service.js";
import { createLogScan, holdsEntries, type LogScanDeps } from "./log-scan.js";
import { parseFollowParams, parseLastEventId } from "./log-stream-params.js";

/** Tells followers that some log may have grown. */
export interface LogWake {
  /** Calls `listener` on every wake-up until the returned function is called. */
  subscribe(listener: () => void): () => void;
}

/** A follow request, as any transport hands it over. */
export interface FollowRequest {
  credential: Credential;
  /** The request's JSON form; checked here. */
  params: () => unknown;
  /**
   * SSE's Last-Event-ID, the logIndex last received: overrides `fromIndex`, the stream
   * resumes after it.
   */
  lastEventId?: string;
}

/** A follow stream checked and ready. */
export interface OpenedFollow {
  projectId: string;
  environment: string;
  fromIndex: bigint;
  /**
   * Chunks of events in log-index order, and a chunk without events (a heartbeat) after
   * `heartbeatMs` without any; ends when `signal` aborts, throws when the credential
   * stops being valid.
   */
  chunks(signal?: AbortSignal): AsyncGenerator<EventChunk>;
}

/** Dependencies and pacing of the follow service. */
export interface FollowDeps extends LogScanDeps {
  authenticator: Authenticator;
  /** Waits for the integrator, so that `fromIndex` is checked against every acknowledged event. */
  readYourWrites: ReadYourWrites;
  wake: LogWake;
  /** Longest time without a look at the log (the fallback to notifications). */
  pollMs?: number;
  /** Longest time without a chunk: an empty one is sent (a heartbeat). */
  heartbeatMs?: number;
  /** Longest time without checking the credential again. */
  authCheckMs?: number;
  /** Aborted when the instance starts shutting down: every stream then ends. */
  stopping?: AbortSignal;
}

/** The Follow Events operation. */
export interface FollowService {
  /** Checks the request; throws its 4xx. */
  open(request: FollowRequest): Promise<OpenedFollow>;
}

/** Creates the follow service. */
export function createFollowService(deps: FollowDeps): FollowService {
  const pollMs = deps.pollMs ?? 1_000;
  const heartbeatMs = deps.heartbeatMs ?? 15_000;
  const authCheckMs = deps.authCheckMs ?? 1_000;
  const stopping = deps.stopping;
  const refuseIfStopping = () => {
    if (stopping?.aborted) {
      throw new ServiceError("unavailable", Messages.shuttingDown, { retryAfterSeconds: 1 });
    }
  };
  return {
    async open(request) {
      refuseIfStopping();
      const principal = await deps.authenticator.requireReader(request.credential);
      const params = parseFollowParams(request.params());
      const resumed = request.lastEventId;
      const fromIndex =
        resumed === undefined ? params.fromIndex : parseLastEventId(resumed.trim()) + 1n;
      const scope = { projectId: principal.projectId, environment: principal.environment };
      const scan = await createLogScan(deps, principal, params);
      await deps.readYourWrites.awaitIntegrated(scope.projectId, scope.environment);
      const size = await deps.reader.size(scope.projectId, scope.environment);
      if (fromIndex > size) {
        const name = resumed === undefined ? "fromIndex" : "Last-Event-ID";
        const shown = resumed === undefined ? fromIndex : fromIndex - 1n;
        throw new ServiceError("bad_request", beyondLog(name, shown, size));
      }
      return {
        ...scope,
        fromIndex,
        async *chunks(signal) {
          let woken = true;
          let wakeUp: (() => void) | undefined;
          const onWake = () => {
            woken = true;
            wakeUp?.();
          };
          const unsubscribe = deps.wake.subscribe(onWake);
          signal?.addEventListener("abort", onWake);
          stopping?.addEventListener("abort", onWake);
          try {
            let position = fromIndex;
            let lastChunk = Date.now();
            let lastAuth = Date.now();
            while (!signal?.aborted) {
              refuseIfStopping();
              if (Date.now() - lastAuth >= authCheckMs) {
                await deps.authenticator.requireReader(request.credential);
                lastAuth = Date.now();
              }
              woken = false;
              const end = await deps.reader.size(scope.projectId, scope.environment);
              // Read until the size read above; a page at a time, as the client reads.
              while (scan && position < end && !signal?.aborted) {
                refuseIfStopping();
                const page = await scan.page(position, end);
                position = page.nextIndex;
                if (holdsEntries(page)) {
                  lastChunk = Date.now();
                  yield page;
                }
              }
              if (!scan) position = end;
              if (signal?.aborted) break;
              if (Date.now() - lastChunk >= heartbeatMs) {
                lastChunk = Date.now();
                yield { events: [], erased: [], unreadable: [], nextIndex: position };
                continue;
              }
              if (woken) continue;
              const until = Math.min(
                pollMs,
                heartbeatMs - (Date.now() - lastChunk),
                authCheckMs - (Date.now() - lastAuth),
              );
              await new Promise<void>((resolve) => {
                const timer = setTimeout(done, Math.max(0, until));
                function done() {
                  clearTimeout(timer);
                  wakeUp = undefined;
                  resolve();
                }
                wakeUp = done;
              });
            }
          } finally {
            unsubscribe();
            signal?.removeEventListener("abort", onWake);
            stopping?.removeEventListener("abort", onWake);
            wakeUp?.();
          }
        },
      };
    },
  };
}
