/**
 * Authentication of API keys. Keys are found by hash and cached in memory for
 * API_KEY_CACHE_SECONDS (5 s by default): a revocation on any instance takes effect on
 * every instance within that time, and at once on the instance that revoked it.
 */
import { Messages, ServiceError } from "../errors.js";
import type { ApiKeyIdentity, EnvironmentName, PlanName, ProjectStore } from "../store/projects.js";
import { API_KEY_FORMAT, hashApiKey } from "./api-keys.js";
import type { Credential } from "./credentials.js";

/** Who is calling: an active API key of one project and environment. */
export interface KeyPrincipal {
  kind: "api_key";
  keyId: string;
  projectId: string;
  environment: EnvironmentName;
  plan: PlanName;
}

/** Turns credentials into principals. */
export interface Authenticator {
  /**
   * The principal of an API key allowed to write; throws 401 or 403 ServiceErrors with
   * the spec's messages otherwise.
   */
  requireApiKey(credential: Credential): Promise<KeyPrincipal>;
  /** Forgets cached keys of a project, or all, after an administrative change. */
  invalidate(): void;
}

interface CacheEntry {
  identity: ApiKeyIdentity | undefined;
  expiresAt: number;
}

/** Options of the authenticator. */
export interface AuthenticatorOptions {
  projects: ProjectStore;
  cacheSeconds: number;
  cacheSize?: number;
  now?: () => number;
}

/** Creates the authenticator. */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { projects } = options;
  const now = options.now ?? Date.now;
  const ttl = options.cacheSeconds * 1000;
  const cacheSize = options.cacheSize ?? 50_000;
  const cache = new Map<string, CacheEntry>();

  const lookup = async (secret: string): Promise<ApiKeyIdentity | undefined> => {
    const hash = hashApiKey(secret);
    const cacheKey = hash.toString("base64");
    const cached = cache.get(cacheKey);
    if (cached && cached.expiresAt > now()) return cached.identity;
    const identity = await projects.findApiKeyByHash(hash);
    if (ttl > 0) {
      if (cache.size >= cacheSize) cache.clear();
      cache.set(cacheKey, { identity, expiresAt: now() + ttl });
    }
    return identity;
  };

  return {
    async requireApiKey(credential) {
      if (credential.kind === "none")
        throw new ServiceError("unauthenticated", Messages.missingKey);
      if (credential.kind === "token") {
        throw new ServiceError("permission_denied", Messages.readOnlyToken);
      }
      if (!API_KEY_FORMAT.test(credential.value)) {
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
    invalidate() {
      cache.clear();
    },
  };
}
