/**
 * Unary gRPC calls are answered by src/transport/grpc-unary.ts unless they carry a
 * deadline, compression or another protocol, which go to the Connect adapter. Both must
 * put the same answer on the wire. Each case is sent twice over raw HTTP/2, once plainly
 * (the lean path) and once with a `grpc-timeout` of 99 s (the adapter), and the two
 * responses are compared: status, headers, the frames' flags, trailers (error details
 * decoded). The metric `audit_grpc_unary_lean_total` shows that the lean path took the
 * plain request and the adapter the other.
 */
import type { ClientHttp2Session, IncomingHttpHeaders } from "node:http2";
import { create, fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventSchema } from "../../gen/audit/v1/event_pb.js";
import { ListEventsRequestSchema, ListEventsResponseSchema } from "../../gen/audit/v1/events_pb.js";
import { CreateEventResponseSchema } from "../../gen/audit/v1/ingest_pb.js";
import { h2Close, h2Connect } from "../support/raw-http.js";
import { decodeRpcStatus } from "../support/rpc-status.js";
import {
  type ProvisionedKey,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const CREATE = "/audit.v1.IngestService/CreateEvent";
const LIST = "/audit.v1.EventService/ListEvents";

interface RawResponse {
  headers: Record<string, string | string[] | undefined>;
  trailers: Record<string, string | string[] | undefined>;
  frames: { flags: number; payload: Buffer }[];
}

function send(
  session: ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let responseHeaders: RawResponse["headers"] = {};
    let trailers: RawResponse["trailers"] = {};
    const chunks: Buffer[] = [];
    stream.on("response", (received: IncomingHttpHeaders) => {
      responseHeaders = { ...received };
    });
    stream.on("trailers", (received: IncomingHttpHeaders) => {
      trailers = { ...received };
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      const data = Buffer.concat(chunks);
      const frames: RawResponse["frames"] = [];
      for (let at = 0; at + 5 <= data.length; ) {
        const length = data.readUInt32BE(at + 1);
        frames.push({ flags: data[at] ?? -1, payload: data.subarray(at + 5, at + 5 + length) });
        at += 5 + length;
      }
      resolve({ headers: responseHeaders, trailers, frames });
    });
    stream.end(body);
  });
}

const envelope = (message: Uint8Array, flags = 0) => {
  const frame = Buffer.alloc(5 + message.length);
  frame[0] = flags;
  frame.writeUInt32BE(message.length, 1);
  Buffer.from(message).copy(frame, 5);
  return frame;
};

const eventMessage = (overrides: Record<string, unknown> = {}) =>
  toBinary(EventSchema, fromJson(EventSchema, validEvent(overrides) as never));

/** What must be equal between the two paths (per-request values taken out). */
function comparable(response: RawResponse) {
  const { date, "x-request-id": requestId, ...headers } = response.headers;
  expect(requestId).toBeTruthy();
  const trailers = { ...response.trailers };
  const details = trailers["grpc-status-details-bin"];
  if (typeof details === "string") {
    trailers["grpc-status-details-bin"] = JSON.stringify(
      decodeRpcStatus(Buffer.from(details, "base64")),
    );
  }
  return {
    headers,
    order: Object.keys(headers),
    trailers,
    trailerOrder: Object.keys(trailers),
    flags: response.frames.map((frame) => frame.flags),
  };
}

describe("unary gRPC: the lean path answers as the Connect adapter does", () => {
  let server: TestServer;
  let session: ClientHttp2Session;
  let key: ProvisionedKey;
  const leanCalls = async () =>
    (await server.app.metrics.registry.getSingleMetric("audit_grpc_unary_lean_total")?.get())
      ?.values[0]?.value ?? 0;
  /** Sends one request both ways; `lean` says whether the lean path must answer it. */
  const both = async (path: string, headers: Record<string, string>, body: Buffer, lean = true) => {
    const before = await leanCalls();
    const plain = await send(session, path, headers, body);
    expect(await leanCalls()).toBe(before + (lean ? 1 : 0));
    const adapter = await send(session, path, { ...headers, "grpc-timeout": "99S" }, body);
    expect(await leanCalls()).toBe(before + (lean ? 1 : 0));
    expect(comparable(plain)).toEqual(comparable(adapter));
    return { lean: plain, adapter };
  };

  beforeAll(async () => {
    server = await startTestServer();
    session = await h2Connect(`http://127.0.0.1:${server.port}`);
    key = await server.provision();
  });
  afterAll(async () => {
    await h2Close(session);
    await server?.close();
  });

  it("a created event: headers, one uncompressed frame, grpc-status 0", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    for (const extra of [{}, { "grpc-accept-encoding": "identity,deflate,gzip" }]) {
      const { lean, adapter } = await both(CREATE, { ...auth, ...extra }, envelope(eventMessage()));
      expect(lean.trailers["grpc-status"]).toBe("0");
      expect(lean.headers["content-type"]).toBe("application/grpc+proto");
      for (const response of [lean, adapter]) {
        const reply = fromBinary(CreateEventResponseSchema, response.frames[0]?.payload ?? []);
        expect(reply.eventId).toMatch(/^[0-9a-f-]{36}$/);
      }
    }
  });

  it("an idempotent replay: the same event id from both", async () => {
    const headers = { authorization: `Bearer ${key.secret}`, "idempotency-key": "parity-1" };
    const body = envelope(eventMessage());
    const first = await send(session, CREATE, headers, body);
    expect(first.trailers["grpc-status"]).toBe("0");
    const { lean, adapter } = await both(CREATE, headers, body);
    expect(lean.headers["idempotent-replayed"]).toBe("true");
    const ids = [lean, adapter].map(
      (response) =>
        fromBinary(CreateEventResponseSchema, response.frames[0]?.payload ?? []).eventId,
    );
    expect(ids[0]).toBe(ids[1]);
  });

  it("errors: an invalid event, a missing or unknown key, an Idempotency-Key conflict", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    const keyed = { ...auth, "idempotency-key": "parity-2" };
    await send(session, CREATE, keyed, envelope(eventMessage()));
    const cases: [Record<string, string>, Buffer, string][] = [
      [auth, envelope(eventMessage({ actionKey: "x".repeat(65) })), "3"],
      [{}, envelope(eventMessage()), "16"],
      [{ authorization: "Bearer sk_live_unknown" }, envelope(eventMessage()), "16"],
      [keyed, envelope(eventMessage({ entityId: "changed" })), "6"],
    ];
    for (const [headers, body, status] of cases) {
      const { lean } = await both(CREATE, headers, body);
      expect(lean.trailers["grpc-status"]).toBe(status);
      expect(lean.frames).toEqual([]);
    }
    // On the wire, as the gRPC spec escapes it: only "%" and non-printable bytes, so that
    // grpc-js (which decodes with decodeURI) reads the ":" too.
    const { lean, adapter } = await both(CREATE, keyed, envelope(eventMessage({ entityId: "x" })));
    for (const response of [lean, adapter]) {
      expect(response.trailers["grpc-message"]).toBe(
        "Idempotency key conflict: same key used with different body",
      );
    }
  });

  it("bodies that are not one well-formed message get the adapter's own error", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    const message = eventMessage();
    const bodies = [
      Buffer.alloc(0), // no message
      envelope(message).subarray(0, 20), // cut short
      Buffer.concat([envelope(message), envelope(message)]), // two messages
      envelope(Buffer.from([0xff, 0xff, 0xff])), // not protobuf
      envelope(message, 1), // compressed flag without grpc-encoding
    ];
    for (const body of bodies) {
      const { lean } = await both(CREATE, auth, body, false);
      expect(lean.trailers["grpc-status"]).not.toBe("0");
    }
  });

  it("`application/grpc+proto` and `grpc-encoding: identity` take the lean path alike", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    for (const extra of [
      { "content-type": "application/grpc+proto" },
      { "content-type": "APPLICATION/GRPC" },
      { "grpc-encoding": "identity" },
    ]) {
      const { lean } = await both(CREATE, { ...auth, ...extra }, envelope(eventMessage()));
      expect(lean.trailers["grpc-status"]).toBe("0");
    }
  });

  it("a message declared over the size limit is refused at once, before the rest is sent", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    const answers: RawResponse["trailers"][] = [];
    for (const extra of [{}, { "grpc-timeout": "99S" }]) {
      const trailers = await new Promise<RawResponse["trailers"]>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": CREATE,
          "content-type": "application/grpc",
          ...auth,
          ...extra,
        });
        stream.on("trailers", (received: IncomingHttpHeaders) => {
          resolve({ ...received });
          stream.close();
        });
        stream.on("error", reject);
        stream.on("data", () => {});
        // Only the header, declaring 64 MiB; the stream stays open.
        const head = Buffer.alloc(5);
        head.writeUInt32BE(64 * 1024 * 1024, 1);
        stream.write(head);
      });
      answers.push(trailers);
    }
    expect(answers[0]?.["grpc-status"]).toBe("8");
    expect(answers[0]).toEqual(answers[1]);
  });

  it("an authority that is no URL's neither ends the process nor goes unanswered", async () => {
    const odd = { ":authority": "a:b", authorization: `Bearer ${key.secret}` };
    // The adapter's path (Connect JSON) answers 400.
    const json = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": CREATE,
        "content-type": "application/json",
        ...odd,
      });
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on("response", (headers: IncomingHttpHeaders) => {
        status = Number(headers[":status"]);
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ status, body: Buffer.concat(chunks).toString() }));
      stream.on("error", reject);
      stream.end("{}");
    });
    expect(json).toEqual({
      status: 400,
      body: JSON.stringify({ error: "Invalid Host or :authority header" }),
    });
    // A malformed gRPC body handed over to the adapter: the stream is closed unanswered.
    const handedOver = await send(session, CREATE, odd, Buffer.from([0, 0])).catch(() => undefined);
    expect(handedOver?.trailers["grpc-status"]).toBeUndefined();
    // And the lean path answers a well-formed call whatever the authority.
    const lean = await send(session, CREATE, odd, envelope(eventMessage()));
    expect(lean.trailers["grpc-status"]).toBe("0");
  });

  it("a large reply (ListEvents) compressed alike when the client accepts gzip", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    for (let i = 0; i < 12; i++) {
      await send(session, CREATE, auth, envelope(eventMessage({ entityId: `inv_${i}` })));
    }
    const request = envelope(toBinary(ListEventsRequestSchema, create(ListEventsRequestSchema)));
    for (const extra of [{}, { "grpc-accept-encoding": "gzip" }]) {
      const { lean } = await both(LIST, { ...auth, ...extra }, request);
      expect(lean.trailers["grpc-status"]).toBe("0");
      if ("grpc-accept-encoding" in extra) {
        expect(lean.headers["grpc-encoding"]).toBe("gzip");
        expect(lean.frames[0]?.flags).toBe(1);
      } else {
        const page = fromBinary(ListEventsResponseSchema, lean.frames[0]?.payload ?? []);
        expect(page.events.length).toBeGreaterThanOrEqual(12);
      }
    }
  });
});
