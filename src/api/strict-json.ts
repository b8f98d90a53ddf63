/**
 * The strict reading of a request's JSON text (AdminService's, whose defaults change
 * data): what JSON.parse and proto3 JSON would each resolve silently is refused instead.
 * - a member given twice (at any depth): JSON.parse keeps the last, so an erasure that
 *   named one subject first would erase another's events;
 * - one field under both its names (`actorId` and `actor_id`): the message decoder keeps
 *   whichever comes last;
 * - `null` for a field (except a google.protobuf.Value, where null is a value): proto3
 *   JSON reads it as the default, so an unset shell variable (`"retentionDays": null`)
 *   would keep events for ever, or `"environment": null` set both environments.
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { duplicateMember } from "../tlog/event-input.js";
import { nestingDepth } from "../vocabulary/json-limits.js";

/** What makes `text` ambiguous as a request of `input`, in words; undefined when nothing. */
export function strictJsonProblem(text: string, input: DescMessage): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined; // Not JSON: the decoder refuses it with its own message.
  }
  // No request of these nests more than a few levels; the member scan recurses.
  if (nestingDepth(text) > MAX_DEPTH) return `the request nests deeper than ${MAX_DEPTH} levels`;
  const repeated = duplicateMember(text);
  if (repeated !== undefined) return `${repeated} must be given once`;
  return messageProblem(json, input, "");
}

const MAX_DEPTH = 32;

function messageProblem(json: unknown, input: DescMessage, path: string): string | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const seen = new Set<DescField>();
  for (const [name, value] of Object.entries(json)) {
    const field = input.fields.find((f) => f.jsonName === name || f.name === name);
    if (field === undefined) continue; // Unknown: the strict decoder refuses it.
    const at = `${path}${field.jsonName}`;
    if (seen.has(field)) {
      return `${at} must be given once (${field.jsonName} and ${field.name} are one field)`;
    }
    seen.add(field);
    if (value === null) {
      if (field.message?.typeName === "google.protobuf.Value") continue;
      return `${at} must not be null: leave it out for its default`;
    }
    const nested = field.message;
    if (nested === undefined || field.fieldKind === "map") continue;
    const items = field.fieldKind === "list" && Array.isArray(value) ? value : [value];
    for (const [index, item] of items.entries()) {
      const itemPath = field.fieldKind === "list" ? `${at}[${index}].` : `${at}.`;
      const problem = messageProblem(item, nested, itemPath);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}
