/**
 * Create Event refused for its credentials: 401 and 403 with the spec's exact messages
 * (spec 5, 7), through both headers; a refused request stores nothing.
 */

import { beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { postEvent, type TestServer, validEvent } from "../support/test-server.js";
import {
  bearer,
  expectError,
  INVALID_FORMAT,
  INVALID_KEY,
  MISSING_KEY,
  REVOKED,
  unknownKey,
  useRefusalServer,
} from "./refusals.js";

describe("POST /api/ingest/event: refused requests", () => {
  const refusals = useRefusalServer();
  const { noNewEvent } = refusals;
  let server: TestServer;
  beforeAll(() => {
    server = refusals.server;
  });

  describe("401 and 403: credentials (spec 5, 7)", () => {
    it("401 with the missing-key message when no key is sent", async () => {
      await noNewEvent(
        () => postEvent(server, validEvent()),
        (res) => expectError(res, 401, MISSING_KEY),
      );
    });

    it.each([
      ["Bearer", "pk_prod_abcdef123456"],
      ["Bearer", "sk_test_abcdef123456"],
      ["Bearer", "sk_live_abcdef123456"],
      ["Bearer", "pk_test_"],
      ["Bearer", "pk_test"],
      ["Bearer", "pk__abcdef123456"],
      ["Bearer", "PK_TEST_abcdef123456"],
      ["Bearer", "pk_Test_abcdef123456"],
      ["Bearer", "pk_test_abc!def"],
      ["Bearer", "pk_test_abc.def"],
      ["Bearer", "not-a-key"],
      ["X-Project-Key", "pk_prod_abcdef123456"],
      ["X-Project-Key", "sk_test_abcdef123456"],
      ["X-Project-Key", "pk_live_"],
      ["X-Project-Key", "garbage"],
    ])("401 Invalid API key format for %s %s", async (style, value) => {
      const headers =
        style === "Bearer" ? { authorization: `Bearer ${value}` } : { "x-project-key": value };
      await noNewEvent(
        () => postEvent(server, validEvent(), headers),
        (res) => expectError(res, 401, INVALID_FORMAT),
      );
    });

    it("401 missing key for a Bearer scheme with no value: no key was supplied", async () => {
      await noNewEvent(
        () => postEvent(server, validEvent(), { authorization: "Bearer " }),
        (res) => expectError(res, 401, MISSING_KEY),
      );
    });

    it("a non-Bearer Authorization scheme does not hide a valid X-Project-Key", async () => {
      const key = await server.provision();
      const res = await postEvent(server, validEvent(), {
        authorization: "Basic dXNlcjpwYXNz",
        "x-project-key": key.secret,
      });
      expect(res.status).toBe(201);
    });

    it("401 Invalid API key format for Bearer glued to the key (no space)", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, validEvent(), { authorization: `Bearer${key.secret}` }),
        (res) => expectError(res, 401, INVALID_FORMAT),
      );
    });

    it.each([
      ["a bare key", (secret: string) => secret],
      ["another scheme", (secret: string) => `Token ${secret}`],
    ])(
      "401 Invalid API key format for a real key in Authorization as %s (not Bearer <key>)",
      async (_, value) => {
        const key = await server.provision();
        await noNewEvent(
          () => postEvent(server, validEvent(), { authorization: value(key.secret) }),
          (res) => expectError(res, 401, INVALID_FORMAT),
        );
        const listed = await fetch(`${server.url}/api/events`, {
          headers: { authorization: value(key.secret) },
        });
        expect(listed.status).toBe(401);
        expect(await listed.json()).toEqual({ error: INVALID_FORMAT });
      },
    );

    it.each([
      ["Bearer", "test"],
      ["Bearer", "live"],
      ["X-Project-Key", "test"],
      ["X-Project-Key", "live"],
    ] as const)("401 Invalid API key for a well-formed unknown %s %s key", async (style, env) => {
      const value = unknownKey(env);
      const headers =
        style === "Bearer" ? { authorization: `Bearer ${value}` } : { "x-project-key": value };
      await noNewEvent(
        () => postEvent(server, validEvent(), headers),
        (res) => expectError(res, 401, INVALID_KEY),
      );
    });

    it("401 Invalid API key for a real key with one character changed", async () => {
      const key = await server.provision();
      const last = key.secret.slice(-1);
      const altered = `${key.secret.slice(0, -1)}${last === "a" ? "b" : "a"}`;
      await noNewEvent(
        () => postEvent(server, validEvent(), bearer(altered)),
        (res) => expectError(res, 401, INVALID_KEY),
      );
    });

    it("403 API key has been revoked for a revoked key, with either header", async () => {
      const key = await server.provision();
      expect((await postEvent(server, validEvent(), bearer(key.secret))).status).toBe(201);
      await server.admin.revokeApiKey({ id: key.keyId });

      await noNewEvent(
        () => postEvent(server, validEvent(), bearer(key.secret)),
        (viaBearer) => expectError(viaBearer, 403, REVOKED),
      );
      await noNewEvent(
        () => postEvent(server, validEvent(), { "x-project-key": key.secret }),
        (viaHeader) => expectError(viaHeader, 403, REVOKED),
      );
    });

    it("403 API key has been revoked for a retired key, with either header", async () => {
      const key = await server.provision();
      expect((await postEvent(server, validEvent(), bearer(key.secret))).status).toBe(201);
      await server.admin.retireApiKey({ id: key.keyId });

      await noNewEvent(
        () => postEvent(server, validEvent(), bearer(key.secret)),
        (viaBearer) => expectError(viaBearer, 403, REVOKED),
      );
      await noNewEvent(
        () => postEvent(server, validEvent(), { "x-project-key": key.secret }),
        (viaHeader) => expectError(viaHeader, 403, REVOKED),
      );
    });

    it("revoking one key leaves the project's other keys working", async () => {
      const key = await server.provision();
      const other = await server.admin.createApiKey({
        projectId: key.projectId,
        environment: Environment.TEST,
      });
      await server.admin.revokeApiKey({ id: key.keyId });
      expectError(await postEvent(server, validEvent(), bearer(key.secret)), 403, REVOKED);
      expect((await postEvent(server, validEvent(), bearer(other.secret))).status).toBe(201);
    });
  });
});
