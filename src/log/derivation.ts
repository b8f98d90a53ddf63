/**
 * What the integrator computes from each journal row of a pass, as one pure function of
 * the rows and the project's keys: the opened payload and salt, the blind indexes that
 * filters and search read, and (when the verifiable log is on) the event's leaf. Pure so
 * that it runs the same on the requests' thread or in the derivation worker
 * (log/deriver.ts): the keys travel with the request, and nothing here reads the database.
 */
import {
  contextOfPlaintext,
  type EventAddress,
  type EventIndexes,
  type EventPayload,
  type EventPlaintext,
  type OpenedPayload,
  openContext,
  openPayload,
  payloadOfPlaintext,
} from "../crypto/event-cipher.js";
import type { ProjectKeys } from "../crypto/keyring.js";
import type { ListedEvent } from "../events/reader-query.js";
import { deriveIndexes } from "./derive.js";

/** The keys a derivation needs: the index key and the data keys of the rows' versions. */
export interface DerivationKeys {
  indexKey: Buffer;
  dataKeys: Map<number, Buffer>;
}

/** One journal row to derive: its content sealed, or as this instance sealed it. */
export interface DerivationRow {
  eventId: string;
  keyVersion: number;
  /** The sealed payload; undefined when `plaintext` is given. */
  payload: Uint8Array | undefined;
  /** The context's ciphertext (null without a context, or when leaves are not asked for). */
  context: Uint8Array | null;
  /** The texts the content was sealed from (log/plaintext-cache.ts): nothing to open. */
  plaintext: EventPlaintext | undefined;
  occurredMicros: bigint;
  receivedAt: Date;
}

/** The rows of one log in a pass, numbered from `firstIndex`. */
export interface DerivationRequest {
  projectId: string;
  environment: string;
  firstIndex: bigint;
  keys: DerivationKeys;
  rows: DerivationRow[];
}

/** What is derived from one row. */
export interface DerivedEvent {
  /**
   * The opened payload; left out by the worker when it derived the leaf, the only thing
   * the integrator's stages read it for (log/deriver.ts).
   */
  payload: EventPayload | undefined;
  salt: Buffer;
  indexes: EventIndexes;
  /** The leaf bytes of docs/verifiable-log.md; undefined when no leaf function is given. */
  leaf: Uint8Array | undefined;
}

/** One log's result: its events, or why they could not be derived (the log waits). */
export type DerivedLog = { events: DerivedEvent[] } | { error: string };

/** An event's leaf from the event as GET /api/events lists it. */
export type LeafOf = (event: ListedEvent) => Promise<Uint8Array>;

/** Events between two yields to the event loop when deriving on the requests' thread. */
const EVENTS_PER_YIELD = 100;

/** The keys of a request as the cipher functions take them. */
function projectKeys(projectId: string, keys: DerivationKeys): ProjectKeys {
  return {
    projectId,
    currentVersion: Math.max(0, ...keys.dataKeys.keys()),
    indexKey: keys.indexKey,
    async dataKey(version) {
      const key = keys.dataKeys.get(version);
      if (key === undefined) throw new Error(`data key version ${version} not given`);
      return key;
    },
  };
}

/** Milliseconds of a microsecond timestamp, rounded down (before 1970 too), as lists do. */
export function millis(micros: bigint): number {
  return Number((micros - (((micros % 1000n) + 1000n) % 1000n)) / 1000n);
}

/** A row's payload and salt: from its plaintext when given, else opened. */
function payloadOf(
  keys: ProjectKeys,
  at: EventAddress,
  row: DerivationRow,
): Promise<OpenedPayload> | OpenedPayload {
  if (row.plaintext) return payloadOfPlaintext(row.plaintext.payload);
  if (row.payload === undefined) throw new Error(`event ${row.eventId} came without content`);
  return openPayload(keys, at, row.keyVersion, row.payload);
}

/** A log's events opened and indexed, and (when leaves are asked for) its request. */
export interface IndexedLog {
  events: DerivedEvent[];
  /** What deriveLeaves reads besides the events; undefined when no leaves are asked for. */
  request: DerivationRequest | undefined;
}

/** A log's indexed events, or why its rows could not be opened (the log waits). */
export type IndexedLogOutcome = IndexedLog | { error: string };

/** Lets requests run every `yieldEvery` events (a worker has nothing else to do). */
async function yieldAt(i: number, yieldEvery: number): Promise<void> {
  if (i > 0 && i % yieldEvery === 0) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Where a row's ciphertexts belong. */
function addressOf(request: DerivationRequest, row: DerivationRow): EventAddress {
  return { projectId: request.projectId, environment: request.environment, eventId: row.eventId };
}

/** Opens one log's rows and derives their blind indexes; `withLeaves`: for deriveLeaves. */
export async function indexLog(
  request: DerivationRequest,
  withLeaves: boolean,
  yieldEvery = EVENTS_PER_YIELD,
): Promise<IndexedLog> {
  const keys = projectKeys(request.projectId, request.keys);
  const events: DerivedEvent[] = [];
  for (const [i, row] of request.rows.entries()) {
    await yieldAt(i, yieldEvery);
    const opened = await payloadOf(keys, addressOf(request, row), row);
    events.push({
      payload: opened.payload,
      salt: opened.salt,
      indexes: deriveIndexes(keys, opened.payload),
      leaf: undefined,
    });
  }
  return { events, request: withLeaves ? request : undefined };
}

/**
 * Sets each indexed event's leaf (indexLog with `withLeaves`), from the event as
 * GET /api/events lists it: its context is opened here, with the leaves, since nothing
 * else reads it.
 */
export async function deriveLeaves(
  log: IndexedLog,
  leafOf: LeafOf,
  yieldEvery = EVENTS_PER_YIELD,
): Promise<void> {
  const { request } = log;
  if (request === undefined) throw new Error("the log was indexed without what its leaves need");
  const keys = projectKeys(request.projectId, request.keys);
  for (const [i, event] of log.events.entries()) {
    await yieldAt(i, yieldEvery);
    const row = request.rows[i] as DerivationRow;
    if (event.payload === undefined) throw new Error(`event ${row.eventId} has no payload`);
    event.leaf = await leafOf({
      eventId: row.eventId,
      occurredAt: new Date(millis(row.occurredMicros)),
      receivedAt: row.receivedAt,
      logIndex: request.firstIndex + BigInt(i),
      salt: event.salt,
      payload: event.payload,
      context: row.plaintext
        ? contextOfPlaintext(row.plaintext.context)
        : await openContext(keys, addressOf(request, row), row.keyVersion, row.context),
    });
  }
}

/** The message of an error thrown while deriving. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Opens and indexes every log of a pass; a log that fails is reported, the others go on. */
export async function indexLogs(
  requests: readonly DerivationRequest[],
  withLeaves: boolean,
  yieldEvery = EVENTS_PER_YIELD,
): Promise<IndexedLogOutcome[]> {
  const results: IndexedLogOutcome[] = [];
  for (const request of requests) {
    try {
      results.push(await indexLog(request, withLeaves, yieldEvery));
    } catch (error) {
      results.push({ error: errorText(error) });
    }
  }
  return results;
}

/** Derives every log of a pass, leaves included; a log that fails is reported, the others go on. */
export async function deriveLogs(
  requests: readonly DerivationRequest[],
  leafOf: LeafOf | undefined,
  yieldEvery = EVENTS_PER_YIELD,
): Promise<DerivedLog[]> {
  const indexed = await indexLogs(requests, leafOf !== undefined, yieldEvery);
  const results: DerivedLog[] = [];
  for (const log of indexed) {
    if ("error" in log) {
      results.push(log);
      continue;
    }
    try {
      if (leafOf) await deriveLeaves(log, leafOf, yieldEvery);
      results.push({ events: log.events });
    } catch (error) {
      results.push({ error: errorText(error) });
    }
  }
  return results;
}
