/**
 * The Connect routes (gRPC, gRPC-Web, Connect JSON and binary): each method delegates
 * to its protocol-free operation; an interceptor maps errors at one boundary.
 */
import { type DescMethod, type Message, toJson } from "@bufbuild/protobuf";
import type {
  ConnectError,
  ConnectRouter,
  HandlerContext,
  Interceptor,
  MethodImpl,
} from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Operation, OperationReply, Operations } from "../api/operation.js";
import { Messages, ServiceError } from "../errors.js";
import { NUMBER_OUT_OF_RANGE } from "../vocabulary/json-limits.js";
import { toConnectError } from "./connect-errors.js";

/** Registers every operation as an RPC. */
export function connectRoutes(operations: Operations): (router: ConnectRouter) => void {
  return (router) => {
    for (const [method, operation] of operations) {
      const handler = async (request: Message, context: HandlerContext): Promise<Message> => {
        const reply = await callOperation(operation, method, request, (name) =>
          context.requestHeader.get(name),
        );
        for (const [name, value] of Object.entries(reply.headers ?? {})) {
          context.responseHeader.set(name, value);
        }
        return reply.message;
      };
      // Every operation is unary; the router's generic signature cannot see that here.
      router.rpc(method, handler as unknown as MethodImpl<DescMethod>);
    }
  };
}

/**
 * One RPC call of an operation, as every RPC path makes it (these routes and the lean
 * gRPC path, grpc-unary.ts): the request's JSON form is the decoded message.
 */
export function callOperation(
  operation: Operation,
  method: DescMethod,
  request: Message,
  header: (name: string) => string | null | undefined,
): Promise<OperationReply> {
  return operation({
    header: (name) => header(name) ?? undefined,
    readJson: () => requestJson(method, request),
  });
}

/**
 * The JSON form of a decoded request, or a 400 for one that has none: a number beyond the
 * range of a double in a google.protobuf.Value (context, before, after: `1e400` in Connect
 * JSON, Infinity or NaN in binary) is refused as REST refuses it (validation.ts), without
 * the path, which toJson does not tell; anything else (a Value with no kind set) as an
 * invalid request, as `decodeRequest` does.
 */
function requestJson(method: DescMethod, request: Message) {
  try {
    return toJson(method.input, request);
  } catch (error) {
    const detail = error instanceof Error ? error.message : "invalid request";
    if (/NaN or Infinity/.test(detail)) {
      throw new ServiceError("validation", Messages.validationFailed, {
        issues: [{ path: [], message: NUMBER_OUT_OF_RANGE, code: "custom" }],
      });
    }
    throw new ServiceError("bad_request", `Invalid request: ${detail}`);
  }
}

/** Maps thrown errors to ConnectErrors; logs the unexpected ones with the request id. */
export function errorBoundary(logger: Logger): Interceptor {
  return (next) => async (request) => {
    try {
      return await next(request);
    } catch (error) {
      throw rpcError(logger, error, request.header.get("x-request-id"), request.url);
    }
  };
}

/**
 * The ConnectError an RPC answers for `error`, on every RPC path; an unexpected one is
 * logged with the request id and the procedure's URL.
 */
export function rpcError(
  logger: Logger,
  error: unknown,
  requestId: string | null | undefined,
  procedure: string,
): ConnectError {
  const mapped = toConnectError(error);
  if (mapped.unexpected) {
    logger.error({ err: error, reqId: requestId, procedure }, "request failed");
  }
  return mapped.error;
}
