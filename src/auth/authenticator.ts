/**
 * Authentication of API keys. Keys are found by hash and cached in memory for
 * API_KEY_CACHE_SECONDS (5 s by default): a revocation on any instance takes effect on
 * every instance within that time, and at once on the instance that revoked it.
 * Readers may also present a frontend token: it is verified (auth/frontend-tokens.ts)
 * and its issuing key must still be active, so revoking a key cuts off its tokens too.
 */
import { Messages, ServiceError } from "../errors.js";
import type { ApiKeyIdentity, ProjectStore } from "../store/projects.js";
import type { EnvironmentName, PlanName } from "../vocabulary/tenancy.js";
import { API_KEY_FORMAT, hashApiKey } from "./api-keys.js";
import { type Credential, unambiguous } from "./credentials.js";
import { type FrontendTokens, TokenMessages } from "./frontend-tokens.js";

/** Who is calling: an active API key of one project and environment. */
export interface KeyPrincipal {
  kind: "api_key";
  keyId: string;
  projectId: string;
  environment: EnvironmentName;
  plan: PlanName;
}

/**
 * Who may read: an active API key, or a frontend token issued by a key that is still
 * active, of one project and environment.
 */
export interface ReaderPrincipal {
  kind: "api_key" | "token";
  projectId: string;
  environment: EnvironmentName;
  /** Set for a tenant-restricted token: the reader sees this tenant's events only. */
  tenantId: string | undefined;
}

/** Turns credentials into principals. */
export interface Authenticator {
  /**
   * The principal of an API key allowed to write; throws 401 or 403 ServiceErrors with
   * the spec's messages otherwise.
   */
  requireApiKey(credential: Credential): Promise<KeyPrincipal>;
  /**
   * The principal of a credential allowed to read: an API key (as requireApiKey checks
   * it) or a frontend token. A token is refused with 401 `Token expired` or `Invalid
   * token`, and with 403 once the key that issued it is no longer active.
   */
  requireReader(credential: Credential): Promise<ReaderPrincipal>;
  /** Forgets cached keys of a project, or all, after an administrative change. */
  invalidate(): void;
}

/** Options of the authenticator. */
export interface AuthenticatorOptions {
  projects: ProjectStore;
  cacheSeconds: number;
  cacheSize?: number;
  /** Verifies frontend tokens; without it, every token is invalid. */
  tokens?: FrontendTokens;
  now?: () => number;
}

/** Creates the authenticator. */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { projects } = options;
  const now = options.now ?? Date.now;
  const ttl = options.cacheSeconds * 1000;
  const cacheSize = options.cacheSize ?? 50_000;

  /**
   * A lookup whose answers (misses too) are kept for API_KEY_CACHE_SECONDS. When full,
   * the cache starts over: simpler than LRU, and a refill costs one query per key.
   */
  const cached = <Value>(load: (key: string) => Promise<Value>) => {
    const entries = new Map<string, { value: Value; expiresAt: number }>();
    const get = async (key: string): Promise<Value> => {
      const hit = entries.get(key);
      if (hit && hit.expiresAt > now()) return hit.value;
      const value = await load(key);
      if (ttl > 0) {
        if (entries.size >= cacheSize) entries.clear();
        entries.set(key, { value, expiresAt: now() + ttl });
      }
      return value;
    };
    return { get, clear: () => entries.clear() };
  };

  // API keys by the base64 of their hash; the keys that issued tokens by id.
  const keysByHash = cached((hash) => projects.findApiKeyByHash(Buffer.from(hash, "base64")));
  const keysById = cached((id) => projects.getApiKey(id));
  const lookup = (secret: string): Promise<ApiKeyIdentity | undefined> =>
    keysByHash.get(hashApiKey(secret).toString("base64"));

  const authenticator: Authenticator = {
    async requireApiKey(presented) {
      const credential = unambiguous(presented);
      if (credential.kind === "none")
        throw new ServiceError("unauthenticated", Messages.missingKey);
      if (credential.kind === "token") {
        // A genuine frontend token is told it is read-only; anything else shaped like a
        // JWT (expired, forged, garbage) is just not an API key.
        const genuine = await options.tokens?.verify(credential.value).then(
          () => true,
          () => false,
        );
        if (genuine) throw new ServiceError("permission_denied", Messages.readOnlyToken);
        throw new ServiceError("unauthenticated", Messages.invalidKeyFormat);
      }
      if (credential.kind === "malformed" || !API_KEY_FORMAT.test(credential.value)) {
        throw new ServiceError("unauthenticated", Messages.invalidKeyFormat);
      }
      const identity = await lookup(credential.value);
      if (!identity) throw new ServiceError("unauthenticated", Messages.invalidKey);
      if (identity.status !== "active") {
        throw new ServiceError("permission_denied", Messages.revokedKey);
      }
      return {
        kind: "api_key",
        keyId: identity.id,
        projectId: identity.projectId,
        environment: identity.environment,
        plan: identity.plan,
      };
    },
    async requireReader(presented) {
      const credential = unambiguous(presented);
      if (credential.kind !== "token") {
        const principal = await authenticator.requireApiKey(credential);
        return {
          kind: "api_key",
          projectId: principal.projectId,
          environment: principal.environment,
          tenantId: undefined,
        };
      }
      if (!options.tokens) throw new ServiceError("unauthenticated", TokenMessages.invalid);
      const grant = await options.tokens.verify(credential.value);
      const key = await keysById.get(grant.keyId);
      if (!key || key.projectId !== grant.projectId || key.environment !== grant.environment) {
        throw new ServiceError("unauthenticated", TokenMessages.invalid);
      }
      if (key.status !== "active") throw new ServiceError("permission_denied", Messages.revokedKey);
      return {
        kind: "token",
        projectId: grant.projectId,
        environment: grant.environment,
        tenantId: grant.tenantId,
      };
    },
    invalidate() {
      keysByHash.clear();
      keysById.clear();
    },
  };
  return authenticator;
}
