/**
 * The Connect routes (gRPC, gRPC-Web, Connect JSON and binary): each method delegates
 * to its protocol-free operation; an interceptor maps errors at one boundary.
 */
import { type DescMethod, type Message, toJson } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext, Interceptor, MethodImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { toConnectError } from "./connect-errors.js";
import type { Operations } from "./operation.js";

/** Registers every operation as an RPC. */
export function connectRoutes(operations: Operations): (router: ConnectRouter) => void {
  return (router) => {
    for (const [method, operation] of operations) {
      const handler = async (request: Message, context: HandlerContext): Promise<Message> => {
        const reply = await operation({
          header: (name) => context.requestHeader.get(name) ?? undefined,
          readJson: () => toJson(method.input, request),
        });
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

/** Maps thrown errors to ConnectErrors; logs the unexpected ones with the request id. */
export function errorBoundary(logger: Logger): Interceptor {
  return (next) => async (request) => {
    try {
      return await next(request);
    } catch (error) {
      const mapped = toConnectError(error);
      if (mapped.unexpected) {
        logger.error(
          { err: error, reqId: request.header.get("x-request-id"), procedure: request.url },
          "request failed",
        );
      }
      throw mapped.error;
    }
  };
}
