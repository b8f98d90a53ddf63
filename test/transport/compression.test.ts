/**
 * Compressed RPC request bodies: a body that is valid compressed JSON is served; a
 * compressed body cut short is the client's bad input, `invalid_argument` (HTTP 400 over
 * Connect, grpc-status 3 over gRPC), never `internal` (connect-node's own answer, found by
 * the long fuzz run).
 */
import { connect } from "node:http2";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const CREATE_EVENT = "/audit.v1.IngestService/CreateEvent";
const COMPRESSORS = { gzip: gzipSync, br: brotliCompressSync } as const;

describe("compressed RPC request bodies", () => {
  let server: TestServer;
  let secret: string;

  beforeAll(async () => {
    server = await startTestServer();
    ({ secret } = await server.provision());
  }, 120_000);
  afterAll(() => server?.close());

  const post = (encoding: string, body: Uint8Array) =>
    fetch(`${server.url}${CREATE_EVENT}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${secret}`,
        "content-type": "application/json",
        "content-encoding": encoding,
      },
      body,
    });

  for (const [encoding, compress] of Object.entries(COMPRESSORS)) {
    it(`serves a whole ${encoding} Connect body`, async () => {
      const response = await post(encoding, compress(JSON.stringify(validEvent())));
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ eventId: expect.any(String) });
    });

    it(`refuses a ${encoding} Connect body cut short with invalid_argument`, async () => {
      const whole = compress(JSON.stringify(validEvent()));
      for (const length of [1, Math.floor(whole.length / 2), whole.length - 1]) {
        const response = await post(encoding, whole.subarray(0, length));
        expect(response.status).toBe(400);
        const body = (await response.json()) as { code: string; message: string };
        expect(body.code).toBe("invalid_argument");
        expect(body.message).toMatch(/decompression failed/);
      }
    });
  }

  it("refuses a gzip gRPC message cut short with grpc-status 3", async () => {
    // An event's protobuf bytes do not matter here: the payload fails before decoding.
    const whole = gzipSync(Buffer.alloc(200, 7));
    const payload = whole.subarray(0, whole.length - 5);
    const frame = Buffer.alloc(5 + payload.length);
    frame.writeUInt8(1, 0);
    frame.writeUInt32BE(payload.length, 1);
    payload.copy(frame, 5);
    const session = connect(server.url);
    try {
      const status = await new Promise<string | undefined>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": CREATE_EVENT,
          "content-type": "application/grpc",
          "grpc-encoding": "gzip",
          te: "trailers",
          authorization: `Bearer ${secret}`,
        });
        let grpcStatus: string | undefined;
        stream.on("response", (headers) => {
          grpcStatus ??= headers["grpc-status"] as string | undefined;
        });
        stream.on("trailers", (trailers) => {
          grpcStatus = trailers["grpc-status"] as string | undefined;
        });
        stream.on("data", () => undefined);
        stream.on("end", () => resolve(grpcStatus));
        stream.on("error", reject);
        stream.end(frame);
      });
      expect(status).toBe("3");
    } finally {
      session.close();
    }
  });
});
