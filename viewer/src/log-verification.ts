/**
 * The viewer's "verified" mark: checks in the browser, with WebCrypto, that a listed
 * event is in the project's verifiable log unchanged (docs/verifiable-log.md): the
 * checkpoint opens with the log's verifier key, and the event's own content and salt
 * give the leaf whose inclusion proof leads to the checkpoint's root. The library is the
 * one `audit verify` runs (src/tlog/), so the mark means what the CLI's check means.
 *
 * The keys are those the host page pins (`verifier-key`: the log's key, or its keys before
 * and after a rotation, separated by spaces), else the service's published key (which
 * proves consistency with what the service says, not against a key it could swap).
 */
import { openCheckpoint, type SignedCheckpoint } from "../../src/tlog/checkpoint.js";
import { createWebLogCrypto, type LogCrypto } from "../../src/tlog/crypto.js";
import {
  checkEventInclusion,
  type InclusionProof,
  parseVerifierKeys,
} from "../../src/tlog/verify.js";

/** What the check of one event found. */
export type Verification =
  | { state: "verified"; treeSize: number }
  | { state: "pending"; reason: string }
  | { state: "failed"; reason: string };

/** Checks events of one log; caches the checkpoint until an event is newer than it. */
export interface LogVerifier {
  verify(event: Readonly<Record<string, unknown>>): Promise<Verification>;
}

/** Options of createLogVerifier. */
export interface LogVerifierOptions {
  /** The service's URL, ending in `/`. */
  baseUrl: string;
  token: () => Promise<string>;
  /** Pinned verifier keys of the log, separated by white space; empty: the service's. */
  verifierKey: string;
}

/** Creates the verifier (undefined where the browser has no WebCrypto). */
export function createLogVerifier(options: LogVerifierOptions): LogVerifier {
  let crypto: LogCrypto | undefined;
  let checkpoint: Promise<SignedCheckpoint> | undefined;

  const get = async (path: string): Promise<Response> =>
    fetch(new URL(path, options.baseUrl), {
      headers: { authorization: `Bearer ${await options.token()}` },
    });
  const text = async (path: string): Promise<string> => {
    const response = await get(path);
    const body = await response.text();
    if (!response.ok) throw new Error(errorOf(body, response.status));
    return body;
  };
  const load = async (): Promise<SignedCheckpoint> => {
    crypto ??= createWebLogCrypto();
    // The pinned keys (several, separated by spaces, across a key rotation), else the
    // service's.
    const keys = options.verifierKey.trim() || (await text("api/log/key")).trim();
    return openCheckpoint(
      crypto,
      await text("api/log/checkpoint"),
      await parseVerifierKeys(crypto, keys),
    );
  };

  return {
    async verify(event) {
      let head: SignedCheckpoint;
      try {
        checkpoint ??= load();
        head = await checkpoint;
        if (typeof event.logIndex === "number" && event.logIndex >= head.size) {
          // Newer than the checkpoint held: the next one covers it within seconds.
          checkpoint = load();
          head = await checkpoint;
          if (event.logIndex >= head.size) {
            return { state: "pending", reason: "not yet in a signed checkpoint" };
          }
        }
      } catch (error) {
        checkpoint = undefined;
        return { state: "failed", reason: `checkpoint: ${messageOf(error)}` };
      }
      try {
        const eventId = String(event.eventId);
        const response = await get(
          `api/log/proof/inclusion?eventId=${encodeURIComponent(eventId)}&treeSize=${head.size}`,
        );
        const body = await response.text();
        if (!response.ok) return { state: "failed", reason: errorOf(body, response.status) };
        const problem = await checkEventInclusion(
          crypto ?? createWebLogCrypto(),
          event,
          JSON.parse(body) as InclusionProof,
          head,
        );
        return problem === undefined
          ? { state: "verified", treeSize: head.size }
          : { state: "failed", reason: problem };
      } catch (error) {
        return { state: "failed", reason: messageOf(error) };
      }
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function errorOf(body: string, status: number): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
  } catch {
    // Not JSON.
  }
  return `HTTP ${status}`;
}
