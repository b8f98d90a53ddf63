/**
 * The Connect routes (gRPC, gRPC-Web, Connect JSON and binary): each method delegates
 * to its protocol-free operation with the facts the edge computed; an interceptor maps
 * errors at one boundary and hands the unexpected ones to the error reporter.
 */
import { type DescMethod, type Message, toJson } from "@bufbuild/protobuf";
import type {
  ConnectError,
  ConnectRouter,
  HandlerContext,
  Interceptor,
  MethodImpl,
} from "@connectrpc/connect";
import { AdminService } from "../../gen/audit/v1/admin_pb.js";
import type { Operation, OperationReply, Operations, StreamOperations } from "../api/operation.js";
import type { RequestFacts } from "../api/request-facts.js";
import { ServiceError } from "../errors.js";
import { rpcReadMaxBytes } from "./body-limits.js";
import { factsOf, requestFactsKey } from "./connect-context.js";
import { toConnectError } from "./connect-errors.js";
import type { ErrorReporter } from "./error-reporter.js";
import { lenientJson } from "./lenient-json.js";

/** Registers every operation as an RPC. */
export function connectRoutes(operations: Operations): (router: ConnectRouter) => void {
  return (router) => {
    for (const [method, operation] of operations) {
      const handler = async (request: Message, context: HandlerContext): Promise<Message> => {
        const reply = await callOperation(
          operation,
          method,
          request,
          factsOf(context.values),
          (name) => context.requestHeader.get(name),
        );
        for (const [name, value] of Object.entries(reply.headers ?? {})) {
          context.responseHeader.set(name, value);
        }
        return reply.message;
      };
      // Every operation is unary; the router's generic signature cannot see that here.
      router.rpc(method, handler as unknown as MethodImpl<DescMethod>, {
        readMaxBytes: rpcReadMaxBytes(method),
        jsonOptions: jsonOptions(method),
      });
    }
  };
}

/**
 * How a method's JSON is read and written. AdminService's answers carry every field
 * (zero counts and empty lists too), and its requests are read strictly: an unknown field or enum
 * name is refused (InvalidArgument), because read leniently it is dropped, and the
 * defaults there change data: `"environment": "ENVIRONMENT_PROD"` read as unset set the
 * retention of both environments (an outside audit, 2026-11-28), a misspelt
 * `retentionDay` would keep events for ever. The other services ignore unknown fields,
 * Connect's default, so that a client built from a newer contract still works.
 */
function jsonOptions(method: DescMethod): {
  ignoreUnknownFields: boolean;
  alwaysEmitImplicit: boolean;
} {
  const admin = method.parent.typeName === AdminService.typeName;
  // An admin answer has every field: a script reading `.erased` of a dry run gets 0.
  return { ignoreUnknownFields: !admin, alwaysEmitImplicit: admin };
}

/**
 * Registers the bidirectional streaming operations (IngestEvents). Their errors are
 * mapped here, not by the error boundary: they surface while the replies are read, after
 * the interceptor has returned.
 */
export function bidiStreamRoutes(
  streams: StreamOperations,
  reporter: ErrorReporter,
): (router: ConnectRouter) => void {
  return (router) => {
    for (const [method, operation] of streams) {
      const handler = async function* (requests: AsyncIterable<Message>, context: HandlerContext) {
        const facts = factsOf(context.values);
        try {
          yield* operation({
            facts,
            header: (name) => context.requestHeader.get(name) ?? undefined,
            signal: context.signal,
            requests: (async function* () {
              for await (const request of requests) yield () => requestJson(method, request);
            })(),
          });
        } catch (error) {
          throw rpcError(reporter, error, facts, context.url);
        }
      };
      router.rpc(method, handler as unknown as MethodImpl<DescMethod>, {
        readMaxBytes: rpcReadMaxBytes(method),
        jsonOptions: jsonOptions(method),
      });
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
  facts: RequestFacts,
  header: (name: string) => string | null | undefined,
): Promise<OperationReply> {
  return operation({
    facts,
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
    // A non-finite number or a Value without a kind: written as held, for validation to
    // refuse that field (lenient-json.ts).
    try {
      return lenientJson(method.input, request);
    } catch {
      const detail = error instanceof Error ? error.message : "invalid request";
      throw new ServiceError("bad_request", `Invalid request: ${detail}`);
    }
  }
}

/** Maps thrown errors to ConnectErrors at the boundary of every RPC; reports the unexpected. */
export function errorBoundary(reporter: ErrorReporter): Interceptor {
  return (next) => async (request) => {
    try {
      return await next(request);
    } catch (error) {
      throw rpcError(reporter, error, request.contextValues.get(requestFactsKey), request.url);
    }
  };
}

/** The ConnectError an RPC answers for `error`, on every RPC path, reported when unexpected. */
export function rpcError(
  reporter: ErrorReporter,
  error: unknown,
  facts: RequestFacts | undefined,
  procedure: string,
): ConnectError {
  reporter.report(error, facts, { procedure });
  return toConnectError(error);
}
