/**
 * How the REST edge renders the replies of the methods whose REST form differs from
 * their proto JSON (spec sections 2 and 3). The operations (api/) know nothing of it:
 * they say what happened (`created`), and this table says what REST shows for it.
 */
import {
  type DescMessage,
  type DescMethod,
  type JsonValue,
  type Message,
  ScalarType,
  toJson,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import { type CreateEventsResponse, IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { LogService } from "../../gen/audit/v1/log_pb.js";
import type { OperationReply } from "../api/operation.js";

/** The REST rendering of one method. */
export interface RestRendering {
  /** The status of a successful reply; 200 without it. */
  status?: (reply: OperationReply) => number;
  /**
   * Top-level fields the REST body always carries, with the value to show when the
   * message leaves them out. Proto JSON omits unset and empty fields; RPC clients read
   * them from the message.
   */
  defaults?: Readonly<Record<string, JsonValue>>;
  /** The string field whose value is the whole REST body, as `text/plain`. */
  text?: string;
  /**
   * Boolean request fields that may also come from the query string although the body is
   * the whole request (`?atomic=true`): `true` and `false` are the booleans, any other
   * text is passed on as text (the operation refuses it). Given once; in both places, the
   * same value (rest.ts).
   */
  queryFields?: readonly string[];
}

/** Renderings by method; a method not listed answers 200 with its proto JSON. */
export const REST_RENDERINGS: ReadonlyMap<DescMethod, RestRendering> = new Map<
  DescMethod,
  RestRendering
>([
  // 201 for a created event, 200 for a replay of an Idempotency-Key.
  [IngestService.method.createEvent, { status: (reply) => (reply.created ? 201 : 200) }],
  // A batch: 201 when every event was stored, 207 when some were (the others were
  // invalid: every result says which), 200 for a replay of an Idempotency-Key.
  [
    IngestService.method.createEvents,
    {
      status: (reply) => (reply.created ? (allStored(reply) ? 201 : 207) : 200),
      queryFields: ["atomic"],
    },
  ],
  // Both keys always: `"events": []` on an empty page, `"nextCursor": null` on the last.
  [EventService.method.listEvents, { defaults: { events: [], nextCursor: null } }],
  // The verifiable log (docs/verifiable-log.md): the note and the key as they are signed
  // and published; proofs with their position and hashes always.
  [LogService.method.getCheckpoint, { text: "checkpoint" }],
  [LogService.method.getVerifierKey, { text: "verifierKey" }],
  [LogService.method.getInclusionProof, { defaults: { logIndex: 0, hashes: [] } }],
  [LogService.method.getConsistencyProof, { defaults: { hashes: [] } }],
]);

/**
 * Proto JSON writes 64-bit integers as strings; REST bodies write the unsigned ones (log
 * positions and counts, far below 2^53) as JSON numbers, as REST clients expect of a
 * position. Changes `json`, the proto JSON of a `desc` message, in place.
 */
export function uint64AsNumbers(desc: DescMessage, json: JsonValue): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return;
  for (const field of desc.fields) {
    const value = json[field.jsonName];
    if (value === undefined || value === null) continue;
    if (field.fieldKind === "scalar" && field.scalar === ScalarType.UINT64) {
      if (typeof value === "string") json[field.jsonName] = Number(value);
    } else if (field.fieldKind === "list" && field.listKind === "scalar") {
      if (field.scalar === ScalarType.UINT64 && Array.isArray(value)) {
        json[field.jsonName] = value.map((item) =>
          typeof item === "string" ? Number(item) : item,
        );
      }
    } else if (field.fieldKind === "message" && !field.message.typeName.startsWith("google.")) {
      uint64AsNumbers(field.message, value);
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      if (field.message.typeName.startsWith("google.")) continue;
      for (const item of value) uint64AsNumbers(field.message, item);
    }
  }
}

/**
 * Proto JSON leaves out a string field of implicit presence when it is empty; REST
 * bodies write it, so that a value sent as `""` (an event's `entityType`, `entityId`
 * or `actorId`, which the spec allows empty) reads back as sent instead of missing.
 * Changes `json`, the proto JSON of a `desc` message, in place, nested messages too.
 */
export function emptyStringsWritten(desc: DescMessage, json: JsonValue): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return;
  for (const field of desc.fields) {
    const value = json[field.jsonName];
    if (
      field.fieldKind === "scalar" &&
      field.scalar === ScalarType.STRING &&
      field.presence === FeatureSet_FieldPresence.IMPLICIT
    ) {
      json[field.jsonName] ??= "";
      continue;
    }
    if (value === undefined || value === null) continue;
    if (field.fieldKind === "message" && !field.message.typeName.startsWith("google.")) {
      emptyStringsWritten(field.message, value);
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      if (field.message.typeName.startsWith("google.")) continue;
      for (const item of value) emptyStringsWritten(field.message, item);
    }
  }
}

/**
 * A message's REST JSON: its proto JSON with the unsigned 64-bit integers as numbers and
 * the empty strings written. The REST edge answers with it, and the verifiable log commits
 * to an event in exactly this form (docs/verifiable-log.md), so both use this function.
 */
export function restJson(desc: DescMessage, message: Message): JsonValue {
  const json = toJson(desc, message);
  uint64AsNumbers(desc, json);
  emptyStringsWritten(desc, json);
  return json;
}

/** True when every result of a CreateEvents reply is a stored event. */
function allStored(reply: OperationReply): boolean {
  const message = reply.message as Partial<CreateEventsResponse>;
  return (message.results ?? []).every((result) => result.eventId !== undefined);
}
