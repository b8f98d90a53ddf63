/**
 * Concurrent requests are written together (group commit). Events with and without
 * optional parts (tenant, context, changes) in one batch must each come back exactly as
 * sent, and every acknowledged event must be stored once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postEvent, startTestServer, type TestServer } from "../support/test-server.js";

describe("group commit of concurrent events", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "10000" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("60 concurrent events with mixed optional parts are each stored and read back as sent", async () => {
    const { secret } = await server.provision();
    const sent = Array.from({ length: 60 }, (_, i) => {
      const event: Record<string, unknown> = {
        actionKey: `doc.edit${i}`,
        entityType: "document",
        entityId: `doc_${i}`,
        actorId: `user_${i}`,
      };
      if (i % 2 === 1) event.tenantId = `tenant_${i % 3}`;
      if (i % 3 === 1) event.context = { n: i, tags: ["a", "b"], nested: { ok: true } };
      if (i % 4 === 1) event.changes = [{ op: "set", path: "title", before: null, after: `t${i}` }];
      return event;
    });
    const responses = await Promise.all(
      sent.map((event) => postEvent(server, event, { authorization: `Bearer ${secret}` })),
    );
    expect(responses.map((response) => response.status)).toEqual(sent.map(() => 201));

    const listed = await fetch(`${server.url}/api/events?limit=200`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(listed.status).toBe(200);
    const { events } = (await listed.json()) as { events: Record<string, unknown>[] };
    expect(events).toHaveLength(60);
    const byId = new Map(events.map((event) => [event.eventId, event]));
    responses.forEach((response, i) => {
      const stored = byId.get(response.body.eventId);
      expect(stored, `event ${i}`).toMatchObject(sent[i] ?? {});
      expect(stored?.receivedAt).toBe(response.body.receivedAt);
      if (!("tenantId" in (sent[i] ?? {}))) expect(stored?.tenantId).toBeUndefined();
      if (!("context" in (sent[i] ?? {}))) expect(stored?.context).toBeUndefined();
    });

    const tenantOne = await fetch(`${server.url}/api/events?tenantId=tenant_1&limit=200`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const tenantEvents = ((await tenantOne.json()) as { events: { entityId: string }[] }).events;
    const expected = sent.filter((event) => event.tenantId === "tenant_1").map((e) => e.entityId);
    expect(tenantEvents.map((event) => event.entityId).sort()).toEqual([...expected].sort());
  });
});
