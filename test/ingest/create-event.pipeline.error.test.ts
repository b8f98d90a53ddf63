/**
 * Create Event: the order of the pipeline's refusals (DESIGN section 4: size, credentials,
 * content type, JSON, validation), and JSON errors for unknown routes and methods.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { postEvent, type TestServer, validEvent } from "../support/test-server.js";
import {
  bearer,
  bodyOfBytes,
  expectError,
  INVALID_KEY,
  MB,
  MISSING_KEY,
  REVOKED,
  TOO_LARGE,
  unknownKey,
  useRefusalServer,
} from "./refusals.js";

describe("POST /api/ingest/event: refused requests", () => {
  const refusals = useRefusalServer();
  const { noNewEvent, send } = refusals;
  let server: TestServer;
  beforeAll(() => {
    server = refusals.server;
  });

  describe("pipeline order (DESIGN section 4)", () => {
    it("size before credentials: over 1 MB without a key is 413", async () => {
      await noNewEvent(
        () => postEvent(server, bodyOfBytes(MB + 1)),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("credentials before content type: wrong Content-Type without a key is 401", async () => {
      await noNewEvent(
        () =>
          send({
            headers: { "content-type": "text/plain" },
            body: new TextEncoder().encode(JSON.stringify(validEvent())),
          }),
        (res) => expectError(res, 401, MISSING_KEY),
      );
    });

    it("credentials before JSON: malformed JSON with an unknown key is 401", async () => {
      await noNewEvent(
        () => postEvent(server, "{", bearer(unknownKey("test"))),
        (res) => expectError(res, 401, INVALID_KEY),
      );
    });

    it("credentials before validation: an invalid body with a revoked key is 403", async () => {
      const key = await server.provision();
      await server.admin.revokeApiKey({ id: key.keyId });
      await noNewEvent(
        () => postEvent(server, {}, bearer(key.secret)),
        (res) => expectError(res, 403, REVOKED),
      );
    });

    it("JSON before validation: malformed JSON is 400, not 422", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, '{"entityType":', bearer(key.secret)),
        (res) => expectError(res, 400),
      );
    });
  });

  describe("other routes", () => {
    it.each([
      ["GET", "/api/unknown"],
      ["POST", "/api/ingest/batch"],
      ["POST", "/api/ingest"],
      ["GET", "/"],
    ])("%s %s: 404 with a JSON error", async (method, path) => {
      await noNewEvent(
        () =>
          send({
            method,
            path,
            headers: { "content-type": "application/json" },
            ...(method === "POST"
              ? { body: new TextEncoder().encode(JSON.stringify(validEvent())) }
              : {}),
          }),
        (res) => expectError(res, 404),
      );
    });

    it.each(["GET", "PUT", "DELETE", "PATCH"])(
      "%s /api/ingest/event: 405 or 404 with a JSON error",
      async (method) => {
        const key = await server.provision();
        await noNewEvent(
          () =>
            send({
              method,
              headers: { ...bearer(key.secret), "content-type": "application/json" },
              ...(method === "GET" ? {} : { body: new TextEncoder().encode("{}") }),
            }),
          (res) => {
            expect([404, 405]).toContain(res.status);
            expectError(res, res.status);
          },
        );
      },
    );
  });
});
