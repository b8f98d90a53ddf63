/**
 * The protocol-free contract of one RPC method: what a call presents and what it
 * answers. The Connect routes (gRPC, gRPC-Web, Connect) and the REST transcoder both
 * call these, so a rule lives once: neither transport implements any, and nothing here
 * knows which protocol carried the call (REST rendering, such as the 201 of a created
 * event, is a table of the REST edge: transport/rest-rendering.ts).
 */
import type { DescMethod, Message } from "@bufbuild/protobuf";
import type { HeaderLookup } from "../auth/credentials.js";
import type { RequestFacts } from "./request-facts.js";

/** One call of a method, as any transport presents it. */
export interface OperationCall {
  /** Computed once at the edge: request id, HTTPS, peer, credential. */
  facts: RequestFacts;
  /** The request's other headers (Idempotency-Key). */
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
  /** Response headers for every protocol. */
  headers?: Record<string, string>;
  /**
   * True when the call created what it names (an event stored now, not a replay): REST
   * answers 201 for the methods whose table says so.
   */
  created?: boolean;
}

/** The implementation of one method. */
export type Operation = (call: OperationCall) => Promise<OperationReply>;

/** Implementations by method. */
export type Operations = Map<DescMethod, Operation>;

/** One call of a bidirectional streaming method, as any RPC transport presents it. */
export interface StreamCall {
  /** Computed once at the edge, when the stream opened. */
  facts: RequestFacts;
  /** The stream's request headers. */
  header: HeaderLookup;
  /**
   * The requests, in order, each in its JSON form: reading one may throw a 400 or 422
   * ServiceError for that request alone. The iterable is consumed only as fast as the
   * operation asks (its flow control).
   */
  requests: AsyncIterable<() => unknown>;
  /** Aborts when the client goes away (cancels, resets, disconnects). */
  signal?: AbortSignal;
}

/** The implementation of one streaming method: a reply message per answer. */
export type StreamOperation = (call: StreamCall) => AsyncIterable<Message>;

/** Streaming implementations by method. */
export type StreamOperations = Map<DescMethod, StreamOperation>;
