/**
 * The log's endpoints as a client sees them, REST and gRPC: a checkpoint covering every
 * acknowledged event is published, opens with the published key, names the log; every
 * event's inclusion proof and the consistency proofs between published sizes verify (with
 * our verifier and with Go's sumdb/tlog and sumdb/note); bad requests get clear 4xx.
 */
import { execFileSync } from "node:child_process";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { LogService } from "../../gen/audit/v1/log_pb.js";
import { fromBase64, toBase64 } from "../../src/tlog/bytes.js";
import { openCheckpoint, type SignedCheckpoint } from "../../src/tlog/checkpoint.js";
import { decodeLeaf } from "../../src/tlog/leaf.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseVerifierKey } from "../../src/tlog/note.js";
import { checkRecord, checkTree, recordHash } from "../../src/tlog/tree.js";
import { bearer, createEventsWithTimes, tokenFor } from "../events/events-client.js";
import { rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { buildGoChecker } from "../tlog/go-checker-build.js";

const crypto = createNodeLogCrypto();
let server: TestServer;
let secret = "";
let projectId = "";
let created: { eventId: string; receivedAt: string }[] = [];

async function get(path: string, credential = secret) {
  const response = await fetch(`${server.url}${path}`, { headers: bearer(credential) });
  const text = await response.text();
  return { status: response.status, type: response.headers.get("content-type"), text };
}

async function getJson(path: string, credential = secret) {
  const response = await get(path, credential);
  return { ...response, body: JSON.parse(response.text) as Record<string, unknown> };
}

/** Polls the checkpoint until it covers `size` events (published within the interval). */
async function checkpointCovering(size: number): Promise<string> {
  let last = "";
  for (let attempt = 0; attempt < 200; attempt++) {
    const response = await get("/api/log/checkpoint");
    last = `${response.status} ${response.text}`;
    if (response.status === 200 && Number(response.text.split("\n")[1]) >= size) {
      return response.text;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no checkpoint covering ${size} events; the last answer: ${last}`);
}

beforeAll(async () => {
  server = await startTestServer({ LOG_CHECKPOINT_INTERVAL_MS: "100", LOG_ISSUER: "audit.test" });
  ({ secret, projectId } = await server.provision());
  created = await createEventsWithTimes(
    server,
    secret,
    Array.from({ length: 12 }, (_, i) =>
      validEvent({ entityId: `doc_${i}`, context: { n: i, note: "é" } }),
    ),
    1,
  );
});

afterAll(async () => {
  await server?.close();
});

describe("checkpoint and key", () => {
  it("publishes a checkpoint covering every acknowledged event, signed by the published key", async () => {
    const note = await checkpointCovering(12);
    const key = await get("/api/log/key");
    expect(key.status).toBe(200);
    expect(key.type).toBe("text/plain; charset=utf-8");
    const origin = `audit.test/${projectId}/test`;
    expect(key.text).toMatch(
      new RegExp(`^${origin.replaceAll(".", "\\.")}\\+[0-9a-f]{8}\\+A[A-Za-z0-9+/]{43}$`),
    );
    const checkpoint = await openCheckpoint(
      crypto,
      note,
      await parseVerifierKey(crypto, key.text),
      origin,
    );
    expect(checkpoint.size).toBe(12);
    const response = await get("/api/log/checkpoint");
    expect(response.type).toBe("text/plain; charset=utf-8");
  });

  it("answers a frontend token as it answers the key that issued it", async () => {
    const token = await tokenFor(server, secret);
    expect((await get("/api/log/key", token)).text).toBe((await get("/api/log/key")).text);
    expect((await get("/api/log/checkpoint", token)).status).toBe(200);
  });

  it("answers browsers on other origins (CORS), as List Events does", async () => {
    const preflight = await fetch(`${server.url}/api/log/proof/inclusion`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBeTruthy();
    const response = await fetch(`${server.url}/api/log/key`, {
      headers: { ...bearer(secret), origin: "https://app.example.com" },
    });
    expect(response.headers.get("access-control-allow-origin")).toBeTruthy();
  });

  it("answers 404 for a log with no event yet, and 401 without a credential", async () => {
    const empty = await server.provision({ environment: Environment.LIVE });
    const none = await getJson("/api/log/checkpoint", empty.secret);
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ error: "No checkpoint has been published for this log yet" });
    const anonymous = await fetch(`${server.url}/api/log/checkpoint`);
    expect(anonymous.status).toBe(401);
    // The request is read before the log: an unknown parameter is 400 there too, not 404;
    // without a credential, 401 still comes first.
    const unknown = await getJson("/api/log/checkpoint?size=3", empty.secret);
    expect([unknown.status, unknown.body]).toEqual([
      400,
      { error: 'Unknown query parameter "size": this endpoint takes none' },
    ]);
    expect((await fetch(`${server.url}/api/log/checkpoint?size=3`)).status).toBe(401);
  });
});

describe("proofs", () => {
  let checkpoint: SignedCheckpoint;

  beforeAll(async () => {
    const note = await checkpointCovering(12);
    const verifier = await parseVerifierKey(crypto, (await get("/api/log/key")).text);
    checkpoint = await openCheckpoint(crypto, note, verifier);
  });

  it("proves every event in the checkpoint, with a leaf naming the event", async () => {
    const seen = new Set<number>();
    for (const event of created) {
      const response = await getJson(`/api/log/proof/inclusion?eventId=${event.eventId}`);
      expect(response.status).toBe(200);
      // Every member, in the message's order, also where logIndex is 0 (proto3's default).
      expect(Object.keys(response.body)).toEqual(["logIndex", "treeSize", "leaf", "hashes"]);
      const { logIndex, treeSize, leaf, hashes } = response.body as {
        logIndex: number;
        treeSize: number;
        leaf: string;
        hashes: string[];
      };
      expect(Number(treeSize)).toBe(checkpoint.size);
      const leafBytes = fromBase64(leaf) ?? new Uint8Array();
      const fields = decodeLeaf(leafBytes);
      expect(fields.eventId).toBe(event.eventId);
      expect(fields.logIndex).toBe(Number(logIndex));
      expect(new Date(fields.receivedAtMs).toISOString()).toBe(event.receivedAt);
      await checkRecord(
        crypto,
        hashes.map((h) => fromBase64(h) ?? new Uint8Array()),
        checkpoint.size,
        checkpoint.rootHash,
        Number(logIndex),
        await recordHash(crypto, leafBytes),
      );
      seen.add(Number(logIndex));
    }
    // Acknowledged one at a time: positions 0..11 in acknowledgement order.
    expect([...seen]).toEqual(created.map((_, i) => i));
  });

  it("proves consistency between published sizes, and Go's tlog and note agree", async () => {
    const first = await checkpointCovering(12);
    const more = await createEventsWithTimes(server, secret, [validEvent(), validEvent()], 1);
    const second = await checkpointCovering(14);
    const key = (await get("/api/log/key")).text;
    const verifier = await parseVerifierKey(crypto, key);
    const old = await openCheckpoint(crypto, first, verifier);
    const now = await openCheckpoint(crypto, second, verifier);
    const proof = await getJson(`/api/log/proof/consistency?from=${old.size}&to=${now.size}`);
    expect(proof.status).toBe(200);
    const hashes = (proof.body.hashes as string[]).map((h) => fromBase64(h) ?? new Uint8Array());
    await checkTree(crypto, hashes, now.size, now.rootHash, old.size, old.rootHash);

    const inclusion = await Promise.all(
      [...created, ...more].map(async (e) => {
        const body = (
          await getJson(`/api/log/proof/inclusion?eventId=${e.eventId}&treeSize=${now.size}`)
        ).body;
        return { ...body, logIndex: Number(body.logIndex), treeSize: Number(body.treeSize) };
      }),
    );
    const checker = await buildGoChecker();
    try {
      const reply = JSON.parse(
        execFileSync(checker.path, [], {
          input: JSON.stringify({
            verifierKey: key,
            checkpoints: [first, second],
            inclusion,
            consistency: [{ from: old.size, to: now.size, hashes: proof.body.hashes }],
          }),
          encoding: "utf8",
        }),
      ) as {
        checkpoints: { ok: boolean }[];
        inclusion: { ok: boolean }[];
        consistency: { ok: boolean }[];
      };
      expect(reply.checkpoints).toEqual([{ ok: true }, { ok: true }]);
      expect(reply.inclusion).toEqual(inclusion.map(() => ({ ok: true })));
      expect(reply.consistency).toEqual([{ ok: true }]);
    } finally {
      checker.remove();
    }
  });

  it("refuses bad requests with clear 4xx errors", async () => {
    const other = await server.provision();
    const [foreign] = await createEventsWithTimes(server, other.secret, [validEvent()], 1);
    const cases: [string, number, string][] = [
      ["/api/log/proof/inclusion", 400, "eventId is required"],
      ["/api/log/proof/inclusion?eventId=evt_1", 400, "eventId must be a UUID"],
      [
        "/api/log/proof/inclusion?eventId=0193a5b2-7c1e-7d3f-8a9b-000000000000",
        404,
        "Event not found",
      ],
      [`/api/log/proof/inclusion?eventId=${foreign?.eventId}`, 404, "Event not found"],
      [
        `/api/log/proof/inclusion?eventId=${created[0]?.eventId}&treeSize=0`,
        400,
        "treeSize must be a positive integer",
      ],
      [
        `/api/log/proof/inclusion?eventId=${created[0]?.eventId}&treeSize=abc`,
        400,
        "treeSize must be a positive integer",
      ],
      // Given empty (an unset variable): refused, not read as "the latest".
      [
        `/api/log/proof/inclusion?eventId=${created[0]?.eventId}&treeSize=`,
        400,
        "treeSize must be a positive integer",
      ],
      [
        `/api/log/proof/inclusion?eventId=${created[0]?.eventId}&treeSize=1000`,
        404,
        "No checkpoint of tree size 1000 has been published",
      ],
      ["/api/log/proof/consistency?from=1", 400, "from and to are required"],
      ["/api/log/proof/consistency?from=14&to=12", 400, "from must not be greater than to"],
      ["/api/log/proof/consistency?from=-1&to=12", 400, "from must be a positive integer"],
      [
        "/api/log/proof/consistency?from=500&to=1000",
        404,
        "No checkpoint of tree size 500 has been published",
      ],
      // Sizes past 2^53 (and past uint64) are sizes no log has reached, not malformed.
      [
        `/api/log/proof/inclusion?eventId=${created[0]?.eventId}&treeSize=9007199254740993`,
        404,
        "No checkpoint of tree size 9007199254740993 has been published",
      ],
      [
        "/api/log/proof/consistency?from=1&to=18446744073709551616",
        404,
        "No checkpoint of tree size 18446744073709551616 has been published",
      ],
      [
        "/api/log/proof/consistency?from=18446744073709551616&to=9007199254740993",
        400,
        "from must not be greater than to",
      ],
      // A parameter a route does not take is refused, as the list refuses it.
      [
        "/api/log/proof/consistency?from=1&to=2&size=3",
        400,
        'Unknown query parameter "size": this endpoint takes from, to',
      ],
      [
        `/api/log/proof/inclusion?eventId=${created[0]?.eventId}&tree_size=1&index=0`,
        400,
        'Unknown query parameter "index": this endpoint takes eventId, treeSize',
      ],
      [
        "/api/log/key?format=hex",
        400,
        'Unknown query parameter "format": this endpoint takes none',
      ],
      [
        "/api/log/checkpoint?size=3",
        400,
        'Unknown query parameter "size": this endpoint takes none',
      ],
      // One parameter given twice is refused, as the list refuses it.
      [
        "/api/log/proof/consistency?from=1&to=2&to=3",
        400,
        "to must be given once in the query string",
      ],
    ];
    for (const [path, status, error] of cases) {
      const response = await getJson(path);
      expect({ path, status: response.status, body: response.body }).toEqual({
        path,
        status,
        body: { error },
      });
    }
  });

  it("serves the same proofs over gRPC, with NOT_FOUND and INVALID_ARGUMENT refusals", async () => {
    const session = new Http2SessionManager(server.url);
    const client = createClient(
      LogService,
      createGrpcTransport({ baseUrl: server.url, sessionManager: session }),
    );
    const headers = bearer(secret);
    try {
      const rest = await getJson(`/api/log/proof/inclusion?eventId=${created[3]?.eventId}`);
      const rpc = await client.getInclusionProof(
        { eventId: created[3]?.eventId ?? "" },
        { headers },
      );
      expect(Number(rpc.logIndex)).toBe(Number(rest.body.logIndex));
      expect(toBase64(rpc.leaf)).toBe(rest.body.leaf);
      expect(rpc.hashes.map(toBase64)).toEqual(rest.body.hashes);
      const note = await client.getCheckpoint({}, { headers });
      expect(note.checkpoint).toMatch(/^audit\.test\//);
      const missing = await rpcFailure(
        client.getInclusionProof({ eventId: "0193a5b2-7c1e-7d3f-8a9b-000000000000" }, { headers }),
      );
      expect(missing.code).toBe(5);
      expect(missing.rawMessage).toBe("Event not found");
      const backwards = await rpcFailure(
        client.getConsistencyProof({ from: 5n, to: 2n }, { headers }),
      );
      expect(backwards.code).toBe(3);
      const unreached = await rpcFailure(
        client.getConsistencyProof({ from: 1n, to: 2n ** 60n }, { headers }),
      );
      expect([unreached.code, unreached.rawMessage]).toEqual([
        5,
        `No checkpoint of tree size ${2n ** 60n} has been published`,
      ]);
    } finally {
      session.abort();
    }
  });
});

describe("an event just acknowledged", () => {
  it("is found by the inclusion proof at once: proven, or not in a checkpoint yet, never unknown", async () => {
    await checkpointCovering(12);
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${server.url}/api/ingest/event`, {
        method: "POST",
        headers: { ...bearer(secret), "content-type": "application/json" },
        body: JSON.stringify(validEvent({ entityId: `fresh_${i}` })),
      });
      expect(response.status).toBe(201);
      const { eventId } = (await response.json()) as { eventId: string };
      // Straight after its 201, before the integrator's next pass has numbered it.
      const proof = await getJson(`/api/log/proof/inclusion?eventId=${eventId}`);
      if (proof.status === 200) {
        expect(proof.body.leaf).toEqual(expect.any(String));
      } else {
        expect(proof.status).toBe(404);
        expect(proof.body.error).toMatch(
          new RegExp(
            `^Event ${eventId} \\(logIndex \\d+\\) is not in the checkpoint of tree size \\d+ yet: checkpoints follow within seconds$`,
          ),
        );
      }
    }
  });
});
