/**
 * The RPC forms (gRPC, gRPC-Web, Connect) of the streaming methods: ExportEvents and
 * FollowEvents, server streams of chunk messages. connect-node writes each message and
 * waits for the connection to drain before asking for the next (backpressure), and
 * aborts `context.signal` when the client cancels or goes away, which stops the stream
 * before its next page is read.
 *
 * A stream the runtime aborts (the call's deadline, `grpc-timeout` or
 * `connect-timeout-ms`, has passed; or the client went away) ends with the abort's error,
 * DEADLINE_EXCEEDED for a deadline: its chunks stop quietly, and ending the generator
 * then would have told the client OK with the export cut short. An export's range is
 * sent as REST sends it, in the response headers `x-export-from-index` and
 * `x-export-end-index` (end exclusive), so a client can tell where a complete one ends.
 *
 * Errors are mapped here, not by the error boundary interceptor: a stream's errors
 * surface while its messages are read, after the interceptor has returned.
 */
import { type DescMethod, type Message, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import {
  type EventStreamOperations,
  exportMessage,
  followMessage,
  type OpenedStream,
} from "../api/event-stream-operations.js";
import type { OperationCall } from "../api/operation.js";
import { factsOf } from "./connect-context.js";
import { rpcError } from "./connect-routes.js";
import type { ErrorReporter } from "./error-reporter.js";
import { exportRangeHeaders } from "./export-range.js";

type Open = (call: OperationCall, signal: AbortSignal) => Promise<OpenedStream>;

/** The error a stream aborted by the runtime ends with: the abort's own, as a ConnectError. */
function abortError(signal: AbortSignal): ConnectError {
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError) return reason;
  return new ConnectError("the call was cancelled", Code.Canceled);
}

/** Registers the streaming methods of EventService. */
export function connectStreamRoutes(
  operations: EventStreamOperations,
  reporter: ErrorReporter,
): (router: ConnectRouter) => void {
  /** A server-streaming handler of `method`: open, then each chunk as a message. */
  const stream = <Out extends Message>(
    method: DescMethod,
    open: Open,
    render: (chunk: Parameters<typeof exportMessage>[0]) => Out,
  ) =>
    async function* (request: Message, context: HandlerContext): AsyncGenerator<Out> {
      const facts = factsOf(context.values);
      try {
        const opened = await open(
          {
            facts,
            header: (name) => context.requestHeader.get(name) ?? undefined,
            // The requests hold strings and integers only: their JSON form always exists.
            readJson: () => toJson(method.input, request),
          },
          context.signal,
        );
        for (const [name, value] of Object.entries(exportRangeHeaders(opened))) {
          context.responseHeader.set(name, value);
        }
        for await (const chunk of opened.chunks) yield render(chunk);
        if (context.signal.aborted) throw abortError(context.signal);
      } catch (error) {
        if (context.signal.aborted) throw abortError(context.signal);
        throw rpcError(reporter, error, facts, context.url);
      }
    };

  return (router) => {
    const { exportEvents, followEvents } = EventService.method;
    router.rpc(
      exportEvents,
      stream(exportEvents, (call, signal) => operations.exportEvents(call, signal), exportMessage),
    );
    router.rpc(
      followEvents,
      stream(followEvents, (call, signal) => operations.followEvents(call, signal), followMessage),
    );
  };
}
