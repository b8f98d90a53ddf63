/**
 * The logs' lag as /metrics shows it (docs/write-path.md): the journals' head, what the
 * integrator has passed, the lag in events and in seconds, with no label. Once events
 * are listable the lag is 0; while a log cannot be integrated (a journal row that does
 * not open) its rows show as lag that grows older.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, createEvents, listEvents } from "../events/events-client.js";
import { parseExposition } from "../support/prometheus.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

describe("/metrics: the logs' lag", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
  });
  afterAll(async () => {
    await server?.close();
  });

  const scrape = async () => {
    const response = await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(15_000) });
    expect(response.status).toBe(200);
    return parseExposition(await response.text());
  };
  const figures = async () => {
    const metrics = await scrape();
    return {
      head: metrics.value("audit_log_head_events"),
      integrated: metrics.value("audit_log_integrated_events"),
      lag: metrics.value("audit_log_lag_events"),
      lagSeconds: metrics.value("audit_log_lag_seconds"),
    };
  };

  it("shows head, integrated and no lag once the events are listable, without labels", async () => {
    const key = await server.provision();
    await createEvents(
      server,
      key.secret,
      Array.from({ length: 12 }, (_, i) => ({
        actionKey: "doc.viewed",
        entityType: "doc",
        entityId: `d${i}`,
        actorId: "u1",
      })),
    );
    expect((await listEvents(server, bearer(key.secret), {})).status).toBe(200);
    expect(await figures()).toEqual({ head: 12, integrated: 12, lag: 0, lagSeconds: 0 });
    const metrics = await scrape();
    for (const name of ["audit_log_head_events", "audit_log_lag_seconds"]) {
      expect(metrics.samples.filter((s) => s.name === name)).toEqual([
        { name, labels: {}, value: expect.any(Number) },
      ]);
    }
    expect(metrics.value("audit_integrator_events_total")).toBeGreaterThanOrEqual(12);
  });

  it("counts what the integrator has not passed as lag, in events and growing seconds", async () => {
    const key = await server.provision();
    const before = await figures();
    // A row the integrator cannot open holds its log back (it skips nothing).
    await server.app.db.query(
      `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                           payload)
       values ($1, 'test', '01a20000-0000-7000-8000-0000000000bb', now(), now() - interval '30 seconds', 1, $2)`,
      [key.projectId, Buffer.from([1, 2, 3])],
    );
    await createEvents(server, key.secret, [
      { actionKey: "doc.viewed", entityType: "doc", entityId: "held", actorId: "u1" },
    ]);
    const held = await figures();
    expect(held.head).toBe(before.head + 2);
    expect(held.integrated).toBe(before.integrated);
    expect(held.lag).toBe(2);
    expect(held.lagSeconds).toBeGreaterThanOrEqual(30);

    await server.app.db.query(
      "delete from events where id = '01a20000-0000-7000-8000-0000000000bb'",
    );
    expect((await listEvents(server, bearer(key.secret), {})).status).toBe(200);
    expect(await figures()).toEqual({
      head: before.head + 1,
      integrated: before.integrated + 1,
      lag: 0,
      lagSeconds: 0,
    });
  });
});
