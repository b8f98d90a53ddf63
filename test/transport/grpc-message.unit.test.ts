/**
 * grpc-message escaping (PROTOCOL-HTTP2, Percent-Encoded): only "%" and bytes outside
 * printable ASCII are escaped, so that decoders that decode everything (the spec's way)
 * and grpc-js, which decodes with decodeURI and leaves reserved characters escaped, both
 * read the message as sent.
 */
import { describe, expect, it } from "vitest";
import { encodeGrpcMessage, isGrpcRequest } from "../../src/transport/grpc-message.js";

const MESSAGES = [
  "Idempotency key conflict: same key used with different body",
  "a, b; c/d?e#f&g=h+i$j@k",
  "100% sure",
  "café – naïve ✓ 日本",
  "line one\nline two\ttab",
  "",
];

describe("encodeGrpcMessage", () => {
  it("leaves printable ASCII other than % as it is", () => {
    expect(encodeGrpcMessage("a, b; c/d?e#f&g=h+i$j@k: ~")).toBe("a, b; c/d?e#f&g=h+i$j@k: ~");
  });

  it("escapes %, control characters and every byte of non-ASCII characters, in upper case", () => {
    expect(encodeGrpcMessage("100%")).toBe("100%25");
    expect(encodeGrpcMessage("a\nb")).toBe("a%0Ab");
    expect(encodeGrpcMessage("café")).toBe("caf%C3%A9");
  });

  it.each(MESSAGES)("decodes back to %j with decodeURIComponent and with decodeURI", (message) => {
    const encoded = encodeGrpcMessage(message);
    expect(decodeURIComponent(encoded)).toBe(message);
    expect(decodeURI(encoded)).toBe(message);
  });
});

describe("isGrpcRequest", () => {
  it("is true for gRPC over HTTP/2, not for gRPC-Web or other types", () => {
    expect(isGrpcRequest("application/grpc")).toBe(true);
    expect(isGrpcRequest("application/grpc+proto")).toBe(true);
    expect(isGrpcRequest("APPLICATION/GRPC")).toBe(true);
    expect(isGrpcRequest("application/grpc-web+proto")).toBe(false);
    expect(isGrpcRequest("application/json")).toBe(false);
    expect(isGrpcRequest(undefined)).toBe(false);
  });
});
