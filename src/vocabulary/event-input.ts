/**
 * The JSON shape of a valid Event (proto/audit/v1/event.proto), as the validator returns
 * it (ingest/event-input.ts) and as crypto/ seals its changes. A leaf module.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

export type ActorType = "user" | "service" | "system";

/** One change of a valid event. */
export interface ChangeInput {
  op: "set" | "unset" | "add" | "remove";
  path: string;
  before: JsonValue;
  after: JsonValue;
  redacted?: boolean;
}

/** A valid event, as the caller sent it (known fields only). */
export interface EventInput {
  actionKey?: string;
  action?: string;
  actionDescription?: string;
  entityType: string;
  entityId: string;
  actorType?: ActorType;
  actorId: string;
  actorDisplay?: string;
  tenantId?: string;
  occurredAt?: string;
  source?: string;
  context?: JsonObject;
  changes?: ChangeInput[];
}
