/**
 * Bulk ingestion: a batch of events in one request (CreateEvents, POST
 * /api/ingest/events) and a stream of events (IngestEvents). Each event is validated,
 * encoded and sealed exactly as Create Event does one (ingest-service.ts), and lands in
 * the same journal, so everything downstream (log index, search, filters, proofs) is the
 * same for it.
 *
 * A batch, in order: credentials; the rate limit, once for the request; the
 * Idempotency-Key's length; the body's shape (1 to 500 events); each event's validation
 * (issues prefixed with the event's index); then the valid events are sealed and
 * appended together (store/batch-append.ts), with the key's claim and the quota: all of
 * them or none. When no event is valid, or any is invalid in atomic mode, the request
 * fails with every item's issues and nothing is stored (nor claimed: a retry is
 * validated again). A replay answers each item as the first request did: stored items
 * by their original ids, refused ones by their issues, found again by validating the
 * same body.
 *
 * A stream reads credentials and the rate limit once when it opens and once more per
 * `STREAM_EVENTS_PER_ADMISSION` events; the events its operation reads together are
 * validated and sealed as a group and queued together on the single-event write path
 * (one group-commit batch: per-event Idempotency-Keys and quota, as Create Event), each
 * acknowledged once its transaction committed.
 */
import { hash } from "node:crypto";
import type { Authenticator, KeyPrincipal } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import type { Keyring } from "../crypto/keyring.js";
import { type FieldIssue, Messages, ServiceError } from "../errors.js";
import { uuidv7 } from "../ids.js";
import type { AdmissionCheck } from "../limits/admission.js";
import {
  type BatchAppender,
  type BatchAppendResult,
  type BatchEvent,
  type HeldBatch,
  RefusedValues,
} from "../store/batch-append.js";
import type { EventStore, WriteResult } from "../store/events.js";
import type { EventInput } from "../vocabulary/event-input.js";
import { MAX_EVENT_BYTES } from "../vocabulary/json-limits.js";
import { canonicalHash } from "./canonical-json.js";
import { eventValidator } from "./event-input.js";
import { canonicalEvent, eventBodyHash } from "./idempotency-hash.js";
import {
  checkedIdempotencyKey,
  idempotencyClaim,
  journalEvent,
  sealInput,
} from "./ingest-service.js";

/** Most events in one batch. */
export const MAX_BATCH_EVENTS = 500;

/** A stream counts once more against the rate limit per this many events. */
export const STREAM_EVENTS_PER_ADMISSION = 500;

/** A CreateEvents request, as any transport hands it over. */
export interface CreateEventsRequest {
  credential: Credential;
  idempotencyKey: string | undefined;
  /** The request carried more than one Idempotency-Key header (refused: ambiguous). */
  idempotencyKeyRepeated?: boolean;
  /**
   * The body as parsed JSON (`{events, atomic}`), or throws a 400 ServiceError. Called
   * only once credentials and limits have passed.
   */
  readBody: () => unknown;
}

/** The outcome of one item of a batch. */
export type ItemResult =
  | { stored: true; eventId: string; receivedAt: Date }
  | { stored: false; error: string; details: FieldIssue[] };

/** The outcome of a batch: each item's result in request order. */
export interface BatchResult {
  results: ItemResult[];
  /** True on an idempotent replay: nothing was stored now. */
  replayed: boolean;
}

/** One event of a stream, with its own Idempotency-Key. */
export interface StreamItem {
  event: unknown;
  idempotencyKey: string | undefined;
}

/** A stream's admission: its events are written on its principal's behalf. */
export interface EventStream {
  /**
   * Validates, seals and writes a group of events read together, after the groups
   * given before it, as one group-commit batch: one promise per event, in order, that
   * resolves once its event committed (or replays its key). Each rejects with a
   * ServiceError: `validation`, `bad_request` or `conflict` for that event alone; any
   * other kind (quota, rate limit, unavailable) refuses the stream.
   */
  ingest(items: readonly StreamItem[]): Promise<WriteResult>[];
  /**
   * Undefined when the stream's log takes events now; else a promise that resolves once
   * it does, or rejects with the refusal that ends the stream (the pushback): the stream
   * reads its next event only then.
   */
  ready(): Promise<void> | undefined;
}

/** Dependencies of bulk ingestion. */
export interface BulkIngestDeps {
  authenticator: Authenticator;
  keyring: Keyring;
  /** The single-event write path (streams). */
  events: EventStore;
  /** The batch write path. */
  batches: BatchAppender;
  idempotencyTtlSeconds: number;
  /** Checks once per request (rate limit). */
  admission?: AdmissionCheck[];
  /**
   * The pushback while the integrator is behind (log/ingest-pushback.ts): a batch is
   * refused before `admission`; a stream waits for its log before it reads on.
   */
  pushback?: AdmissionCheck & {
    accepting(principal: KeyPrincipal): boolean;
    whenAccepting(principal: KeyPrincipal): Promise<void>;
  };
  now?: () => Date;
  /** Called once per event created (metrics). */
  onCreated?: (principal: KeyPrincipal) => void;
}

/** Bulk ingestion's operations. */
export interface BulkIngestService {
  createEvents(request: CreateEventsRequest): Promise<BatchResult>;
  /** Authenticates and admits a stream; throws its refusal. */
  openStream(credential: Credential): Promise<EventStream>;
}

/** Creates bulk ingestion. */
export function createBulkIngestService(deps: BulkIngestDeps): BulkIngestService {
  const now = deps.now ?? (() => new Date());
  const ttlMs = deps.idempotencyTtlSeconds * 1000;
  const admit = async (principal: KeyPrincipal) => {
    for (const check of deps.admission ?? []) await check.admit(principal);
  };

  return {
    async createEvents(request) {
      const receivedAt = now();
      const principal = await deps.authenticator.requireApiKey(request.credential);
      await deps.pushback?.admit(principal);
      await admit(principal);
      if (request.idempotencyKeyRepeated) {
        throw new ServiceError("bad_request", Messages.twoIdempotencyKeys);
      }
      const idempotencyKey = checkedIdempotencyKey(request.idempotencyKey);
      const body = request.readBody();
      const { events, atomic } = readBatch(body);
      const checked = events.map((event, index) => validateItem(event, index));
      const valid = checked.filter((item) => item.issues.length === 0);
      if (valid.length === 0 || (atomic && valid.length < checked.length)) {
        throw new ServiceError("validation", Messages.validationFailed, {
          issues: checked.flatMap((item) => item.issues),
        });
      }

      // Ids ascending in request order: the log sequences a batch by id.
      const ids = valid.map(() => uuidv7(receivedAt.getTime())).sort();
      const keys = await deps.keyring.forProject(principal.projectId);
      const eventIds = new Map<number, string>();
      const sealed: BatchEvent[] = await Promise.all(
        valid.map(async (item, n) => {
          const eventId = ids[n] as string; // one id per valid item
          eventIds.set(item.index, eventId);
          const at = {
            projectId: principal.projectId,
            environment: principal.environment,
            eventId,
          };
          return {
            eventId,
            occurredAt: item.input.occurredAt ? new Date(item.input.occurredAt) : receivedAt,
            sealed: await sealInput(keys, at, item.input),
          };
        }),
      );
      const itemIds = checked.map((item) => eventIds.get(item.index) ?? null);
      // "The same body" as for one event (idempotency-hash.ts): valid items in their
      // canonical form, so a batch sent over REST replays when retried over an RPC protocol.
      const bodyHash =
        idempotencyKey === undefined
          ? undefined
          : canonicalHash({
              atomic,
              events: checked.map((item) =>
                item.issues.length === 0 ? canonicalEvent(item.input) : events[item.index],
              ),
            });

      const claim =
        idempotencyKey === undefined || bodyHash === undefined
          ? undefined
          : {
              keyHash: hash("sha256", idempotencyKey, "buffer"),
              bodyHash,
              expiresAt: new Date(receivedAt.getTime() + ttlMs),
              eventIds: itemIds,
            };
      let outcome: BatchAppendResult;
      try {
        outcome = await deps.batches.append({
          projectId: principal.projectId,
          environment: principal.environment,
          atomic,
          receivedAt,
          events: sealed,
          claim,
        });
      } catch (error) {
        if (!(error instanceof RefusedValues)) throw error;
        // Nothing stored (atomic, or every valid event refused): a 422 like any other.
        throw new ServiceError("validation", Messages.validationFailed, {
          issues: checked.flatMap((item, i) =>
            refusedIssues(item, itemIds[i] ?? null, error.eventIds),
          ),
        });
      }
      if (outcome.kind === "held") {
        if (!bodyHash || !outcome.held.bodyHash.equals(bodyHash)) {
          throw new ServiceError("conflict", Messages.idempotencyConflict);
        }
        return { results: replayResults(outcome.held, checked), replayed: true };
      }
      const { refused } = outcome;
      for (let n = sealed.length - refused.size; n > 0; n--) deps.onCreated?.(principal);
      return {
        results: checked.map((item, i) => {
          const eventId = itemIds[i];
          return eventId && !refused.has(eventId)
            ? { stored: true, eventId, receivedAt }
            : {
                stored: false,
                error: Messages.validationFailed,
                details: refusedIssues(item, eventId ?? null, refused),
              };
        }),
        replayed: false,
      };
    },

    async openStream(credential) {
      const principal = await deps.authenticator.requireApiKey(credential);
      await admit(principal);
      let count = 0;
      // Each group of events joins the write queue after the group sent before it, so
      // that the log (and a reused key's first use) keeps the stream's order; sealing
      // overlaps the write of the group before.
      let queued: Promise<void> = Promise.resolve();
      // The first refusal (the rate limit at a mark, a revoked key) and the group it came
      // in: every event sent after the refused one is refused too, in later groups as
      // well, though they may have passed the mark's count while it was being checked.
      let refusal: { group: number; error: unknown } | undefined;
      let groups = 0;
      const refuseFrom = (group: number, error: unknown) => {
        if (!refusal || group < refusal.group) refusal = { group, error };
      };
      const { pushback } = deps;
      return {
        ready() {
          return !pushback || pushback.accepting(principal)
            ? undefined
            : pushback.whenAccepting(principal);
        },
        ingest(items) {
          const group = groups++;
          const turn = queued;
          let release = () => {};
          queued = new Promise((resolve) => {
            release = resolve;
          });
          const settlers = items.map(() => settler<WriteResult>());
          void writeInTurn(group, items, settlers, turn, release)
            .catch((error: unknown) => {
              // Whatever was not settled shares the failure (settling twice is a no-op).
              for (const one of settlers) one.reject(error);
            })
            // Not before this group's turn: a refused group must not let the next one
            // overtake those still ahead of it.
            .finally(() => void turn.then(release));
          return settlers.map((one) => one.promise);
        },
      };

      async function writeInTurn(
        group: number,
        items: readonly StreamItem[],
        settlers: Settler<WriteResult>[],
        turn: Promise<void>,
        queuedNow: () => void,
      ): Promise<void> {
        // The key is looked at again for every group, as for every Create Event (cached
        // for API_KEY_CACHE_SECONDS): a key revoked while its stream is open stops
        // writing, and its refusal ends the stream.
        try {
          await deps.authenticator.requireApiKey(credential);
        } catch (error) {
          refuseFrom(group, error);
          for (const one of settlers) one.reject(error);
          return;
        }
        // The rate limit counts once more per STREAM_EVENTS_PER_ADMISSION events: a
        // refusal refuses the event that crossed the mark and those after it.
        let admitted = items.length;
        for (let i = 0; i < items.length; i++) {
          count++;
          if (count > 1 && (count - 1) % STREAM_EVENTS_PER_ADMISSION === 0) {
            try {
              await admit(principal);
            } catch (error) {
              refuseFrom(group, error);
              admitted = i;
              for (const one of settlers.slice(i)) one.reject(error);
              break;
            }
          }
        }
        const receivedAt = now();
        // Ids ascending in the order sent: the log sequences one transaction's events by id.
        const ids = items.map(() => uuidv7(receivedAt.getTime())).sort();
        const prepared = await Promise.all(
          items.slice(0, admitted).map(async (item, i) => {
            try {
              const key = checkedIdempotencyKey(item.idempotencyKey);
              const { input, event } = await journalEvent(
                deps.keyring,
                principal,
                item.event,
                receivedAt,
                ids[i],
              );
              return {
                ...event,
                idempotency: idempotencyClaim(key, () => eventBodyHash(input), receivedAt, ttlMs),
              };
            } catch (error) {
              settlers[i]?.reject(error);
              return undefined;
            }
          }),
        );
        await turn;
        // Every group before this one has queued its writes or been refused by now.
        const earlier = refusal && refusal.group < group ? refusal : undefined;
        if (earlier) {
          for (const one of settlers) one.reject(earlier.error);
          queuedNow();
          return;
        }
        // Queued in one turn of the event loop: the group commit writes them together.
        prepared.forEach((event, i) => {
          const one = settlers[i];
          if (!event || !one) return;
          deps.events.createEvent(event).then((result) => {
            if (!result.replayed) deps.onCreated?.(principal);
            one.resolve(result);
          }, one.reject);
        });
        queuedNow();
      }
    },
  };
}

/** A promise with its settling functions. */
interface Settler<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function settler<T>(): Settler<T> {
  let resolve: (value: T) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A validated item of a batch: its issues carry its index first. */
interface CheckedItem {
  index: number;
  input: EventInput;
  issues: FieldIssue[];
}

function validateItem(event: unknown, index: number): CheckedItem {
  const { value, issues } = eventValidator.validate(event);
  // As large as a Create Event body may be, and no larger (measured without white space:
  // the body's own spacing is the batch's).
  if (
    issues.length === 0 &&
    mayExceedEventBytes(event, value) &&
    jsonBytesOver(event, MAX_EVENT_BYTES)
  ) {
    issues.push({
      path: [],
      message: `Event must be at most ${MAX_EVENT_BYTES} bytes of JSON, as a Create Event body`,
      code: "too_big",
    });
  }
  return {
    index,
    input: value,
    issues: issues.map((issue) => ({ ...issue, path: [index, ...issue.path] })),
  };
}

/**
 * Whether a valid event, as sent (`event`; `input` is what validation kept of it), could
 * take more than MAX_EVENT_BYTES. What the service keeps is bounded: each change at most
 * ~10.6 KB (`before` and `after` 5 KB each, a 256-character path), the context 10 KB and
 * the other fields a few KB, so below 65 changes it stays under 0.7 MB. Members it
 * ignores are not bounded and count, as they count in a Create Event body: an event with
 * any (in itself or in a change) is measured too.
 */
function mayExceedEventBytes(event: unknown, input: EventInput): boolean {
  const changes = input.changes ?? [];
  if (changes.length > 64 || memberCount(event) !== Object.keys(input).length) return true;
  const sentChanges = (event as { changes?: unknown }).changes;
  if (!Array.isArray(sentChanges)) return false;
  return changes.some((change, i) => memberCount(sentChanges[i]) !== Object.keys(change).length);
}

/** The number of own enumerable members of an object as sent (0 for anything else). */
function memberCount(value: unknown): number {
  return typeof value === "object" && value !== null ? Object.keys(value).length : 0;
}

/** Whether `value` written as JSON takes more than `limit` bytes of UTF-8. */
function jsonBytesOver(value: unknown, limit: number): boolean {
  const text = JSON.stringify(value) ?? "";
  // A character takes at most 3 bytes (a surrogate pair 4 for 2): most texts need no count.
  return text.length * 3 > limit && Buffer.byteLength(text, "utf8") > limit;
}

/**
 * The batch's envelope: `events`, an array of 1 to 500 items, and `atomic`, a boolean
 * (REST's query parameter arrives as one: transport/rest.ts). Its issues fail the request
 * as a validation error.
 */
function readBatch(body: unknown): { events: unknown[]; atomic: boolean } {
  const refuse = (issues: FieldIssue[]): never => {
    throw new ServiceError("validation", Messages.validationFailed, { issues });
  };
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return refuse([
      { path: [], message: `Expected object, received ${jsonType(body)}`, code: "invalid_type" },
    ]);
  }
  // Every failing member is listed, as Create Event lists every failing field.
  const issues: FieldIssue[] = [];
  const { events, atomic } = body as { events?: unknown; atomic?: unknown };
  if (atomic !== undefined && typeof atomic !== "boolean") {
    issues.push({
      path: ["atomic"],
      message: `Expected boolean, received ${jsonType(atomic)}`,
      code: "invalid_type",
    });
  }
  if (events === undefined) {
    issues.push({ path: ["events"], message: "Required", code: "invalid_type" });
  } else if (!Array.isArray(events)) {
    issues.push({
      path: ["events"],
      message: `Expected array, received ${jsonType(events)}`,
      code: "invalid_type",
    });
  } else if (events.length === 0) {
    issues.push({
      path: ["events"],
      message: "Array must contain at least 1 element(s)",
      code: "too_small",
    });
  } else if (events.length > MAX_BATCH_EVENTS) {
    issues.push({
      path: ["events"],
      message: `Array must contain at most ${MAX_BATCH_EVENTS} element(s)`,
      code: "too_big",
    });
  }
  if (issues.length > 0 || !Array.isArray(events)) return refuse(issues);
  return { events, atomic: atomic === true };
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** The message of an item whose value the database refused (no such value is known). */
export const REFUSED_VALUE = "A value of this event cannot be stored";

/** An item's issues: its validation's, or the database's refusal of its event. */
function refusedIssues(
  item: CheckedItem,
  eventId: string | null,
  refused: ReadonlySet<string>,
): FieldIssue[] {
  if (eventId === null || !refused.has(eventId)) return item.issues;
  return [{ path: [item.index], message: REFUSED_VALUE, code: "custom" }];
}

/** A replay's results: the claim's ids, and the issues of the items it refused. */
function replayResults(held: HeldBatch, checked: CheckedItem[]): ItemResult[] {
  return checked.map((item, i) => {
    const eventId = held.eventIds[i];
    if (eventId) return { stored: true, eventId, receivedAt: held.receivedAt };
    return {
      stored: false,
      error: Messages.validationFailed,
      // The same body validates the same way; an item the rules now accept was still
      // refused then.
      details:
        item.issues.length > 0
          ? item.issues
          : [{ path: [i], message: "Refused by the original request", code: "custom" }],
    };
  });
}
