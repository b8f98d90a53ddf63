/**
 * What every read of events shares (list, export, follow): the filters and search words
 * of a reader turned into the blind indexes the database matches, and a stored row opened
 * into the event as it is listed.
 *
 * Search is in two steps: the database matches each word's token (its longest indexed
 * prefix, crypto/blind-index.ts), and a word whose token is not exact is checked again
 * on the decrypted event (`searchCheck`): readers drop the events it refuses and read on,
 * so a page still holds every match up to its limit.
 *
 * Invariants: a reader reads only its own project and environment, and a
 * tenant-restricted token only its tenant, whatever the parameters say (asking for
 * another tenant matches nothing). Blind indexes are computed from the raw values, as
 * ingestion computed them from the raw values it was sent (event-cipher.ts sealEvent).
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ReaderPrincipal } from "../auth/authenticator.js";
import { isExactSearchTerm, queryToken } from "../crypto/blind-index.js";
import {
  type EventPayload,
  filterIndex,
  matchesSearch,
  openContext,
  openPayload,
  searchTokenId,
} from "../crypto/event-cipher.js";
import type { ProjectKeys } from "../crypto/keyring.js";
import { indexedValuesOf } from "../log/derive.js";
import type { StoredEventRow } from "../store/event-reads.js";
import type { LogFilters } from "../store/log-reads.js";
import type { ListParams } from "./list-params.js";

/** An event as it is listed: its fields decrypted, with its place in the log. */
export interface ListedEvent {
  eventId: string;
  occurredAt: Date;
  receivedAt: Date;
  /** Position in its log (project and environment), gapless from 0. */
  logIndex: bigint;
  /** The random salt the verifiable log hashes with the event. */
  salt: Buffer;
  payload: EventPayload;
  context: JsonObject | undefined;
}

/** What a reader filters on: the list's parameters without its paging. */
export type ReaderFilters = Omit<ListParams, "limit" | "cursor">;

/**
 * The reader's filters as blind indexes, within its project and environment; undefined
 * when nothing can match (a tenant-restricted token asking for another tenant).
 */
export function blindFilters(
  keys: ProjectKeys,
  principal: ReaderPrincipal,
  params: ReaderFilters,
): LogFilters | undefined {
  const restricted = principal.tenantId;
  if (restricted !== undefined && params.tenantId !== undefined && params.tenantId !== restricted) {
    return undefined;
  }
  const tenantId = restricted ?? params.tenantId;
  const filters: LogFilters = {
    projectId: principal.projectId,
    environment: principal.environment,
    searchTokens: params.searchWords.map((word) => searchTokenId(keys, queryToken(word))),
  };
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
  return filters;
}

/**
 * What a search must check after decryption: undefined when every word's token is exact
 * (the database's match is the answer), else whether an opened payload matches the words
 * whose tokens are not.
 */
export type SearchCheck = (payload: EventPayload) => boolean;

/** The reader's search check (undefined: nothing to check after decryption). */
export function searchCheck(params: ReaderFilters): SearchCheck | undefined {
  const inexact = params.searchWords.filter((word) => !isExactSearchTerm(word));
  if (inexact.length === 0) return undefined;
  return (payload) => matchesSearch(indexedValuesOf(payload), inexact);
}

/** A stored row of the log `scope` names, decrypted into the listed event. */
export async function openListedEvent(
  keys: ProjectKeys,
  scope: { projectId: string; environment: string },
  row: Omit<StoredEventRow, "occurredMicros">,
): Promise<ListedEvent> {
  const listed = await openMatchingEvent(keys, scope, row, undefined);
  if (!listed) throw new Error("an event without a search check was refused");
  return listed;
}

/**
 * A stored row decrypted into the listed event when it passes `check` (undefined when it
 * does not): its context is opened only then.
 */
export async function openMatchingEvent(
  keys: ProjectKeys,
  scope: { projectId: string; environment: string },
  row: Omit<StoredEventRow, "occurredMicros">,
  check: SearchCheck | undefined,
): Promise<ListedEvent | undefined> {
  const at = { projectId: scope.projectId, environment: scope.environment, eventId: row.eventId };
  const opened = await openPayload(keys, at, row.keyVersion, row.payload);
  if (check && !check(opened.payload)) return undefined;
  return {
    eventId: row.eventId,
    occurredAt: row.occurredAt,
    receivedAt: row.receivedAt,
    logIndex: row.logIndex,
    salt: opened.salt,
    payload: opened.payload,
    context: await openContext(keys, at, row.keyVersion, row.context),
  };
}
