/**
 * Frontend tokens: short-lived, read-only JWTs that a customer's backend obtains with its
 * API key and hands to a browser. This module owns their format and both ends of their
 * life: issuing and verifying.
 *
 * Invariants: tokens are HS256 (HMAC-SHA256 with TOKEN_SIGNING_KEY, the same secret on
 * every instance) and verification accepts HS256 only, so `alg: none` or an algorithm
 * swap never verifies; issuer, audience, expiry and every claim the service relies on
 * are checked. A token never carries more than read access to one project and
 * environment, optionally narrowed to one tenant.
 *
 * Claims: `iss`, `aud`, `iat`, `exp`, `jti`, `sub` (the project id), `env` (`test` or
 * `live`), `scope` (`events:read`), `key` (the id of the API key that issued it, so that
 * revoking the key also cuts off its tokens) and, when restricted, `tenant`.
 */
import { randomUUID } from "node:crypto";
import { errors, jwtVerify, SignJWT } from "jose";
import { ServiceError } from "../errors.js";
import { isUuid } from "../ids.js";
import type { EnvironmentName } from "../vocabulary/tenancy.js";

/** The `iss` of every token. */
export const TOKEN_ISSUER = "audit-event-service";
/** The `aud` of every token: only the read API accepts them. */
export const TOKEN_AUDIENCE = "audit-event-service:read";
/** The only permission a token grants. */
export const TOKEN_SCOPE = "events:read";
/** The one algorithm tokens are signed and verified with. */
export const TOKEN_ALGORITHM = "HS256";

/** Messages of token refusals (401). */
export const TokenMessages = {
  expired: "Token expired",
  invalid: "Invalid token",
} as const;

/** What a token lets its bearer read. */
export interface TokenGrant {
  projectId: string;
  environment: EnvironmentName;
  /** The API key that issued the token. */
  keyId: string;
  /** When set, the bearer reads this tenant's events only. */
  tenantId?: string;
}

/** A verified token. */
export interface VerifiedToken extends TokenGrant {
  expiresAt: Date;
}

/** An issued token. */
export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

/** Issues and verifies frontend tokens. */
export interface FrontendTokens {
  /** Signs a token for `grant` that expires `lifetimeSeconds` from now (at least; exp is whole seconds). */
  issue(grant: TokenGrant, lifetimeSeconds: number): Promise<IssuedToken>;
  /**
   * The grant of a valid token; throws a 401 ServiceError `Token expired` or `Invalid
   * token` otherwise.
   */
  verify(token: string): Promise<VerifiedToken>;
}

/** Options of createFrontendTokens. */
export interface FrontendTokenOptions {
  /** TOKEN_SIGNING_KEY: its UTF-8 bytes are the HMAC key. */
  signingKey: string;
  now?: () => Date;
}

/** Creates the token issuer and verifier. */
export function createFrontendTokens(options: FrontendTokenOptions): FrontendTokens {
  const key = new TextEncoder().encode(options.signingKey);
  const now = options.now ?? (() => new Date());
  const invalid = () => new ServiceError("unauthenticated", TokenMessages.invalid);

  return {
    async issue(grant, lifetimeSeconds) {
      // The claims are whole seconds: the moment of issue rounded up, so that the token
      // lives at least the lifetime asked for (less than a second more), never less (a
      // 1 s token could arrive expired), and `exp - iat` is that lifetime.
      const issuedAt = Math.ceil(now().getTime() / 1000);
      const expiresAt = issuedAt + lifetimeSeconds;
      const token = await new SignJWT({
        env: grant.environment,
        scope: TOKEN_SCOPE,
        key: grant.keyId,
        ...(grant.tenantId === undefined ? {} : { tenant: grant.tenantId }),
      })
        .setProtectedHeader({ alg: TOKEN_ALGORITHM, typ: "JWT" })
        .setIssuer(TOKEN_ISSUER)
        .setAudience(TOKEN_AUDIENCE)
        .setSubject(grant.projectId)
        .setJti(randomUUID())
        .setIssuedAt(issuedAt)
        .setExpirationTime(expiresAt)
        .sign(key);
      return { token, expiresAt: new Date(expiresAt * 1000) };
    },

    async verify(token) {
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms: [TOKEN_ALGORITHM],
          issuer: TOKEN_ISSUER,
          audience: TOKEN_AUDIENCE,
          requiredClaims: ["exp", "sub", "env", "scope", "key"],
          currentDate: now(),
        }));
      } catch (error) {
        // jose checks the signature before the claims: a forged expired token is invalid.
        if (error instanceof errors.JWTExpired) {
          throw new ServiceError("unauthenticated", TokenMessages.expired);
        }
        throw invalid();
      }
      const { sub, env, scope, key: keyId, tenant, exp } = payload;
      if (
        typeof sub !== "string" ||
        !isUuid(sub) ||
        (env !== "test" && env !== "live") ||
        scope !== TOKEN_SCOPE ||
        typeof keyId !== "string" ||
        !isUuid(keyId) ||
        typeof exp !== "number" ||
        (tenant !== undefined && (typeof tenant !== "string" || tenant.length === 0))
      ) {
        throw invalid();
      }
      return {
        projectId: sub,
        environment: env,
        keyId,
        ...(typeof tenant === "string" ? { tenantId: tenant } : {}),
        expiresAt: new Date(exp * 1000),
      };
    },
  };
}
