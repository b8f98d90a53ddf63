/** Decoding an operation's JSON request into its message, with a 400 on bad input. */
import { type DescMessage, fromJson, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { ServiceError } from "../errors.js";
import type { OperationCall } from "./operation.js";

/** The call's request as a `schema` message; unknown fields are ignored. */
export function decodeRequest<Desc extends DescMessage>(
  schema: Desc,
  call: OperationCall,
): MessageShape<Desc> {
  const json = call.readJson();
  try {
    return fromJson(schema, json as JsonValue, { ignoreUnknownFields: true });
  } catch (error) {
    const detail = error instanceof Error ? error.message : "invalid request";
    throw new ServiceError("bad_request", `Invalid request: ${detail}`);
  }
}
