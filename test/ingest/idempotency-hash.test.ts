/**
 * "The same body" for an Idempotency-Key is the same validated event, whatever the
 * protocol that carried it: REST, Connect and gRPC retries of one event replay it, and
 * explicit defaults, ignored unknown fields and equivalent spellings change nothing. A
 * 409 must not be retried (spec 4.3): a client then mints a new key and the event would
 * be stored twice. Also: claims stored before this rule (hash of the body as sent) still
 * replay within their lifetime.
 */
import { randomBytes } from "node:crypto";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventSchema } from "../../gen/audit/v1/event_pb.js";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { canonicalHash } from "../../src/ingest/canonical-json.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const CONNECT_CREATE = "/audit.v1.IngestService/CreateEvent";
const CONFLICT = "Idempotency key conflict: same key used with different body";

describe("one idempotency hash for every protocol", () => {
  let server: TestServer;
  let key: ProvisionedKey;
  let sessions: Http2SessionManager;
  let grpcClient: Client<typeof IngestService>;

  beforeAll(async () => {
    server = await startTestServer();
    key = await server.provision();
    sessions = new Http2SessionManager(server.url);
    grpcClient = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.url, sessionManager: sessions }),
    );
  });
  afterAll(async () => {
    sessions?.abort();
    await server?.close();
  });

  /** CreateEvent over gRPC with the event given in its JSON form; the reply and headers. */
  const overGrpc = async (body: Record<string, unknown>, idem: string) => {
    let replayed: string | null = null;
    const reply = await grpcClient.createEvent(fromJson(EventSchema, body as JsonValue), {
      headers: { authorization: `Bearer ${key.secret}`, "idempotency-key": idem },
      onHeader: (headers) => {
        replayed = headers.get("idempotent-replayed");
      },
      timeoutMs: 15_000,
    });
    return { eventId: reply.eventId, replayed };
  };

  const newKey = () => `idem-${randomBytes(12).toString("hex")}`;
  const rest = (body: unknown, idem: string) =>
    postEvent(server, body, { authorization: `Bearer ${key.secret}`, "idempotency-key": idem });
  const connect = async (body: unknown, idem: string) => {
    const response = await fetch(`${server.url}${CONNECT_CREATE}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${key.secret}`,
        "idempotency-key": idem,
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const eventRows = async (eventId: unknown) =>
    (
      await server.app.db.query<{ n: number }>(
        "select count(*)::int as n from events where project_id = $1 and id = $2",
        [key.projectId, eventId],
      )
    )[0]?.n;

  it("an event with changes: [] sent over REST replays over Connect and gRPC", async () => {
    const idem = newKey();
    const body = validEvent({ changes: [], context: { orderId: 17, tags: ["a", "b"] } });
    const created = await rest(body, idem);
    expect(created.status).toBe(201);

    const overConnect = await connect(body, idem);
    expect(overConnect.status).toBe(200);
    expect(overConnect.body.eventId).toBe(created.body.eventId);

    const grpcReplay = await overGrpc(body, idem);
    expect(grpcReplay).toEqual({ eventId: created.body.eventId, replayed: "true" });
    expect(await eventRows(created.body.eventId)).toBe(1);
  });

  it("an event first sent over gRPC replays over REST", async () => {
    const idem = newKey();
    const body = validEvent({ changes: [{ op: "set", path: "/a", before: null, after: 1 }] });
    const created = await overGrpc(body, idem);
    expect(created.replayed).toBeNull();
    const replay = await rest(body, idem);
    expect(replay.status).toBe(200);
    expect(replay.body.eventId).toBe(created.eventId);
  });

  it.each([
    ["an explicit default actorType", validEvent(), validEvent({ actorType: "user" })],
    ["an ignored unknown field", validEvent(), validEvent({ notAField: { x: 1 } })],
    ["changes: [] against no changes", validEvent(), validEvent({ changes: [] })],
    [
      "redacted: false against no redacted",
      validEvent({ changes: [{ op: "set", path: "/a", before: 1, after: 2 }] }),
      validEvent({ changes: [{ op: "set", path: "/a", before: 1, after: 2, redacted: false }] }),
    ],
    [
      "the same instant in another zone and precision",
      validEvent({ occurredAt: "2024-05-01T12:00:00Z" }),
      validEvent({ occurredAt: "2024-05-01T14:00:00.000+02:00" }),
    ],
  ])("REST: %s is the same body (200, same event)", async (_what, first, second) => {
    const idem = newKey();
    const created = await rest(first, idem);
    expect(created.status).toBe(201);
    const replay = await rest(second, idem);
    expect(replay.status).toBe(200);
    expect(replay.body.eventId).toBe(created.body.eventId);
  });

  it.each([
    ["another actorType", validEvent({ actorType: "service" })],
    ["an empty tenantId against none", validEvent({ tenantId: "" })],
    [
      "redacted: true",
      validEvent({ changes: [{ op: "set", path: "/a", before: 1, after: 2, redacted: true }] }),
    ],
    ["an empty context against none", validEvent({ context: {} })],
    [
      "action instead of actionKey",
      { ...validEvent(), actionKey: undefined, action: "user.login" },
    ],
  ])("a different event under the key (%s): 409 over REST and Connect", async (_what, other) => {
    const idem = newKey();
    const first =
      _what === "redacted: true"
        ? validEvent({ changes: [{ op: "set", path: "/a", before: 1, after: 2 }] })
        : validEvent();
    expect((await rest(first, idem)).status).toBe(201);
    const conflict = await rest(other, idem);
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ error: CONFLICT });
    const overConnect = await connect(other, idem);
    expect(overConnect.status).toBe(409);
    expect(overConnect.body.code).toBe("already_exists");
  });

  it("a claim stored before the upgrade (hash of the body as sent) still replays; another body still conflicts", async () => {
    const idem = newKey();
    const body = validEvent({ changes: [], context: { n: 1 } });
    const created = await rest(body, idem);
    expect(created.status).toBe(201);
    // What the previous version stored: the canonical hash of the body as sent.
    await server.app.db.query(
      "update idempotency_keys set body_hash = $1 where project_id = $2 and event_id = $3",
      [canonicalHash(body), key.projectId, created.body.eventId],
    );
    const replay = await rest(body, idem);
    expect(replay.status).toBe(200);
    expect(replay.body.eventId).toBe(created.body.eventId);
    expect((await rest(validEvent({ entityId: "other" }), idem)).status).toBe(409);
    expect(await eventRows(created.body.eventId)).toBe(1);
  });
});
