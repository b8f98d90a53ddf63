/**
 * Abortable waits in line: what admission's gates (a slot) and the loop-delay shedder
 * (the loop caught up) both need. A waiter is released by calling the first of `waiting`;
 * one whose client went away leaves the line without being released.
 */
import { Code, ConnectError } from "@connectrpc/connect";

/** The error of a wait ended by the client going away: a cancellation, never logged. */
export function cancelled(signal: AbortSignal | undefined): ConnectError {
  const reason: unknown = signal?.reason;
  return reason instanceof ConnectError
    ? reason
    : new ConnectError("stream cancelled", Code.Canceled);
}

/**
 * Joins the end of `waiting`: resolves when released, rejects with `cancelled` (and
 * leaves the line) when `signal` aborts first, at once if it has already.
 */
export function waitInLine(waiting: (() => void)[], signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled(signal));
    const release = () => {
      signal?.removeEventListener("abort", abort);
      resolve();
    };
    const abort = () => {
      const at = waiting.indexOf(release);
      if (at >= 0) waiting.splice(at, 1);
      reject(cancelled(signal));
    };
    signal?.addEventListener("abort", abort, { once: true });
    waiting.push(release);
  });
}
