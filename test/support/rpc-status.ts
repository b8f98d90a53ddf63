/**
 * Decoding of `google.rpc.Status`, the message a gRPC server sends in the
 * `grpc-status-details-bin` trailer, without any Connect code: the three fields are
 * read straight off the wire, so the check does not depend on the library under test.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { type Any, AnySchema, anyUnpack } from "@bufbuild/protobuf/wkt";
import { type BadRequest, BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";

/** A decoded google.rpc.Status. */
export interface RpcStatus {
  code: number;
  message: string;
  details: Any[];
}

/** Decodes the binary form of google.rpc.Status (code = 1, message = 2, details = 3). */
export function decodeRpcStatus(bytes: Uint8Array): RpcStatus {
  const reader = new BinaryReader(bytes);
  const status: RpcStatus = { code: 0, message: "", details: [] };
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === 1) status.code = reader.int32();
    else if (fieldNo === 2) status.message = reader.string();
    else if (fieldNo === 3) status.details.push(fromBinary(AnySchema, reader.bytes()));
    else reader.skip(wireType, fieldNo);
  }
  return status;
}

/** The google.rpc.BadRequest among the details, if there is one. */
export function badRequestOf(status: RpcStatus): BadRequest | undefined {
  for (const detail of status.details) {
    const unpacked = anyUnpack(detail, BadRequestSchema);
    if (unpacked) return unpacked;
  }
  return undefined;
}

/** The `field` of each violation of a BadRequest, in order. */
export function violatedFields(badRequest: BadRequest | undefined): string[] {
  return (badRequest?.fieldViolations ?? []).map((violation) => violation.field);
}
