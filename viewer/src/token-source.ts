/**
 * The frontend token of a viewer: asked of the host page's provider callback, kept while
 * it is fresh, and asked again before it expires (and at once when the service says it
 * has). The viewer never mints tokens: only the host's backend holds an API key.
 *
 * Invariants: at most one provider call is in flight, however many requests need a token;
 * a token is replaced `lead` before its expiry, where lead is 15 s or half the token's
 * lifetime for short-lived tokens, so a 3 s token is not refreshed in a tight loop.
 *
 * Expiry is measured on the browser's clock from the moment a token arrives, for the
 * token's own lifetime (`exp - iat`, both set by the service's clock): a browser whose
 * clock is off by minutes still refreshes on time. This assumes the provider hands out
 * freshly minted tokens; one that hands out old tokens is caught by the 401 `Token
 * expired` path (one refresh and one retry) instead.
 *
 * Kept free of DOM types so that Node tests can run it.
 */

/** What the host page provides: a fresh frontend token (from its own backend). */
export type TokenProvider = () => Promise<string> | string;

/** The provider failed or returned no token. */
export class TokenProviderError extends Error {
  override name = "TokenProviderError";
}

/** Tokens for a viewer's requests. */
export interface TokenSource {
  /** The current token, or a new one when there is none or it is about to expire. */
  get(): Promise<string>;
  /** A new token from the provider, whatever the current one's expiry. */
  refresh(): Promise<string>;
  /** Stops the scheduled refresh (the viewer left the page); get() still works. */
  stop(): void;
}

/** The time claims of a JWT, in seconds. */
export interface TokenTimes {
  issuedAt?: number;
  expiresAt?: number;
}

/** How long before expiry a token is replaced, at most. */
const MAX_LEAD_MS = 15_000;
/** The shortest wait before a scheduled refresh: no refresh loop whatever the token says. */
const MIN_REFRESH_DELAY_MS = 1_000;

/** Reads `iat` and `exp` from a JWT's payload (not verified: the service does that). */
export function tokenTimes(token: string): TokenTimes {
  const payload = token.split(".")[1];
  if (payload === undefined) return {};
  try {
    const base64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    const claims: unknown = JSON.parse(atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "=")));
    if (typeof claims !== "object" || claims === null) return {};
    const { iat, exp } = claims as Record<string, unknown>;
    return {
      ...(typeof iat === "number" ? { issuedAt: iat } : {}),
      ...(typeof exp === "number" ? { expiresAt: exp } : {}),
    };
  } catch {
    // Not a JWT the viewer can read: it is used until the service refuses it.
    return {};
  }
}

/** Creates a token source over the host's provider. */
export function createTokenSource(provider: TokenProvider): TokenSource {
  const now = () => Date.now();
  let token: string | undefined;
  // When the current token expires and when to replace it, on the local clock;
  // undefined: never (a token without exp).
  let expiresLocal: number | undefined;
  let refreshAt: number | undefined;
  let pending: Promise<string> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const schedule = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (refreshAt === undefined) return;
    const delay = Math.max(MIN_REFRESH_DELAY_MS, refreshAt - now());
    // A failed refresh here is not reported: the next request asks again and shows it.
    timer = setTimeout(() => void refresh().catch(() => {}), delay);
  };

  const accept = (next: string, received: number) => {
    if (next === token) {
      // The same token again (a host that has no newer one): its expiry is what it was,
      // and asking on a timer would only get it again; the next request or a 401 asks.
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      return;
    }
    token = next;
    const { issuedAt, expiresAt } = tokenTimes(next);
    if (expiresAt === undefined) {
      expiresLocal = undefined;
      refreshAt = undefined;
    } else {
      const lifetimeMs =
        issuedAt !== undefined && expiresAt > issuedAt
          ? (expiresAt - issuedAt) * 1000
          : expiresAt * 1000 - received;
      const lead = Math.min(MAX_LEAD_MS, Math.max(0, lifetimeMs) / 2);
      expiresLocal = received + lifetimeMs;
      refreshAt = expiresLocal - lead;
    }
    schedule();
  };

  const refresh = (): Promise<string> => {
    pending ??= (async () => {
      let next: unknown;
      try {
        next = await provider();
      } catch (error) {
        throw new TokenProviderError(error instanceof Error ? error.message : String(error));
      }
      if (typeof next !== "string" || next.trim().length === 0) {
        throw new TokenProviderError("the token provider returned no token");
      }
      accept(next.trim(), now());
      return next.trim();
    })().finally(() => {
      pending = undefined;
    });
    return pending;
  };

  return {
    async get() {
      if (pending) return pending;
      if (token !== undefined && (refreshAt === undefined || now() < refreshAt)) return token;
      const previous = token;
      try {
        return await refresh();
      } catch (error) {
        // A provider that fails while the current token has not expired yet: use it.
        const valid = expiresLocal === undefined || now() < expiresLocal;
        if (previous !== undefined && valid) return previous;
        throw error;
      }
    },
    refresh,
    stop() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
