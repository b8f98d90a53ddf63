/**
 * Create Frontend Token's rules called directly (no server): who may issue, the lifetime
 * bounds, the tenant narrowing, and that a token grants no more than its key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Credential } from "../../src/auth/credentials.js";
import { ServiceError } from "../../src/errors.js";
import { DEFAULT_TOKEN_SECONDS, MAX_TOKEN_SECONDS } from "../../src/events/token-service.js";
import { createDirectServices, type DirectServices } from "../support/direct-services.js";

async function refusal(call: Promise<unknown>): Promise<ServiceError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${error}`);
  return error;
}

describe("Create Frontend Token rules, called directly", () => {
  let services: DirectServices;
  let credential: Credential;
  let projectId: string;
  beforeAll(async () => {
    services = await createDirectServices();
    const key = await services.provision({ environment: "live" });
    projectId = key.projectId;
    credential = { kind: "api_key", value: key.secret, via: "bearer" };
  });
  afterAll(async () => {
    await services?.close();
  });

  const issue = (params: unknown, as: Credential = credential) =>
    services.tokens.createFrontendToken({ credential: as, params: () => params });

  it("issues a read-only token for the key's project and environment, 90 s by default", async () => {
    const before = Date.now();
    const issued = await issue({});
    const lifetime = (issued.expiresAt.getTime() - before) / 1000;
    expect(lifetime).toBeGreaterThan(DEFAULT_TOKEN_SECONDS - 5);
    expect(lifetime).toBeLessThanOrEqual(DEFAULT_TOKEN_SECONDS + 1);
    const reader = await services.authenticator.requireReader({
      kind: "token",
      value: issued.token,
    });
    expect(reader).toEqual({ kind: "token", projectId, environment: "live", tenantId: undefined });
  });

  it("a tenant-narrowed token reads that tenant only", async () => {
    const issued = await issue({ tenantId: "tenant_7", expiresInSeconds: 60 });
    const reader = await services.authenticator.requireReader({
      kind: "token",
      value: issued.token,
    });
    expect(reader.tenantId).toBe("tenant_7");
  });

  it.each([0, MAX_TOKEN_SECONDS + 1, 1.5, "ten", -1])(
    "expiresInSeconds %s is a 400",
    async (asked) => {
      const error = await refusal(issue({ expiresInSeconds: asked }));
      expect(error.kind).toBe("bad_request");
      expect(error.message).toBe(
        `expiresInSeconds must be an integer from 1 to ${MAX_TOKEN_SECONDS}`,
      );
    },
  );

  it("the longest lifetime is accepted, also as a decimal string", async () => {
    const issued = await issue({ expiresInSeconds: String(MAX_TOKEN_SECONDS) });
    expect(issued.expiresAt.getTime() - Date.now()).toBeGreaterThan((MAX_TOKEN_SECONDS - 5) * 1000);
  });

  it.each([[""], ["x".repeat(65)], [42]])(
    "tenantId %j is a 400, not an unrestricted token",
    async (tenantId) => {
      const error = await refusal(issue({ tenantId }));
      expect(error.kind).toBe("bad_request");
      expect(error.message).toBe("tenantId must be a string of 1 to 64 characters");
    },
  );

  it("a body that is not a JSON object is a 400", async () => {
    const error = await refusal(issue([]));
    expect(error).toMatchObject({
      kind: "bad_request",
      message: "Request body must be a JSON object",
    });
  });

  it("a frontend token cannot issue tokens; a revoked key cannot either", async () => {
    const token = await issue({});
    const byToken = await refusal(issue({}, { kind: "token", value: token.token }));
    expect(byToken.kind).toBe("permission_denied");
    expect(byToken.message).toBe(
      "Frontend tokens are read-only and cannot issue tokens: use an API key",
    );

    const other = await services.provision();
    await services.admin.setApiKeyStatus(other.keyId, "revoked");
    const byRevoked = await refusal(
      issue({}, { kind: "api_key", value: other.secret, via: "x-project-key" }),
    );
    expect(byRevoked).toMatchObject({
      kind: "permission_denied",
      message: "API key has been revoked",
    });
  });

  // Found by an outside audit (2026-11-28): any JWT-shaped value got the 403 meant for a
  // genuine token; as at Create Event, one that is not genuine is no API key (401).
  it("a forged or expired token is no API key: 401 Invalid API key format, as at Create Event", async () => {
    const token = (await issue({})).token;
    const [header, payload, signature] = token.split(".");
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString()) as Record<
      string,
      unknown
    >;
    const expired = Buffer.from(JSON.stringify({ ...claims, exp: 1_000 })).toString("base64url");
    for (const value of [
      "eyJhbGciOiJIUzI1NiJ9.e30.bad",
      `${header}.${payload}.${signature?.slice(0, -4)}AAAA`,
      `${header}.${expired}.${signature}`,
    ]) {
      const refused = await refusal(issue({}, { kind: "token", value }));
      expect(refused).toMatchObject({ kind: "unauthenticated", message: "Invalid API key format" });
    }
  });

  it("a token stops reading once the key that issued it is revoked", async () => {
    const key = await services.provision();
    const issued = await issue({}, { kind: "api_key", value: key.secret, via: "bearer" });
    await services.admin.setApiKeyStatus(key.keyId, "revoked");
    const error = await refusal(
      services.authenticator.requireReader({ kind: "token", value: issued.token }),
    );
    expect(error).toMatchObject({ kind: "permission_denied", message: "API key has been revoked" });
  });
});
