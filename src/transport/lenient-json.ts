/**
 * The JSON of an RPC request that protobuf-es's toJson refuses because a
 * google.protobuf.Value, Struct or ListValue in it holds what JSON cannot write: NaN or an
 * infinity, or a Value with no kind set. Those are written as the JavaScript values they
 * hold (the number itself; undefined for no kind) and everything else as toJson writes
 * it, so that validation refuses the one field that holds them, with its path, as it
 * refuses `1e400` (Infinity) or a missing `before` in a REST body, and a batch stores its
 * other events, as over REST. (toJson failing on one event used to fail the whole
 * request, with no field named.)
 */
import { create, type DescField, type DescMessage, type Message, toJson } from "@bufbuild/protobuf";

/** The well-known types protobuf-es holds as JSON (Struct) or as JSON-like messages. */
const JSON_TYPES = new Set([
  "google.protobuf.Value",
  "google.protobuf.Struct",
  "google.protobuf.ListValue",
]);

/** A google.protobuf.Value message as protobuf-es holds it. */
interface ValueMessage {
  kind: { case: string | undefined; value?: unknown };
}

/** The request's JSON, with what JSON cannot write left as the values that hold it. */
export function lenientJson(desc: DescMessage, message: Message): Record<string, unknown> {
  const held = message as unknown as Record<string, unknown>;
  const special = desc.fields.filter((field) => holdsJsonType(field, new Set()));
  // The message without those fields, written by toJson; then each of them by hand.
  const init: Record<string, unknown> = { ...held };
  for (const field of special) {
    init[field.localName] =
      field.fieldKind === "list" ? [] : field.fieldKind === "map" ? {} : undefined;
  }
  const json = toJson(desc, create(desc, init as never)) as Record<string, unknown>;
  for (const field of special) {
    const value = held[field.localName];
    if (value === undefined || value === null) continue;
    if (field.fieldKind === "list") {
      const items = value as unknown[];
      if (items.length > 0) json[field.jsonName] = items.map((item) => fieldValue(field, item));
    } else if (field.fieldKind === "map") {
      const entries = Object.entries(value as Record<string, unknown>);
      json[field.jsonName] = Object.fromEntries(entries.map(([k, v]) => [k, fieldValue(field, v)]));
    } else {
      json[field.jsonName] = fieldValue(field, value);
    }
  }
  return json;
}

/** One value of `field` (an item, for a list or a map). */
function fieldValue(field: DescField, value: unknown): unknown {
  const type = field.message;
  if (type === undefined) return value;
  switch (type.typeName) {
    case "google.protobuf.Struct":
      // Held as a JSON object already (NaN stays NaN).
      return value;
    case "google.protobuf.Value":
      return heldValue(value as ValueMessage);
    case "google.protobuf.ListValue":
      return (value as { values: ValueMessage[] }).values.map(heldValue);
    default:
      return lenientJson(type, value as Message);
  }
}

/** A Value message's JavaScript value: undefined when no kind is set. */
function heldValue(value: ValueMessage | undefined): unknown {
  const kind = value?.kind;
  switch (kind?.case) {
    case "nullValue":
      return null;
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return kind.value;
    case "structValue": {
      const fields = (kind.value as { fields: Record<string, ValueMessage> }).fields;
      return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, heldValue(v)]));
    }
    case "listValue":
      return (kind.value as { values: ValueMessage[] }).values.map(heldValue);
    default:
      return undefined;
  }
}

/** Whether a field is, or holds (at any depth of its message), one of the JSON types. */
function holdsJsonType(field: DescField, seen: Set<string>): boolean {
  if (field.oneof !== undefined) return false; // left to toJson (none in these contracts)
  const type = field.message;
  if (type === undefined) return false;
  if (JSON_TYPES.has(type.typeName)) return true;
  if (seen.has(type.typeName)) return false;
  seen.add(type.typeName);
  return type.fields.some((inner) => holdsJsonType(inner, seen));
}
