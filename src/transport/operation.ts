/**
 * The protocol-free shape of one RPC method's implementation. The Connect routes
 * (gRPC, gRPC-Web, Connect) and the REST transcoder both call these, so a rule lives
 * once: neither transport implements any.
 */
import type { DescMethod, JsonValue, Message } from "@bufbuild/protobuf";
import type { HeaderLookup } from "../auth/credentials.js";

/** One call of a method, as any transport presents it. */
export interface OperationCall {
  header: HeaderLookup;
  /**
   * The request in its JSON form (REST: body, path and query merged; RPC: the decoded
   * message). Lazy: a REST body is only checked (content type, JSON syntax) when read,
   * and throws a 400 ServiceError then.
   */
  readJson: () => unknown;
}

/** What a method answers. */
export interface OperationReply {
  message: Message;
  /** The REST status when it is not 200 (201 for a created event). */
  restStatus?: number;
  /** Response headers for every protocol. */
  headers?: Record<string, string>;
  /**
   * REST only: top-level fields the REST body always carries, with the value to show
   * when the message leaves them out (ListEvents: `events: []`, `nextCursor: null`).
   * Proto JSON omits unset and empty fields; RPC clients read them from the message.
   */
  restDefaults?: Readonly<Record<string, JsonValue>>;
}

/** The implementation of one method. */
export type Operation = (call: OperationCall) => Promise<OperationReply>;

/** Implementations by method. */
export type Operations = Map<DescMethod, Operation>;
