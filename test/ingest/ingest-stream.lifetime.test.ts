/**
 * An IngestEvents stream lives as long as its client keeps it busy (the request timeout,
 * a slow-sender guard, cut every stream at 60 s, leaving events stored but not
 * acknowledged), and a key revoked while its stream is open stops writing through it.
 */
import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type IngestEventsRequest,
  IngestEventsRequestSchema,
  type IngestEventsResponse,
  IngestService,
} from "../../gen/audit/v1/ingest_pb.js";
import { OPEN_ENDED_STREAMS } from "../../src/app.js";
import { type ListeningServer, listen } from "../../src/transport/server.js";
import { type ProvisionedKey, startTestServer, type TestServer } from "../support/test-server.js";
import { events } from "./bulk.support.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the IngestEvents stream's lifetime", () => {
  let server: TestServer;
  let shortTimeout: ListeningServer;
  const sessions: Http2SessionManager[] = [];
  const REQUEST_MS = 800;

  beforeAll(async () => {
    server = await startTestServer();
    // The app's handler and open-ended paths behind a listener whose request timeout is short.
    shortTimeout = await listen(server.app.handler, {
      host: "127.0.0.1",
      port: 0,
      headersTimeoutMs: REQUEST_MS,
      requestTimeoutMs: REQUEST_MS,
      openEndedStreams: OPEN_ENDED_STREAMS,
    });
  });
  afterAll(async () => {
    for (const session of sessions) session.abort();
    await shortTimeout?.close(1_000);
    await server?.close();
  });

  const clientOf = (baseUrl: string): Client<typeof IngestService> => {
    const session = new Http2SessionManager(baseUrl);
    sessions.push(session);
    return createClient(IngestService, createGrpcTransport({ baseUrl, sessionManager: session }));
  };
  const request = (json: Record<string, unknown>): IngestEventsRequest =>
    create(IngestEventsRequestSchema, { event: json as never });

  /** Sends one event every `everyMs` while `more()` says so; returns acks and the ending. */
  async function paced(
    client: Client<typeof IngestService>,
    key: ProvisionedKey,
    everyMs: number,
    count: number,
    between?: (sent: number) => Promise<void>,
  ) {
    const bodies = events(count);
    async function* requests() {
      for (let i = 0; i < count; i++) {
        yield request(bodies[i] as Record<string, unknown>);
        await between?.(i + 1);
        await sleep(everyMs);
      }
    }
    const acks: IngestEventsResponse[] = [];
    let error: ConnectError | undefined;
    try {
      for await (const ack of client.ingestEvents(requests(), {
        headers: { authorization: `Bearer ${key.secret}` },
      })) {
        acks.push(ack);
      }
    } catch (reason) {
      error = ConnectError.from(reason);
    }
    return { acks, error };
  }

  it("stays open and acknowledges every event for several times the request timeout", async () => {
    const key = await server.provision();
    const port = shortTimeout.port;
    const { acks, error } = await paced(clientOf(`http://127.0.0.1:${port}`), key, 150, 20);
    // 20 events over ~3 s against a 0.8 s request timeout.
    expect(error).toBeUndefined();
    expect(acks.filter((ack) => ack.result?.eventId !== undefined)).toHaveLength(20);
  }, 20_000);

  it("stops writing for a key revoked while its stream is open, and ends the stream", async () => {
    const key = await server.provision();
    const { acks, error } = await paced(clientOf(server.url), key, 100, 12, async (sent) => {
      if (sent === 3) await server.admin.revokeApiKey({ id: key.keyId });
    });
    expect(error?.code).toBe(Code.PermissionDenied);
    expect(error?.rawMessage).toBe("API key has been revoked");
    const created = acks.filter((ack) => ack.result?.eventId !== undefined).length;
    // Those sent before the revocation (the third may be in the group checked after it).
    expect(created).toBeGreaterThanOrEqual(2);
    expect(created).toBeLessThanOrEqual(3);
    const [row] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events where project_id = $1",
      [key.projectId],
    );
    expect(row?.count).toBe(created);
  }, 20_000);
});
