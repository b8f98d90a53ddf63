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

/**
 * Derives one log's rows. `yieldEvery`: on the requests' thread, let requests run every so
 * many events (a worker has nothing else to do).
 */
export async function deriveLog(
  request: DerivationRequest,
  leafOf: LeafOf | undefined,
  yieldEvery = EVENTS_PER_YIELD,
): Promise<DerivedEvent[]> {
  const keys = projectKeys(request.projectId, request.keys);
  const derived: DerivedEvent[] = [];
  for (const [i, row] of request.rows.entries()) {
    if (i > 0 && i % yieldEvery === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const at = {
      projectId: request.projectId,
      environment: request.environment,
      eventId: row.eventId,
    };
    const opened = await payloadOf(keys, at, row);
    let leaf: Uint8Array | undefined;
    if (leafOf) {
      leaf = await leafOf({
        eventId: row.eventId,
        occurredAt: new Date(millis(row.occurredMicros)),
        receivedAt: row.receivedAt,
        logIndex: request.firstIndex + BigInt(i),
        salt: opened.salt,
        payload: opened.payload,
        context: row.plaintext
          ? contextOfPlaintext(row.plaintext.context)
          : await openContext(keys, at, row.keyVersion, row.context),
      });
    }
    derived.push({
      payload: opened.payload,
      salt: opened.salt,
      indexes: deriveIndexes(keys, opened.payload),
      leaf,
    });
  }
  return derived;
}

/** Derives every log of a pass; a log that fails is reported, the others go on. */
export async function deriveLogs(
  requests: readonly DerivationRequest[],
  leafOf: LeafOf | undefined,
  yieldEvery = EVENTS_PER_YIELD,
): Promise<DerivedLog[]> {
  const results: DerivedLog[] = [];
  for (const request of requests) {
    try {
      results.push({ events: await deriveLog(request, leafOf, yieldEvery) });
    } catch (error) {
      results.push({ error: error instanceof Error ? error.message : String(error) });
    }
  }
  return results;
}
