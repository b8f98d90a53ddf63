/**
 * Frontend tokens and read scoping, as an attacker or a browser would try them: issuing,
 * reading with a token, expired, forged, wrong-audience, `alg: none` and algorithm-swap
 * tokens, tokens used to write, and reads across projects, environments and tenants.
 */
import { randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { base64url, decodeJwt, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import {
  bearer,
  createEvents,
  type EventClients,
  eventClients,
  issueToken,
  listAll,
  listEvents,
  listedEvents,
  tokenFor,
} from "../events/events-client.js";
import { rpcFailure } from "../support/rpc.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

const SIGNING_KEY = randomBytes(32).toString("hex");
const INVALID = { error: "Invalid token" };
const EXPIRED = { error: "Token expired" };

/** Signs `payload` as the service would, or with what `options` change. */
async function sign(
  payload: JWTPayload,
  options: { key?: string; alg?: string } = {},
): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: options.alg ?? "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(options.key ?? SIGNING_KEY));
}

/** `payload` without the claim `name`. */
function without(payload: JWTPayload, name: string): JWTPayload {
  return Object.fromEntries(Object.entries(payload).filter(([claim]) => claim !== name));
}

/** A token with header and payload as given and no signature (`alg: none`). */
function unsigned(header: Record<string, unknown>, payload: JWTPayload): string {
  const part = (value: unknown) => base64url.encode(JSON.stringify(value));
  return `${part(header)}.${part(payload)}.`;
}

describe("frontend tokens", () => {
  let server: TestServer;
  let clients: EventClients;
  let key: ProvisionedKey;
  /** The claims of a genuine token of `key`, to alter. */
  let claims: JWTPayload;

  const tenants = ["acme", "globex", "acme", "initech", undefined, "globex"];

  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT_MAX: "1000000000",
      TOKEN_SIGNING_KEY: SIGNING_KEY,
    });
    clients = eventClients(server.url);
    key = await server.provision();
    await createEvents(
      server,
      key.secret,
      tenants.map((tenantId, i) =>
        validEvent({
          entityId: `e${i}`,
          ...(tenantId ? { tenantId, actorDisplay: tenantId } : {}),
        }),
      ),
    );
    claims = decodeJwt(await tokenFor(server, key.secret));
  });
  afterAll(async () => {
    clients?.close();
    await server?.close();
  });

  describe("issuing", () => {
    it("an API key gets {token, expiresAt}: a JWT scoped to its project, 90 s by default", async () => {
      const before = Math.floor(Date.now() / 1000);
      const response = await issueToken(server, bearer(key.secret));
      expect(response.status).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual(["expiresAt", "token"]);
      const token = response.body.token as string;
      const payload = decodeJwt(token);
      expect(payload).toMatchObject({ sub: key.projectId, env: "test", scope: "events:read" });
      expect(payload.tenant).toBeUndefined();
      expect(payload.exp).toBe((payload.iat ?? 0) + 90);
      expect(payload.iat).toBeGreaterThanOrEqual(before);
      expect(Date.parse(response.body.expiresAt as string)).toBe((payload.exp ?? 0) * 1000);
    });

    it("X-Project-Key issues tokens too", async () => {
      const response = await issueToken(server, { "x-project-key": key.secret });
      expect(response.status).toBe(200);
    });

    it.each([1, 60, 3600])("expiresInSeconds %i is honoured", async (seconds) => {
      const payload = decodeJwt(await tokenFor(server, key.secret, { expiresInSeconds: seconds }));
      expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(seconds);
    });

    it("tenantId restricts the token and is carried in it", async () => {
      const payload = decodeJwt(await tokenFor(server, key.secret, { tenantId: "acme" }));
      expect(payload.tenant).toBe("acme");
    });

    it.each([0, -5, 3601, 1.5, "soon", true])(
      "expiresInSeconds %j is a 400",
      async (expiresInSeconds) => {
        const response = await issueToken(server, bearer(key.secret), { expiresInSeconds });
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          error: "expiresInSeconds must be an integer from 1 to 3600",
        });
      },
    );

    // null is what JSON.stringify writes for an unset variable: like "", it must not
    // mint an unrestricted token (only leaving the field out asks for one).
    it.each(["", null, "t".repeat(65), 42])("tenantId %j is a 400", async (tenantId) => {
      const response = await issueToken(server, bearer(key.secret), { tenantId });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: "tenantId must be a string of 1 to 64 characters" });
    });

    it.each(["", null])("tenant_id %j (the proto name) is a 400 too", async (tenantId) => {
      const response = await issueToken(server, bearer(key.secret), { tenant_id: tenantId });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: "tenantId must be a string of 1 to 64 characters" });
    });

    it("without credentials: 401", async () => {
      const response = await issueToken(server, {});
      expect(response.status).toBe(401);
    });

    it("a revoked key cannot issue tokens: 403", async () => {
      const revoked = await server.provision();
      await server.admin.revokeApiKey({ id: revoked.keyId });
      const response = await issueToken(server, bearer(revoked.secret));
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ error: "API key has been revoked" });
    });

    it("a token cannot issue tokens: 403", async () => {
      const token = await tokenFor(server, key.secret);
      const response = await issueToken(server, bearer(token), { expiresInSeconds: 3600 });
      expect(response.status).toBe(403);
      expect(response.body.error).toMatch(/read-only/);
    });
  });

  describe("reading with a token", () => {
    it("lists the events of the key's project and environment", async () => {
      const token = await tokenFor(server, key.secret);
      const withToken = await listEvents(server, bearer(token));
      const withKey = await listEvents(server, bearer(key.secret));
      expect(withToken.status).toBe(200);
      expect(withToken.body).toEqual(withKey.body);
      expect(withToken.body.events).toHaveLength(tenants.length);
    });

    it("over Connect and gRPC as well", async () => {
      const token = await tokenFor(server, key.secret);
      for (const client of [clients.connect, clients.grpc]) {
        const reply = await client.listEvents({}, { headers: bearer(token) });
        expect(reply.events).toHaveLength(tenants.length);
      }
    });

    it("a token cannot create events: 403, and nothing is written", async () => {
      const token = await tokenFor(server, key.secret);
      const response = await postEvent(server, validEvent(), bearer(token));
      expect(response.status).toBe(403);
      expect(response.body).toEqual({
        error: "Frontend tokens are read-only and cannot create events",
      });
      expect(await listedEvents(server, bearer(key.secret))).toHaveLength(tenants.length);
    });

    it("revoking the key that issued a token cuts the token off: 403", async () => {
      const other = await server.provision();
      const token = await tokenFor(server, other.secret);
      expect((await listEvents(server, bearer(token))).status).toBe(200);
      await server.admin.revokeApiKey({ id: other.keyId });
      const response = await listEvents(server, bearer(token));
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ error: "API key has been revoked" });
    });
  });

  describe("refused tokens", () => {
    it("a token past its expiry: 401 Token expired", async () => {
      const response = await issueToken(server, bearer(key.secret), { expiresInSeconds: 1 });
      const token = response.body.token as string;
      const wait = Date.parse(response.body.expiresAt as string) + 1100 - Date.now();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
      const listed = await listEvents(server, bearer(token));
      expect(listed.status).toBe(401);
      expect(listed.body).toEqual(EXPIRED);
    });

    it("a genuine-looking token whose exp has passed: 401 Token expired", async () => {
      const now = Math.floor(Date.now() / 1000);
      const token = await sign({ ...claims, iat: now - 120, exp: now - 30 });
      const response = await listEvents(server, bearer(token));
      expect(response.status).toBe(401);
      expect(response.body).toEqual(EXPIRED);
    });

    it("an expired token is Unauthenticated over Connect and gRPC, with the same message", async () => {
      const now = Math.floor(Date.now() / 1000);
      const token = await sign({ ...claims, exp: now - 30 });
      for (const client of [clients.connect, clients.grpc]) {
        const error = await rpcFailure(client.listEvents({}, { headers: bearer(token) }));
        expect(error.code).toBe(Code.Unauthenticated);
        expect(error.rawMessage).toBe("Token expired");
      }
    });

    it.each<[string, () => Promise<string>]>([
      ["signed with another key", () => sign(claims, { key: randomBytes(32).toString("hex") })],
      [
        "expired and signed with another key",
        () => sign({ ...claims, exp: 1 }, { key: "x".repeat(40) }),
      ],
      ["for another audience", () => sign({ ...claims, aud: "some-other-api" })],
      ["from another issuer", () => sign({ ...claims, iss: "someone-else" })],
      ["without an audience", () => sign(without(claims, "aud"))],
      ["without an expiry", () => sign(without(claims, "exp"))],
      ["with another scope", () => sign({ ...claims, scope: "events:write" })],
      ["for an unknown environment", () => sign({ ...claims, env: "prod" })],
      ["without its issuing key", () => sign(without(claims, "key"))],
      [
        "naming a key that does not exist",
        () => sign({ ...claims, key: "01900000-0000-7000-8000-000000000000" }),
      ],
      ["with an empty tenant", () => sign({ ...claims, tenant: "" })],
      ["signed HS512 with the right key (algorithm swap)", () => sign(claims, { alg: "HS512" })],
      ["with alg none", async () => unsigned({ alg: "none", typ: "JWT" }, claims)],
      ["with alg none and a signature", async () => `${unsigned({ alg: "none" }, claims)}c2ln`],
      [
        "with its payload altered (another project) and the original signature",
        async () => {
          const [header, , signature] = (await tokenFor(server, key.secret)).split(".");
          const other = await server.provision();
          const payload = base64url.encode(JSON.stringify({ ...claims, sub: other.projectId }));
          return `${header}.${payload}.${signature}`;
        },
      ],
      ["malformed", async () => "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln"],
    ])("a token %s: 401 Invalid token", async (_what, make) => {
      const token = await make();
      const response = await listEvents(server, bearer(token));
      expect(response.status).toBe(401);
      expect(response.body).toEqual(INVALID);
    });

    it("a token of a project bound to a key of another project: 401 Invalid token", async () => {
      const other = await server.provision();
      const otherClaims = decodeJwt(await tokenFor(server, other.secret));
      // A validly signed token (as if the signing key leaked) claiming key's project with
      // other's key id: the key does not belong to the project, so it is refused.
      const token = await sign({ ...claims, key: otherClaims.key });
      const response = await listEvents(server, bearer(token));
      expect(response.status).toBe(401);
      expect(response.body).toEqual(INVALID);
    });
  });

  describe("scoping", () => {
    it("a tenant-restricted token sees only its tenant", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "acme" });
      const events = await listedEvents(server, bearer(token));
      expect(events.map((event) => event.tenantId)).toEqual(["acme", "acme"]);
    });

    it("a tenant of 64 emoji (64 code points, 128 UTF-16 units) is valid for events and tokens alike; 65 for neither", async () => {
      const tenantId = "\u{1F600}".repeat(64);
      const created = await postEvent(server, validEvent({ tenantId }), bearer(key.secret));
      expect(created.status).toBe(201);
      const token = await tokenFor(server, key.secret, { tenantId });
      const events = await listedEvents(server, bearer(token));
      expect(events.map((event) => event.eventId)).toEqual([created.body.eventId]);

      const longer = `${tenantId}\u{1F600}`;
      expect(
        (await postEvent(server, validEvent({ tenantId: longer }), bearer(key.secret))).status,
      ).toBe(422);
      const refused = await issueToken(server, bearer(key.secret), { tenantId: longer });
      expect(refused.status).toBe(400);
    });

    it("a tenant-restricted token asking for another tenant gets nothing", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "acme" });
      const response = await listEvents(server, bearer(token), { tenantId: "globex" });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ events: [], nextCursor: null });
    });

    it("a tenant-restricted token asking for its own tenant gets it", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "acme" });
      expect(await listedEvents(server, bearer(token), { tenantId: "acme" })).toHaveLength(2);
    });

    it("a tenant-restricted token's search stays within its tenant", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "acme" });
      expect(await listedEvents(server, bearer(token), { q: "globex" })).toEqual([]);
      expect(await listedEvents(server, bearer(token), { q: "acme" })).toHaveLength(2);
    });

    it("a tenant-restricted token pages within its tenant", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "globex" });
      const all = await listAll(server, bearer(token), { limit: 1 });
      expect(all.events.map((event) => event.tenantId)).toEqual(["globex", "globex"]);
    });

    it("a tenant-restricted token over gRPC is restricted too", async () => {
      const token = await tokenFor(server, key.secret, { tenantId: "initech" });
      const reply = await clients.grpc.listEvents({ tenantId: "acme" }, { headers: bearer(token) });
      expect(reply.events).toEqual([]);
      const own = await clients.grpc.listEvents({}, { headers: bearer(token) });
      expect(own.events.map((event) => event.tenantId)).toEqual(["initech"]);
    });

    it("another project's key and token see none of these events", async () => {
      const other = await server.provision();
      await createEvents(server, other.secret, [validEvent({ entityId: "theirs" })]);
      const mine = new Set(
        (await listedEvents(server, bearer(key.secret))).map((event) => event.eventId),
      );
      for (const credential of [other.secret, await tokenFor(server, other.secret)]) {
        const events = await listedEvents(server, bearer(credential));
        expect(events.map((event) => event.entityId)).toEqual(["theirs"]);
        expect(events.some((event) => mine.has(event.eventId))).toBe(false);
        // Filters naming this project's values find nothing there either.
        expect(await listedEvents(server, bearer(credential), { tenantId: "acme" })).toEqual([]);
      }
    });

    it("test and live keys of one project see only their own environment", async () => {
      const project = await server.provision();
      const live = await server.admin.createApiKey({
        projectId: project.projectId,
        environment: Environment.LIVE,
      });
      await createEvents(server, project.secret, [validEvent({ entityId: "in-test" })]);
      await createEvents(server, live.secret, [validEvent({ entityId: "in-live" })]);
      const seen = async (credential: string) =>
        (await listedEvents(server, bearer(credential))).map((event) => event.entityId);
      expect(await seen(project.secret)).toEqual(["in-test"]);
      expect(await seen(live.secret)).toEqual(["in-live"]);
      expect(await seen(await tokenFor(server, project.secret))).toEqual(["in-test"]);
      const liveToken = await tokenFor(server, live.secret);
      expect(decodeJwt(liveToken).env).toBe("live");
      expect(await seen(liveToken)).toEqual(["in-live"]);
    });

    it("a token claiming the other environment of its key is refused", async () => {
      const token = await sign({ ...claims, env: "live" });
      const response = await listEvents(server, bearer(token));
      expect(response.status).toBe(401);
      expect(response.body).toEqual(INVALID);
    });
  });
});
