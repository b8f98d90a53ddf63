/**
 * The one place where errors become ConnectErrors for gRPC, gRPC-Web and Connect
 * clients: the gRPC code that fits, the same message as REST, and structured details
 * (google.rpc BadRequest, QuotaFailure, RetryInfo) so a generated client can act on
 * them. Anything unknown is Internal with a fixed message (the error reporter logs the
 * cause).
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import { Messages, type ServiceError, toServiceError } from "../errors.js";

const CODE: Record<ServiceError["kind"], Code> = {
  bad_request: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  quota_exceeded: Code.ResourceExhausted,
  not_found: Code.NotFound,
  conflict: Code.AlreadyExists,
  payload_too_large: Code.ResourceExhausted,
  validation: Code.InvalidArgument,
  rate_limited: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
};

/** The ConnectError for any error thrown by an operation (connect's own pass unchanged). */
export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  const known = toServiceError(error);
  if (!known) return new ConnectError(Messages.internal, Code.Internal);
  const details = [];
  const { issues, quota, retryAfterSeconds } = known.facts;
  if (issues) {
    details.push({
      desc: BadRequestSchema,
      value: create(BadRequestSchema, {
        fieldViolations: issues.map((issue) => ({
          field: fieldPath(issue.path),
          description: issue.message,
          reason: issue.code,
        })),
      }),
    });
  }
  if (quota) {
    details.push({
      desc: QuotaFailureSchema,
      value: create(QuotaFailureSchema, {
        violations: [
          {
            subject: `plan:${quota.plan}`,
            description: `${quota.current} of ${quota.limit} events this month`,
          },
        ],
      }),
    });
  }
  if (retryAfterSeconds !== undefined) {
    details.push({
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, {
        retryDelay: { seconds: BigInt(retryAfterSeconds), nanos: 0 },
      }),
    });
  }
  return new ConnectError(known.message, CODE[known.kind], undefined, details);
}

/** `["changes", 3, "op"]` as `changes[3].op`, the google.rpc field path form. */
function fieldPath(path: (string | number)[]): string {
  return path
    .map((part, index) =>
      typeof part === "number" ? `[${part}]` : index === 0 ? part : `.${part}`,
    )
    .join("");
}
