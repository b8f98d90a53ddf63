/**
 * List Events, the same for every protocol: who may read (an API key, or a frontend
 * token narrowed to a tenant or not), which events match, and one keyset page of them.
 *
 * Invariants: a reader sees only its own project and environment, and a
 * tenant-restricted token only its tenant, whatever the parameters say. Filters and
 * search are blind indexes computed here from the raw parameter values (as ingestion
 * computed them from the raw values it was sent) and matched by the database; only the
 * events of the page are decrypted. Events come newest `occurredAt` first, ties by
 * `eventId` descending, and a page's cursor resumes exactly after its last event. Every
 * event acknowledged before the request began is listed (read-your-writes: the list
 * waits, bounded, for the integrator, log/read-your-writes.ts).
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { Authenticator } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import { queryToken } from "../crypto/blind-index.js";
import {
  type EventPayload,
  filterIndex,
  openEvent,
  searchTokenId,
} from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import type { ReadYourWrites } from "../log/read-your-writes.js";
import type { EventPageQuery, EventReader } from "../store/event-reads.js";
import type { CursorCodec } from "./cursor.js";
import { parseListParams } from "./list-params.js";

/**
 * Most bytes of stored ciphertext (the events' JSON, encrypted) in one page: an event that
 * would take the page past it starts the next page, so a page of large events holds fewer
 * than `limit` of them and its cursor leads on to the rest. A page holds one event at
 * least, however large (a 1 MB body can store several MB once HTML-encoded). 2 MiB keeps
 * pages of events up to about 10 KB whole, and REST bodies and most gRPC replies under
 * the 4 MiB that gRPC clients (grpc-js, grpc-go) accept by default; the protobuf form of
 * `context` and `changes` is larger than their JSON where they hold many numbers.
 */
export const PAGE_MAX_BYTES = 2 * 1024 * 1024;

/** A List Events request, as any transport hands it over. */
export interface ListRequest {
  credential: Credential;
  /** The request's JSON form (query parameters or RPC fields); checked here. */
  params: () => unknown;
}

/** One event of a page: every field that was created, as stored, decrypted. */
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

/** One page of events. */
export interface EventPage {
  events: ListedEvent[];
  /** Resumes after the last event; undefined on the last page. */
  nextCursor: string | undefined;
}

/** Dependencies of the list service. */
export interface ListDeps {
  authenticator: Authenticator;
  keyring: Keyring;
  reader: EventReader;
  cursors: CursorCodec;
  /** Waits for the integrator to list what was acknowledged before the request. */
  readYourWrites: ReadYourWrites;
}

/** The List Events operation. */
export interface ListService {
  listEvents(request: ListRequest): Promise<EventPage>;
}

/** Creates the list service. */
export function createListService(deps: ListDeps): ListService {
  return {
    async listEvents(request) {
      const principal = await deps.authenticator.requireReader(request.credential);
      const params = parseListParams(request.params());
      const scope = { projectId: principal.projectId, environment: principal.environment };
      const after =
        params.cursor === undefined ? undefined : deps.cursors.decode(scope, params.cursor);

      // A tenant-restricted reader asking for another tenant sees nothing.
      const restricted = principal.tenantId;
      if (restricted !== undefined && params.tenantId !== undefined) {
        if (params.tenantId !== restricted) return { events: [], nextCursor: undefined };
      }
      const tenantId = restricted ?? params.tenantId;

      const keys = await deps.keyring.forProject(principal.projectId);
      const query: EventPageQuery = {
        ...scope,
        searchTokens: params.searchWords.map((word) => searchTokenId(keys, queryToken(word))),
        limit: params.limit,
        maxBytes: PAGE_MAX_BYTES,
      };
      // Labels as ingestion computed them (event-cipher.ts sealEvent).
      if (params.actorId !== undefined) {
        query.actorIdx = filterIndex(keys, "actorId", params.actorId);
      }
      if (params.entityType !== undefined) {
        query.entityTypeIdx = filterIndex(keys, "entityType", params.entityType);
      }
      if (params.entityId !== undefined) {
        query.entityIdIdx = filterIndex(keys, "entityId", params.entityId);
      }
      if (params.action !== undefined) query.actionIdx = filterIndex(keys, "action", params.action);
      if (tenantId !== undefined) query.tenantIdx = filterIndex(keys, "tenantId", tenantId);
      if (params.from) query.from = params.from;
      if (params.to) query.to = params.to;
      if (after) query.after = after;
      await deps.readYourWrites.awaitIntegrated(scope.projectId, scope.environment);
      const { rows: page, more } = await deps.reader.page(query);
      const events = await Promise.all(
        page.map(async (row): Promise<ListedEvent> => {
          const at = { ...scope, eventId: row.eventId };
          const opened = await openEvent(keys, at, row.keyVersion, row.payload, row.context);
          return {
            eventId: row.eventId,
            occurredAt: row.occurredAt,
            receivedAt: row.receivedAt,
            logIndex: row.logIndex,
            salt: opened.salt,
            payload: opened.payload,
            context: opened.context,
          };
        }),
      );
      const last = page.at(-1);
      const nextCursor =
        more && last
          ? deps.cursors.encode(scope, {
              occurredMicros: last.occurredMicros,
              eventId: last.eventId,
            })
          : undefined;
      return { events, nextCursor };
    },
  };
}
