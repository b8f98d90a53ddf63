/**
 * Values holding lone surrogates (accepted over REST, stored and read back as sent) are
 * matched exactly by the filters, a tenant-restricted token and the erasure that use
 * blind indexes: `"A\ud800"`, `"A\udfff"` and `"A\ufffd"` are three tenants. Their
 * indexes used to be computed from UTF-8, which writes every lone surrogate as U+FFFD,
 * so a token for one of them listed the others' events.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, listedEvents } from "../events/events-client.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

describe("lone surrogates in filtered values", () => {
  let server: TestServer;
  let secret: string;
  const ids = new Map<string, string>();

  /** A POST whose JSON text is given as is (JSON escapes of lone surrogates kept). */
  const post = async (path: string, body: string, auth: string) => {
    const response = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { ...bearer(auth), "content-type": "application/json" },
      body,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    server = await startTestServer();
    secret = (await server.provision()).secret;
    for (const tenant of ["A\\ud800", "A\\udfff", "A\\ufffd"]) {
      const created = await post(
        "/api/ingest/event",
        `{"actionKey":"doc.read","entityType":"doc","entityId":"e","actorId":"${tenant}","tenantId":"${tenant}"}`,
        secret,
      );
      expect(created.status).toBe(201);
      ids.set(tenant, String(created.body.eventId));
    }
  });
  afterAll(async () => {
    await server?.close();
  });

  it("a token restricted to one of three such tenants lists its events only", async () => {
    for (const tenant of ids.keys()) {
      const minted = await post("/api/tokens/frontend", `{"tenantId":"${tenant}"}`, secret);
      expect(minted.status).toBe(200);
      const listed = await listedEvents(server, bearer(String(minted.body.token)));
      expect(listed.map((event) => event.eventId)).toEqual([ids.get(tenant)]);
    }
  });

  it("a filter on U+FFFD (all a URL can say for a lone surrogate) finds U+FFFD only", async () => {
    for (const field of ["tenantId", "actorId"]) {
      const listed = await listedEvents(server, bearer(secret), { [field]: "A\ufffd" });
      expect(listed.map((event) => event.eventId)).toEqual([ids.get("A\\ufffd")]);
    }
  });
});
