/**
 * Authentication as an attacker would probe it (issue 7): guessed keys of the right
 * shape, forged and stale frontend tokens, every credential type pointed at another
 * project or environment, and secrets looked for in the logs of the real process.
 *
 * Keys are never compared in code: a key is looked up by its SHA-256 hash through a
 * unique index (auth/api-keys.ts), so a guess that shares a real key's prefix learns
 * nothing more than any other guess: same status, same message.
 */
import { randomBytes } from "node:crypto";
import { base64url, decodeJwt, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { bearer, issueToken, listAll, listEvents, tokenFor } from "../events/events-client.js";
import { spawnService } from "../support/service-process.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const SIGNING_KEY = randomBytes(32).toString("hex");
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` random base62 characters. */
function random62(length: number): string {
  return [...randomBytes(length)].map((byte) => BASE62[byte % 62]).join("");
}

/** Signs `payload` with HS256 and the service's key, or what `options` change. */
function sign(payload: JWTPayload, options: { key?: string; alg?: string } = {}): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: options.alg ?? "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(options.key ?? SIGNING_KEY));
}

/** A token with the given header, payload and signature text. */
function forged(header: Record<string, unknown>, payload: JWTPayload, signature = ""): string {
  const part = (value: unknown) => base64url.encode(JSON.stringify(value));
  return `${part(header)}.${part(payload)}.${signature}`;
}

describe("authentication", () => {
  let server: TestServer;
  /** Project A (test and live keys) and project B (test key). */
  let aTest: ProvisionedKey;
  let aLive: string;
  let bTest: ProvisionedKey;
  let claims: JWTPayload;

  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT_MAX: "1000000000",
      TOKEN_SIGNING_KEY: SIGNING_KEY,
    });
    aTest = await server.provision();
    const live = await server.admin.createApiKey({
      projectId: aTest.projectId,
      environment: Environment.LIVE,
    });
    aLive = live.secret;
    bTest = await server.provision();
    claims = decodeJwt(await tokenFor(server, aTest.secret));
  });
  afterAll(async () => {
    await server?.close();
  });

  describe("guessed API keys", () => {
    it("well-formed keys of the real length, whatever their prefix, all get 401 Invalid API key", async () => {
      const real = aTest.secret;
      const guesses = [
        `pk_test_${random62(real.length - 8)}`,
        `pk_live_${random62(real.length - 8)}`,
        // The real key's displayed prefix (12 characters), then random.
        `${real.slice(0, 12)}${random62(real.length - 12)}`,
        // The real key with its last character changed.
        `${real.slice(0, -1)}${real.endsWith("A") ? "B" : "A"}`,
        // The real key's random part under the other environment.
        real.replace("pk_test_", "pk_live_"),
      ];
      for (const guess of guesses) {
        expect(guess).toHaveLength(real.length);
        for (const headers of [bearer(guess), { "x-project-key": guess }]) {
          const response = await postEvent(server, validEvent(), headers);
          expect(response.status, guess).toBe(401);
          expect(response.body).toEqual({ error: "Invalid API key" });
          const listed = await listEvents(server, headers);
          expect(listed.status).toBe(401);
          expect(listed.body).toEqual({ error: "Invalid API key" });
        }
      }
    });

    it("keys of the real length with another prefix all get 401 Invalid API key format", async () => {
      const real = aTest.secret;
      const rest = real.slice(8);
      for (const prefix of [
        "pk_prod_",
        "sk_test_",
        "PK_TEST_",
        "pk-test_",
        "pk_tst__",
        "xx_test_",
      ]) {
        const guess = `${prefix}${rest}`;
        expect(guess).toHaveLength(real.length);
        const response = await postEvent(server, validEvent(), bearer(guess));
        expect(response.status, guess).toBe(401);
        expect(response.body).toEqual({ error: "Invalid API key format" });
      }
    });
  });

  describe("frontend tokens", () => {
    const now = () => Math.floor(Date.now() / 1000);

    /** Tokens that are not genuine and valid, with the message List Events answers. */
    const badTokens: [string, () => Promise<string>, string][] = [
      ["of three garbage segments", async () => "eyJ.eyJ.sig", "Invalid token"],
      [
        "alg none, no signature",
        async () => forged({ alg: "none", typ: "JWT" }, claims),
        "Invalid token",
      ],
      [
        "alg none with the genuine signature",
        async () => {
          const genuine = (await tokenFor(server, aTest.secret)).split(".")[2];
          return forged({ alg: "none", typ: "JWT" }, claims, genuine);
        },
        "Invalid token",
      ],
      [
        "HS384 with the right key (wrong algorithm)",
        () => sign(claims, { alg: "HS384" }),
        "Invalid token",
      ],
      [
        "HS512 with the right key (wrong algorithm)",
        () => sign(claims, { alg: "HS512" }),
        "Invalid token",
      ],
      [
        "RS256 in the header over an HMAC signature (key confusion)",
        async () => {
          const [, payload, signature] = (await sign(claims)).split(".");
          const header = base64url.encode(JSON.stringify({ alg: "RS256", typ: "JWT" }));
          return `${header}.${payload}.${signature}`;
        },
        "Invalid token",
      ],
      [
        "signed with another key",
        () => sign(claims, { key: randomBytes(32).toString("hex") }),
        "Invalid token",
      ],
      ["expired", () => sign({ ...claims, iat: now() - 600, exp: now() - 60 }), "Token expired"],
      [
        "expired and signed with another key",
        () => sign({ ...claims, exp: now() - 60 }, { key: randomBytes(32).toString("hex") }),
        "Invalid token",
      ],
      [
        "not yet valid (nbf an hour ahead)",
        () => sign({ ...claims, nbf: now() + 3600 }),
        "Invalid token",
      ],
      [
        "issued in the future (iat an hour ahead) and not yet valid",
        () => sign({ ...claims, iat: now() + 3600, nbf: now() + 3600 }),
        "Invalid token",
      ],
      ["from another issuer", () => sign({ ...claims, iss: "evil" }), "Invalid token"],
      [
        "for another audience",
        () => sign({ ...claims, aud: "audit-event-service:write" }),
        "Invalid token",
      ],
      [
        "for several audiences, none ours",
        () => sign({ ...claims, aud: ["a", "b"] }),
        "Invalid token",
      ],
    ];

    it.each(badTokens)("a token %s: 401 with the right message", async (_what, make, message) => {
      const token = await make();
      const response = await listEvents(server, bearer(token));
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ error: message });
    });

    it.each(badTokens)(
      "a token %s on Create Event: 401 Invalid API key format (it is no API key, and no token)",
      async (_what, make) => {
        const response = await postEvent(server, validEvent(), bearer(await make()));
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: "Invalid API key format" });
      },
    );

    it("a token never creates events, even when valid: 403 read-only", async () => {
      const token = await tokenFor(server, aTest.secret);
      const response = await postEvent(server, validEvent(), bearer(token));
      expect(response.status).toBe(403);
      expect(response.body).toEqual({
        error: "Frontend tokens are read-only and cannot create events",
      });
    });
  });

  describe("cross-project and cross-environment access", () => {
    /** Each scope's credentials and the id of the one event created in it. */
    let scopes: { name: string; key: string; token: string; eventId: string }[];

    beforeAll(async () => {
      scopes = [];
      for (const [name, key] of [
        ["A/test", aTest.secret],
        ["A/live", aLive],
        ["B/test", bTest.secret],
      ] as const) {
        // The same Idempotency-Key in every scope: each scope gets its own event.
        const created = await postEvent(server, validEvent({ entityId: `only-${name}` }), {
          ...bearer(key),
          "idempotency-key": "shared-key",
        });
        expect(created.status).toBe(201);
        scopes.push({
          name,
          key,
          token: await tokenFor(server, key),
          eventId: created.body.eventId as string,
        });
      }
    });

    it("every credential type (test key, live key, frontend token) lists only its own scope", async () => {
      for (const scope of scopes) {
        for (const credential of [scope.key, scope.token]) {
          const { events } = await listAll(server, bearer(credential));
          expect(events.map((event) => event.eventId)).toEqual([scope.eventId]);
          // Asking for another scope's entity finds nothing.
          for (const other of scopes.filter((o) => o !== scope)) {
            const response = await listEvents(server, bearer(credential), {
              entityId: `only-${other.name}`,
            });
            expect(response.status).toBe(200);
            expect(response.body.events).toEqual([]);
          }
        }
      }
    });

    it("a cursor from one scope read with another scope's credentials leaks nothing", async () => {
      await postEvent(server, validEvent({ entityId: "second" }), bearer(aTest.secret));
      const first = await listEvents(server, bearer(aTest.secret), { limit: 1 });
      const cursor = first.body.nextCursor as string;
      expect(typeof cursor).toBe("string");
      for (const scope of scopes.filter((o) => o.name !== "A/test")) {
        for (const credential of [scope.key, scope.token]) {
          const response = await listEvents(server, bearer(credential), { cursor });
          if (response.status === 200) {
            const ids = (response.body.events as { eventId: string }[]).map((e) => e.eventId);
            for (const id of ids) expect(id).toBe(scope.eventId);
          } else {
            expect(response.status).toBe(400);
          }
        }
      }
    });

    it("the same Idempotency-Key in each scope created one event per scope, replayed per scope", async () => {
      expect(new Set(scopes.map((scope) => scope.eventId)).size).toBe(scopes.length);
      for (const scope of scopes) {
        const replay = await postEvent(server, validEvent({ entityId: `only-${scope.name}` }), {
          ...bearer(scope.key),
          "idempotency-key": "shared-key",
        });
        expect(replay.status).toBe(200);
        expect(replay.body.eventId).toBe(scope.eventId);
      }
    });

    it("a token of one scope cannot be stretched to another by asking for a tenant or environment", async () => {
      const response = await issueToken(server, bearer(aTest.secret), { tenantId: "t1" });
      expect(response.status).toBe(200);
      const token = response.body.token as string;
      const { events } = await listAll(server, bearer(token));
      expect(events).toEqual([]);
      // Its claims re-signed for the live environment by someone without the key: refused.
      const forgedLive = forged(
        { alg: "HS256", typ: "JWT" },
        { ...decodeJwt(token), env: "live" },
        token.split(".")[2],
      );
      const refused = await listEvents(server, bearer(forgedLive));
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: "Invalid token" });
    });
  });
});

describe("secrets never reach the logs (the real process at LOG_LEVEL=debug)", () => {
  it("API keys, tokens, Idempotency-Keys, the admin token and bad credentials appear in no log line", async () => {
    const service = await spawnService({
      LOG_LEVEL: "debug",
      TOKEN_SIGNING_KEY: SIGNING_KEY,
      RATE_LIMIT_MAX: "1000000000",
    });
    try {
      const url = `http://127.0.0.1:${service.port}`;
      const admin = createAdminClient(url, service.adminToken);
      const { project } = await admin.createProject({ name: "logs", plan: Plan.PRO });
      const projectId = project?.id ?? "";
      const created = await admin.createApiKey({ projectId, environment: Environment.TEST });
      const key = created.secret;
      const revoked = await admin.createApiKey({ projectId, environment: Environment.LIVE });
      await admin.revokeApiKey({ id: revoked.apiKey?.id ?? "" });
      const target = { url };
      const token = await tokenFor(target, key);
      const idempotencyKeys = [`idem-${random62(24)}`, `idem-${random62(24)}`];
      const unknownKey = `pk_test_${random62(40)}`;
      const malformedKey = `pk_prod_${random62(40)}`;
      const forgedToken = await sign(decodeJwt(token), { key: randomBytes(32).toString("hex") });
      const expiredToken = await sign({ ...decodeJwt(token), exp: 1 });
      const badAdminToken = random62(32);

      const statuses: number[] = [];
      const record = (status: number) => statuses.push(status);
      record((await postEvent(target, validEvent(), bearer(key))).status);
      record((await postEvent(target, validEvent(), { "x-project-key": key })).status);
      for (const idempotencyKey of idempotencyKeys) {
        const headers = { ...bearer(key), "idempotency-key": idempotencyKey };
        record((await postEvent(target, validEvent(), headers)).status);
        record((await postEvent(target, validEvent(), headers)).status); // replay
        record((await postEvent(target, validEvent({ entityId: "x" }), headers)).status); // 409
      }
      record((await postEvent(target, { actionKey: 1 }, bearer(key))).status); // 422
      record((await postEvent(target, "{not json", bearer(key))).status); // 400
      record((await postEvent(target, validEvent(), bearer(unknownKey))).status);
      record((await postEvent(target, validEvent(), bearer(malformedKey))).status);
      record((await postEvent(target, validEvent(), bearer(revoked.secret))).status);
      record((await postEvent(target, validEvent(), bearer(token))).status);
      record((await listEvents(target, bearer(key))).status);
      record((await listEvents(target, bearer(token))).status);
      record((await listEvents(target, bearer(forgedToken))).status);
      record((await listEvents(target, bearer(expiredToken))).status);
      record((await issueToken(target, bearer(unknownKey))).status);
      const badAdmin = await fetch(`${url}/audit.v1.AdminService/ListProjects`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${badAdminToken}` },
        body: "{}",
      });
      record(badAdmin.status);
      expect(statuses).toEqual([
        201, 201, 201, 200, 409, 201, 200, 409, 422, 400, 401, 401, 403, 403, 200, 200, 401, 401,
        401, 401,
      ]);

      // The last request's debug line is written when its response finishes.
      const deadline = Date.now() + 5_000;
      const requestLines = () => service.stdout.filter((line) => line.includes('"msg":"request"'));
      while (requestLines().length < statuses.length && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // The grep is not vacuous: every request was logged at debug level.
      expect(requestLines().length).toBeGreaterThanOrEqual(statuses.length);

      const secrets: Record<string, string> = {
        "API key": key,
        "API key after its display prefix": key.slice(12),
        "revoked key": revoked.secret,
        "revoked key after its display prefix": revoked.secret.slice(12),
        "frontend token": token,
        "frontend token signature": token.split(".")[2] ?? "",
        "forged token": forgedToken,
        "expired token": expiredToken,
        "unknown key": unknownKey,
        "malformed key": malformedKey,
        "admin token": service.adminToken,
        "bad admin token": badAdminToken,
        "token signing key": SIGNING_KEY,
        "first Idempotency-Key": idempotencyKeys[0] ?? "",
        "second Idempotency-Key": idempotencyKeys[1] ?? "",
      };
      const log = [...service.stdout, service.stderr()];
      for (const [name, secret] of Object.entries(secrets)) {
        expect(secret.length, name).toBeGreaterThan(10);
        const leaks = log.filter((line) => line.includes(secret));
        expect(leaks, `${name} found in the logs`).toEqual([]);
      }
    } finally {
      await service.cleanup();
    }
  }, 120_000);
});
