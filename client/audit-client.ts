/**
 * A typed TypeScript client of the audit service over Connect, gRPC or gRPC-Web: the
 * generated code of gen/ behind a thin factory that takes and returns plain JSON where the
 * protos use google.protobuf.Value (each change's `before` and `after`), so that
 * `after: 2` works as it does over REST, and that turns the other protobuf types into
 * plain ones (`logIndex` a number, `salt` base64, absent cursors `null`). The transport is
 * the caller's: `@connectrpc/connect-node` on a server, `@connectrpc/connect-web` in a
 * browser (with a frontend token, ListEvents only). docs/sdk.md shows it in use.
 *
 * Invariants: a request is sent as given (no retry, no default filled in here: the service
 * owns every rule); errors are the transport's ConnectError, with helpers below to read
 * the field violations and the retry delay the service attaches.
 */
import { create, fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { EventSchema, type StoredEvent } from "../gen/audit/v1/event_pb.js";
import { EventService } from "../gen/audit/v1/events_pb.js";
import { IngestService } from "../gen/audit/v1/ingest_pb.js";
import { TokenService } from "../gen/audit/v1/tokens_pb.js";
import { BadRequestSchema, RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";

/** One change of an event, with plain JSON values. */
export interface ChangeInput {
  op: "set" | "unset" | "add" | "remove";
  path: string;
  before: JsonValue;
  after: JsonValue;
  redacted?: boolean;
}

/** An event to create, as REST takes it. */
export interface EventInput {
  actionKey?: string;
  action?: string;
  actionDescription?: string;
  entityType: string;
  entityId: string;
  actorType?: "user" | "service" | "system";
  actorId: string;
  actorDisplay?: string;
  tenantId?: string;
  occurredAt?: string;
  source?: string;
  context?: JsonObject;
  changes?: ChangeInput[];
}

/** A listed event, as REST shows it (strings HTML-encoded by the service). */
export interface ListedEvent {
  eventId: string;
  receivedAt: string;
  occurredAt: string;
  actionKey?: string | undefined;
  action?: string | undefined;
  actionDescription?: string | undefined;
  entityType: string;
  entityId: string;
  actorType: string;
  actorId: string;
  actorDisplay?: string | undefined;
  tenantId?: string | undefined;
  source?: string | undefined;
  context?: JsonObject | undefined;
  changes: { op: string; path: string; before: JsonValue; after: JsonValue; redacted?: boolean }[];
  logIndex?: number;
  /** Base64. */
  salt: string;
}

/** The parameters of List Events (see docs/api.md). */
export interface ListParams {
  actorId?: string;
  entityType?: string;
  entityId?: string;
  action?: string;
  tenantId?: string;
  q?: string;
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

/** Options of the client. */
export interface AuditClientOptions {
  /** An API key (`pk_...`) or a frontend token, sent as `authorization: Bearer ...`. */
  credential: string;
}

/** The client. */
export interface AuditClient {
  /** Records an event; with `idempotencyKey`, a retry answers the original (`replayed`). */
  createEvent(
    event: EventInput,
    options?: { idempotencyKey?: string; signal?: AbortSignal },
  ): Promise<{ eventId: string; receivedAt: string; replayed: boolean }>;
  /** One page of events, newest first; `nextCursor` null on the last page. */
  listEvents(params?: ListParams): Promise<{ events: ListedEvent[]; nextCursor: string | null }>;
  /** Every event that matches, following the cursors. */
  listAll(params?: Omit<ListParams, "cursor">): AsyncIterable<ListedEvent>;
  /** A read-only token for a browser (with an API key). */
  createFrontendToken(options?: {
    expiresInSeconds?: number;
    tenantId?: string;
  }): Promise<{ token: string; expiresAt: string }>;
}

/** Creates a client over `transport`. */
export function createAuditClient(transport: Transport, options: AuditClientOptions): AuditClient {
  const headers = { authorization: `Bearer ${options.credential}` };
  const ingest = createClient(IngestService, transport);
  const events = createClient(EventService, transport);
  const tokens = createClient(TokenService, transport);

  const listEvents: AuditClient["listEvents"] = async (params = {}) => {
    const page = await events.listEvents(params, { headers });
    return { events: page.events.map(plainEvent), nextCursor: page.nextCursor ?? null };
  };

  return {
    async createEvent(event, callOptions = {}) {
      const { changes, ...fields } = event;
      const message = create(EventSchema, {
        ...fields,
        changes: (changes ?? []).map((change) => ({
          ...change,
          before: fromJson(ValueSchema, change.before),
          after: fromJson(ValueSchema, change.after),
        })),
      });
      let replayed = false;
      const created = await ingest.createEvent(message, {
        headers: callOptions.idempotencyKey
          ? { ...headers, "idempotency-key": callOptions.idempotencyKey }
          : headers,
        ...(callOptions.signal ? { signal: callOptions.signal } : {}),
        onHeader: (received) => {
          replayed = received.get("idempotent-replayed") === "true";
        },
      });
      return { eventId: created.eventId, receivedAt: created.receivedAt, replayed };
    },
    listEvents,
    async *listAll(params = {}) {
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<typeof listEvents>> = await listEvents({
          ...params,
          ...(cursor ? { cursor } : {}),
        });
        yield* page.events;
        cursor = page.nextCursor;
      } while (cursor !== null);
    },
    async createFrontendToken(request = {}) {
      const issued = await tokens.createFrontendToken(request, { headers });
      return { token: issued.token, expiresAt: issued.expiresAt };
    },
  };
}

/** A listed event with plain values. */
function plainEvent(event: StoredEvent): ListedEvent {
  const { $typeName: _, changes, logIndex, salt, context, ...fields } = event;
  return {
    ...fields,
    ...(context ? { context } : {}),
    changes: changes.map((change) => ({
      op: change.op ?? "",
      path: change.path ?? "",
      before: change.before ? toJson(ValueSchema, change.before) : null,
      after: change.after ? toJson(ValueSchema, change.after) : null,
      ...(change.redacted === undefined ? {} : { redacted: change.redacted }),
    })),
    ...(logIndex === undefined ? {} : { logIndex: Number(logIndex) }),
    salt: base64Encode(salt),
  };
}

/** The field violations of a validation error (`[]` for any other error). */
export function fieldViolations(
  error: unknown,
): { field: string; description: string; reason: string }[] {
  return ConnectError.from(error)
    .findDetails(BadRequestSchema)
    .flatMap((badRequest) =>
      badRequest.fieldViolations.map((violation) => ({
        field: violation.field,
        description: violation.description,
        reason: violation.reason,
      })),
    );
}

/** The seconds to wait before retrying a rate-limited call, or undefined. */
export function retryDelaySeconds(error: unknown): number | undefined {
  const [retry] = ConnectError.from(error).findDetails(RetryInfoSchema);
  return retry?.retryDelay ? Number(retry.retryDelay.seconds) : undefined;
}
