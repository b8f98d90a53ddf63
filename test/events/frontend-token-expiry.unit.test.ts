/**
 * A frontend token lives at least the lifetime asked for: `exp` is whole seconds, rounded
 * up from the moment of issue (rounded down, a 1 s token issued late in a second was
 * expired when it reached its client; outside audit of 2026-11-29).
 */
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { createFrontendTokens } from "../../src/auth/frontend-tokens.js";
import { ServiceError } from "../../src/errors.js";

const GRANT = {
  projectId: "01930000-0000-7000-8000-000000000001",
  environment: "test",
  keyId: "01930000-0000-7000-8000-000000000002",
} as const;

describe("a frontend token's lifetime", () => {
  it.each([
    [1_800_000_000_000, 1],
    [1_800_000_000_001, 1],
    [1_800_000_000_999, 1],
    [1_800_000_000_500, 90],
  ])(
    "issued at %i ms for %i s: valid for the whole lifetime, expired less than 1 s after",
    async (issuedMs, seconds) => {
      let clock = issuedMs;
      const tokens = createFrontendTokens({
        signingKey: "k".repeat(32),
        now: () => new Date(clock),
      });
      const { token, expiresAt } = await tokens.issue(GRANT, seconds);
      const lifetimeMs = expiresAt.getTime() - issuedMs;
      expect(lifetimeMs).toBeGreaterThanOrEqual(seconds * 1000);
      expect(lifetimeMs).toBeLessThan(seconds * 1000 + 1000);
      const claims = decodeJwt(token);
      expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(seconds);

      clock = issuedMs + seconds * 1000 - 1;
      expect((await tokens.verify(token)).expiresAt).toEqual(expiresAt);
      clock = expiresAt.getTime() - 1;
      await expect(tokens.verify(token)).resolves.toMatchObject({ projectId: GRANT.projectId });
      clock = expiresAt.getTime();
      const refusal = await tokens.verify(token).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(ServiceError);
      expect((refusal as ServiceError).message).toBe("Token expired");
    },
  );
});
