/**
 * The `action` filter matches actionKey or the legacy action (issue 5), including for an
 * event that was sent with both.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

describe("action filter and the legacy action field", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("finds events by actionKey, by legacy action, and by either field of an event sent with both", async () => {
    const { secret } = await server.provision();
    const auth = { authorization: `Bearer ${secret}` };
    const keyOnly = await postEvent(server, validEvent({ actionKey: "doc.created" }), auth);
    const legacyOnly = await postEvent(
      server,
      validEvent({ actionKey: undefined, action: "DOC_CREATED" }),
      auth,
    );
    const both = await postEvent(
      server,
      validEvent({ actionKey: "doc.updated", action: "DOC_UPDATED" }),
      auth,
    );
    expect([keyOnly.status, legacyOnly.status, both.status]).toEqual([201, 201, 201]);

    const ids = async (action: string) => {
      const response = await fetch(
        `${server.url}/api/events?action=${encodeURIComponent(action)}`,
        { headers: auth },
      );
      expect(response.status).toBe(200);
      const body = (await response.json()) as { events: { eventId: string }[] };
      return body.events.map((event) => event.eventId);
    };
    expect(await ids("doc.created")).toEqual([keyOnly.body.eventId]);
    expect(await ids("DOC_CREATED")).toEqual([legacyOnly.body.eventId]);
    expect(await ids("doc.updated")).toEqual([both.body.eventId]);
    expect(await ids("DOC_UPDATED")).toEqual([both.body.eventId]);
    expect(await ids("doc")).toEqual([]);
  });
});
