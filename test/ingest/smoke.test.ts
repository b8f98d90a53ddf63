import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

describe("create event smoke", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("a valid event with a Bearer key gets 201 with eventId and receivedAt", async () => {
    const key = await server.provision();
    const res = await postEvent(server, validEvent(), { authorization: `Bearer ${key.secret}` });
    expect(res.status).toBe(201);
    expect(res.body.eventId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
