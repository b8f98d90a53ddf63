/**
 * Request size limits by method. The spec's limit is 1 MB (413 `Request payload too
 * large`); a batch of events (CreateEvents) may be up to 5 MB, on REST and on every RPC
 * protocol alike. A stream's limit is per message.
 */
import { type DescMethod, getOption } from "@bufbuild/protobuf";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { MAX_NESTING } from "../vocabulary/json-limits.js";
import { MAX_BODY_BYTES } from "./body.js";

/** The limit of a batch of events: 5 MB. */
export const MAX_BATCH_BODY_BYTES = 5 * 1024 * 1024;

const LIMITS: ReadonlyMap<DescMethod, number> = new Map([
  [IngestService.method.createEvents, MAX_BATCH_BODY_BYTES],
]);

/**
 * How deep a REST body of `method` may nest: a batch's events sit two levels down
 * (`{"events": [...]}`), so that each may nest as deep as a Create Event body.
 */
export function restBodyNesting(method: DescMethod): number {
  return method === IngestService.method.createEvents ? MAX_NESTING + 2 : MAX_NESTING;
}

/** The most bytes of a REST request body for `method`. */
export function restBodyLimit(method: DescMethod): number {
  return LIMITS.get(method) ?? MAX_BODY_BYTES;
}

/** The most bytes of one RPC message for `method`. */
export function rpcReadMaxBytes(method: DescMethod): number {
  return LIMITS.get(method) ?? MAX_BODY_BYTES;
}

// The URL paths of the methods with a larger limit: REST (from the annotation) and RPC.
const LARGE_PATHS: ReadonlyMap<string, number> = new Map(
  [...LIMITS].flatMap(([method, limit]) => {
    const rule = getOption(method, httpRule).pattern;
    const rest = rule.case === "post" ? [[rule.value, limit] as const] : [];
    return [...rest, [`/${method.parent.typeName}/${method.name}`, limit] as const];
  }),
);

/**
 * The limit of a request by its URL, before it is routed (`Expect: 100-continue` is
 * answered from it).
 */
export function bodyLimitForUrl(url: string | undefined): number {
  const path = (url ?? "").split("?", 1)[0] ?? "";
  return LARGE_PATHS.get(path) ?? MAX_BODY_BYTES;
}
