/**
 * Reading request bodies within a size limit, counted while streaming: a declared
 * Content-Length over the limit is refused before reading, and a body that grows past
 * it is refused as soon as it does, never buffering more than the limit.
 */
import { Messages, ServiceError } from "../errors.js";
import { MAX_EVENT_BYTES, MAX_NESTING, nestingDepth } from "../vocabulary/json-limits.js";
import type { NodeRequest } from "./node-http.js";

/** The spec's request size limit: 1 MB. */
export const MAX_BODY_BYTES = MAX_EVENT_BYTES;

/** Reads the whole body, or throws a 413 ServiceError past `limit` bytes. */
export async function readBody(req: NodeRequest, limit: number = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    throw new ServiceError("payload_too_large", Messages.payloadTooLarge);
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        finish();
        reject(new ServiceError("payload_too_large", Messages.payloadTooLarge));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      finish();
      resolve(chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, size));
    };
    // The client went away (or timed out) mid-body: its fault, not an internal failure
    // (node reports it as ECONNRESET, which would otherwise read as a database outage).
    const onAbort = () => {
      finish();
      reject(new ServiceError("bad_request", "Request body was not fully received"));
    };
    const onClose = () => {
      if (!req.readableEnded) onAbort();
    };
    const finish = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("close", onClose);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("close", onClose);
  });
}

/**
 * Parses a JSON request body. The content type must be `application/json` (a charset
 * parameter is allowed, and must be UTF-8); the body must be valid UTF-8 JSON, sent
 * without a content coding (`identity` at most): compressed bytes would otherwise be
 * refused as malformed JSON, which would not tell the caller why.
 */
export function parseJsonBody(
  contentType: string | undefined,
  body: Buffer,
  contentEncoding?: string,
  maxNesting = MAX_NESTING,
): unknown {
  const [mediaType = "", ...params] = (contentType ?? "").split(";").map((p) => p.trim());
  if (mediaType.toLowerCase() !== "application/json") {
    throw new ServiceError("bad_request", "Content-Type must be application/json");
  }
  const coding = contentEncoding?.trim().toLowerCase();
  if (coding !== undefined && coding !== "" && coding !== "identity") {
    throw new ServiceError(
      "bad_request",
      "Content-Encoding is not supported: send the body uncompressed",
    );
  }
  const charset = params
    .map((param) => /^charset=\s*"?([^";]+)"?$/i.exec(param)?.[1])
    .find((value) => value !== undefined);
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ServiceError("bad_request", "Content-Type charset must be utf-8");
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    throw new ServiceError("bad_request", "Request body is not valid UTF-8");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ServiceError("bad_request", "Request body is not valid JSON");
  }
  // After parsing, so that malformed JSON keeps its own message. A body with no more
  // brackets than the limit cannot nest deeper: most bodies skip the scan.
  if (bracketCount(text) > maxNesting && nestingDepth(text) > maxNesting) {
    throw new ServiceError(
      "bad_request",
      `Request body is nested more than ${maxNesting} levels deep`,
    );
  }
  return parsed;
}

/** How many `{` and `[` the text holds, strings included (a bound on the nesting). */
function bracketCount(text: string): number {
  let count = 0;
  for (const bracket of ["{", "["]) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) count++;
  }
  return count;
}
