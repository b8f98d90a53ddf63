/**
 * The rate limit as a step of the CreateEvent pipeline: after authentication (a 401 is
 * never limited), before the body is validated. When the limiter's backend (Redis) is
 * unreachable, requests are admitted (fail open): an audit log that refuses events
 * because a cache is down loses exactly what it exists to keep. Each such admission
 * is logged (at most once a minute) and counted in a metric; limiting resumes as soon
 * as the backend answers again.
 */
import type { Logger } from "pino";
import type { KeyPrincipal } from "../auth/authenticator.js";
import { Messages, ServiceError } from "../errors.js";
import type { AdmissionCheck } from "./admission.js";
import type { RateLimiter } from "./rate-limiter.js";

/** Dependencies of the rate-limit step. */
export interface RateLimitCheckDeps {
  limiter: RateLimiter;
  logger: Logger;
  onFailOpen: () => void;
  now?: () => number;
}

const WARN_EVERY_MS = 60_000;

/** The rate-limit step: one counter per API key. */
export function createRateLimitCheck(deps: RateLimitCheckDeps): AdmissionCheck {
  const now = deps.now ?? Date.now;
  let lastWarning = Number.NEGATIVE_INFINITY;
  return {
    async admit(principal: KeyPrincipal) {
      let decision: Awaited<ReturnType<RateLimiter["take"]>>;
      try {
        decision = await deps.limiter.take(principal.keyId);
      } catch (error) {
        deps.onFailOpen();
        if (now() - lastWarning >= WARN_EVERY_MS) {
          lastWarning = now();
          deps.logger.warn(
            { err: error },
            "rate limiter unreachable: admitting requests without a rate-limit check",
          );
        }
        return;
      }
      if (!decision.allowed) {
        throw new ServiceError("rate_limited", Messages.rateLimited, {
          retryAfterSeconds: retryAfterSeconds(decision.retryAfterMs),
        });
      }
    },
  };
}

/** Whole seconds until a slot frees, rounded up, at least 1 (a 0 would invite a retry storm). */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}
