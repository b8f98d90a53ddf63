/**
 * Create Frontend Token, the same for every protocol. Only an active API key issues
 * tokens, and a token grants no more than the key's project and environment, read-only,
 * for 1 s to 1 h (90 s by default), optionally narrowed to one tenant.
 *
 * A `tenantId` sent empty or null is refused rather than ignored: an unrestricted token
 * minted because a caller's tenant variable was empty or unset would let a browser read
 * every tenant.
 */
import type { Authenticator } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import type { FrontendTokens, IssuedToken } from "../auth/frontend-tokens.js";
import { ServiceError } from "../errors.js";
import { longerThan, MAX_TENANT_ID_CHARS } from "../vocabulary/text-length.js";

/** Lifetime of a token when none is asked for, in seconds. */
export const DEFAULT_TOKEN_SECONDS = 90;
/** The longest lifetime, in seconds. */
export const MAX_TOKEN_SECONDS = 3600;

/** A Create Frontend Token request, as any transport hands it over. */
export interface CreateTokenRequest {
  credential: Credential;
  /** The request's JSON form: `expiresInSeconds`, `tenantId`; checked here. */
  params: () => unknown;
}

/** Dependencies of the token service. */
export interface TokenServiceDeps {
  authenticator: Authenticator;
  tokens: FrontendTokens;
}

/** The Create Frontend Token operation. */
export interface TokenService {
  createFrontendToken(request: CreateTokenRequest): Promise<IssuedToken>;
}

const bad = (message: string) => new ServiceError("bad_request", message);

/** Creates the token service. */
export function createTokenService(deps: TokenServiceDeps): TokenService {
  return {
    async createFrontendToken(request) {
      // As at Create Event: a genuine token (signed here, unexpired) is refused with 403,
      // here saying that tokens cannot issue tokens; any other JWT-shaped value (forged,
      // expired) is no API key, 401.
      const principal = await deps.authenticator
        .requireApiKey(request.credential)
        .catch((error: unknown) => {
          if (
            request.credential.kind === "token" &&
            error instanceof ServiceError &&
            error.kind === "permission_denied"
          ) {
            throw new ServiceError(
              "permission_denied",
              "Frontend tokens are read-only and cannot issue tokens: use an API key",
            );
          }
          throw error;
        });
      const json = request.params();
      const input =
        typeof json === "object" && json !== null && !Array.isArray(json)
          ? (json as Record<string, unknown>)
          : undefined;
      if (!input) throw bad("Request body must be a JSON object");

      let lifetime = DEFAULT_TOKEN_SECONDS;
      const asked = input.expiresInSeconds ?? input.expires_in_seconds;
      if (asked !== undefined && asked !== null) {
        const value =
          typeof asked === "number"
            ? asked
            : typeof asked === "string" && /^\d{1,9}$/.test(asked)
              ? Number(asked)
              : Number.NaN;
        if (!Number.isInteger(value) || value < 1 || value > MAX_TOKEN_SECONDS) {
          throw bad(`expiresInSeconds must be an integer from 1 to ${MAX_TOKEN_SECONDS}`);
        }
        lifetime = value;
      }

      // Present means sent, null included: only a body without the field asks for an
      // unrestricted token. (Over RPC, protobuf's JSON mapping reads null as absent.)
      const tenantField = ["tenantId", "tenant_id"].find((name) => Object.hasOwn(input, name));
      const tenantId = tenantField === undefined ? undefined : input[tenantField];
      if (
        tenantField !== undefined &&
        (typeof tenantId !== "string" ||
          tenantId.length === 0 ||
          longerThan(tenantId, MAX_TENANT_ID_CHARS))
      ) {
        throw bad(`tenantId must be a string of 1 to ${MAX_TENANT_ID_CHARS} characters`);
      }

      return deps.tokens.issue(
        {
          projectId: principal.projectId,
          environment: principal.environment,
          keyId: principal.keyId,
          ...(typeof tenantId === "string" ? { tenantId } : {}),
        },
        lifetime,
      );
    },
  };
}
