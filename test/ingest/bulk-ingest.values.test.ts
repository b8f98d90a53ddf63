/**
 * Values that PostgreSQL refuses in text and jsonb (NUL, \u0000) and that UTF-8 cannot
 * hold (lone surrogates), sent in every text field and in context, over a batch and as
 * a single event, through real HTTP: each is stored and listed back exactly as sent,
 * searchable, never a 500. They reach the database only inside ciphertext, and the
 * integrator's blind indexes and search tokens are bytes, so the database never sees
 * them as text.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, listedEvents } from "../events/events-client.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import { postBatch } from "./bulk.support.js";

let server: TestServer;
let key: ProvisionedKey;

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
  key = await server.provision();
});

afterAll(async () => {
  await server?.close();
});

/** An event whose every text holds `odd`, tagged by tenantId for listing it back. */
const oddEvent = (tenantId: string, odd: string) =>
  validEvent({
    tenantId,
    entityType: `type${odd}`,
    entityId: `id${odd}`,
    actorId: `actor${odd}`,
    actorDisplay: `display${odd}`,
    action: `acted${odd}`,
    actionDescription: `described${odd}`,
    source: `source${odd}`,
    context: { [`key${odd}`]: `value${odd}`, nested: [odd, { odd }] },
    changes: [{ op: "set", path: `path${odd}`, before: odd, after: { odd } }],
  });

// JSON.stringify writes a lone surrogate as its \u escape and NUL as \u0000: the bodies
// carry them as JSON escapes, as a client's encoder would.
const ODD = [
  ["NUL", "a\u0000b"],
  ["a lone high surrogate", "a\ud800b"],
  ["a lone low surrogate", "\udc00"],
] as const;

describe("values PostgreSQL refuses as text", () => {
  it.each(ODD)(
    "%s in every field of a batch is stored and listed back exactly",
    async (name, odd) => {
      const tenantId = `batch-${name.replace(/ /g, "-")}`;
      const sent = [oddEvent(tenantId, odd), validEvent({ tenantId, entityId: "plain" })];
      const response = await postBatch(server, { events: sent }, bearer(key.secret));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      const listed = await listedEvents(server, bearer(key.secret), { tenantId });
      expect(listed).toHaveLength(2);
      const odds = listed.find((event) => event.entityId !== "plain");
      const { tenantId: _, ...fields } = sent[0] as Record<string, unknown>;
      expect(odds).toMatchObject(fields);
      // Found by its exact filter value. A URL cannot carry a lone surrogate (it is sent as
      // U+FFFD), and a lone surrogate is its own value, apart from U+FFFD: not found so.
      const found = await listedEvents(server, bearer(key.secret), { actorId: `actor${odd}` });
      const ids = found.map((event) => event.eventId);
      if (/\p{Surrogate}/u.test(odd)) expect(ids).not.toContain(odds?.eventId);
      else expect(ids).toContain(odds?.eventId);
    },
  );

  it.each(ODD)(
    "%s in every field of a single event is stored and listed back exactly",
    async (name, odd) => {
      const tenantId = `single-${name.replace(/ /g, "-")}`;
      const sent = oddEvent(tenantId, odd);
      const response = await postEvent(server, sent, bearer(key.secret));
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      const [listed] = await listedEvents(server, bearer(key.secret), { tenantId });
      expect(listed).toMatchObject(sent);
    },
  );
});
