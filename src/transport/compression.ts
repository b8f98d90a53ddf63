/**
 * The request compressions the RPC protocols accept: connect-node's gzip and brotli, with
 * one correction. connect-node answers `internal` (HTTP 500) to a compressed body that ends
 * before its stream does (zlib's Z_BUF_ERROR, "unexpected end of file"), though that is
 * the client's bad input like any other corrupt body, which it answers `invalid_argument`.
 * Found by the long fuzz run (docs/reliability.md).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";

/** Node's zlib code for input that ends inside a compressed stream. */
const TRUNCATED = "Z_BUF_ERROR";

function codeOf(cause: unknown): unknown {
  return typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined;
}

/** `compression` whose truncated-input failure is `invalid_argument`. */
function refusingTruncated(compression: Compression): Compression {
  return {
    name: compression.name,
    compress: (bytes) => compression.compress(bytes),
    decompress: (bytes, readMaxBytes) =>
      compression.decompress(bytes, readMaxBytes).catch((error: unknown) => {
        const connectError = ConnectError.from(error);
        if (connectError.code === Code.Internal && codeOf(connectError.cause) === TRUNCATED) {
          throw new ConnectError(
            "decompression failed: the compressed body ends early",
            Code.InvalidArgument,
            undefined,
            undefined,
            error,
          );
        }
        throw error;
      }),
  };
}

/** gzip and brotli, as connect-node's adapter accepts by default, in its order. */
export const ACCEPT_COMPRESSION: Compression[] = [
  refusingTruncated(compressionGzip),
  refusingTruncated(compressionBrotli),
];
