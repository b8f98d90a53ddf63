/**
 * A service whose integrator derives every pass in its worker thread
 * (DERIVATION_WORKER_MIN_EVENTS=0) lists, filters and searches what it acknowledged, and
 * its log verifies whole with the offline verifier: the worker's indexes and leaves are
 * the ones readers and auditors recompute. /metrics counts the worker's passes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogClient } from "../../src/cli/log-client.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { verifyLog } from "../../src/tlog/verify.js";
import { bearer, createEvents, listAll, listedEvents } from "../events/events-client.js";
import { checkpointCovering } from "../support/log-checkpoints.js";
import { parseExposition } from "../support/prometheus.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    DERIVATION_WORKER: "on",
    DERIVATION_WORKER_MIN_EVENTS: "0",
    LOG_CHECKPOINT_INTERVAL_MS: "100",
    RATE_LIMIT_MAX: "1000000000",
  });
});

afterAll(async () => {
  await server?.close();
});

describe("integrator passes derived in the worker thread", () => {
  it("list, filter, search and verify as on the requests' thread", async () => {
    const { secret } = await server.provision();
    const bodies = Array.from({ length: 120 }, (_, i) =>
      validEvent({
        actorId: `actor_${i % 4}`,
        entityId: `invoice_${i}`,
        tenantId: i % 2 === 0 ? "acme" : "globex",
        actorDisplay: i === 77 ? "Quintessa Marchbanks" : "Someone",
        context: { i, note: `context <${i}>` },
      }),
    );
    const ids = await createEvents(server, secret, bodies, 20);
    const headers = bearer(secret);

    const { events: all } = await listAll(server, headers);
    expect(all.map((e) => e.eventId).sort()).toEqual([...ids].sort());
    expect(all.map((e) => Number(e.logIndex)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 120 }, (_, i) => i),
    );
    expect((await listAll(server, headers, { actorId: "actor_2" })).events).toHaveLength(30);
    expect((await listAll(server, headers, { tenantId: "acme" })).events).toHaveLength(60);
    const found = await listedEvents(server, headers, { q: "Quintess" });
    expect(found.map((e) => e.entityId)).toEqual(["invoice_77"]);

    const client = createLogClient(server.url, secret);
    await checkpointCovering(client, 120);
    const result = await verifyLog({
      crypto: createNodeLogCrypto(),
      verifierKey: await client.verifierKey(),
      checkpoint: await client.checkpoint(),
      events: client.events(),
      proofs: client,
      beyondCheckpoint: "skip",
    });
    expect(result.failures).toEqual([]);
    expect(result.ok).toBe(true);

    const response = await fetch(`${server.url}/metrics`);
    const metrics = parseExposition(await response.text());
    expect(metrics.value("audit_integrator_worker_passes_total")).toBeGreaterThan(0);
  });
});
