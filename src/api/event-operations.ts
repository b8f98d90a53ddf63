/**
 * EventService's operation: ListEvents over REST and every RPC protocol. Renders each
 * listed event as a StoredEvent: every field that was created, as stored (strings
 * HTML-encoded by ingestion), with eventId, receivedAt, occurredAt, its logIndex and the
 * salt the verifiable log hashes it with.
 */
import { create, fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { ChangeSchema, type StoredEvent, StoredEventSchema } from "../../gen/audit/v1/event_pb.js";
import { EventService, ListEventsResponseSchema } from "../../gen/audit/v1/events_pb.js";
import type { ListedEvent, ListService } from "../events/list-service.js";
import type { Operations } from "./operation.js";

/** The operations of EventService. */
export function eventOperations(list: ListService): Operations {
  return new Map([
    [
      EventService.method.listEvents,
      async (call) => {
        const page = await list.listEvents({
          credential: call.facts.credential,
          params: call.readJson,
        });
        return {
          message: create(ListEventsResponseSchema, {
            events: page.events.map(storedEventMessage),
            ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
          }),
        };
      },
    ],
  ]);
}

/** A listed event as the API shows it. */
export function storedEventMessage(event: ListedEvent): StoredEvent {
  const { payload } = event;
  return create(StoredEventSchema, {
    eventId: event.eventId,
    receivedAt: event.receivedAt.toISOString(),
    occurredAt: event.occurredAt.toISOString(),
    logIndex: event.logIndex,
    salt: event.salt,
    entityType: payload.entityType,
    entityId: payload.entityId,
    actorType: payload.actorType,
    actorId: payload.actorId,
    ...(payload.actionKey === undefined ? {} : { actionKey: payload.actionKey }),
    ...(payload.action === undefined ? {} : { action: payload.action }),
    ...(payload.actionDescription === undefined
      ? {}
      : { actionDescription: payload.actionDescription }),
    ...(payload.actorDisplay === undefined ? {} : { actorDisplay: payload.actorDisplay }),
    ...(payload.tenantId === undefined ? {} : { tenantId: payload.tenantId }),
    ...(payload.source === undefined ? {} : { source: payload.source }),
    ...(event.context === undefined ? {} : { context: event.context }),
    changes: (payload.changes ?? []).map((change) =>
      create(ChangeSchema, {
        op: change.op,
        path: change.path,
        before: fromJson(ValueSchema, change.before),
        after: fromJson(ValueSchema, change.after),
        ...(change.redacted === undefined ? {} : { redacted: change.redacted }),
      }),
    ),
  });
}
