/**
 * What the RPC tests share: clients of a service over each protocol of the shared port,
 * and the ConnectError a call fails with. One place instead of the same transport set-up
 * and `.then(() => undefined, ConnectError.from)` in every file.
 */
import type { DescService } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  type Http2SessionManager,
} from "@connectrpc/connect-node";

/** The protocols a client may speak to the port. */
export type RpcProtocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";

/** Options of a client. */
export interface RpcClientOptions {
  /** For gRPC: a session to reuse (and abort after the test). */
  sessionManager?: Http2SessionManager;
  /** The most bytes of a reply the client reads (gRPC clients' 4 MiB, say). */
  readMaxBytes?: number;
}

/** A client of `service` at `baseUrl` over `protocol` (Connect and gRPC-Web on HTTP/1.1). */
export function rpcClient<Service extends DescService>(
  service: Service,
  baseUrl: string,
  protocol: RpcProtocol = "connect-json",
  options: RpcClientOptions = {},
): Client<Service> {
  const limits = options.readMaxBytes === undefined ? {} : { readMaxBytes: options.readMaxBytes };
  switch (protocol) {
    case "connect-json":
    case "connect-binary":
      return createClient(
        service,
        createConnectTransport({
          baseUrl,
          httpVersion: "1.1",
          useBinaryFormat: protocol === "connect-binary",
          ...limits,
        }),
      );
    case "grpc":
      return createClient(
        service,
        createGrpcTransport({
          baseUrl,
          ...(options.sessionManager ? { sessionManager: options.sessionManager } : {}),
          ...limits,
        }),
      );
    case "grpc-web":
      return createClient(
        service,
        createGrpcWebTransport({ baseUrl, httpVersion: "1.1", ...limits }),
      );
  }
}

/** The ConnectError a call fails with; throws (failing the test) when it succeeds. */
export async function rpcFailure(call: Promise<unknown>): Promise<ConnectError> {
  const outcome = await call.then(
    () => undefined,
    (error: unknown) => ConnectError.from(error),
  );
  if (!outcome) throw new Error("expected the call to fail, it succeeded");
  return outcome;
}
