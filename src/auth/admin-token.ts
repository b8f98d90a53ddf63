/**
 * The admin token guard: every AdminService call presents `Authorization: Bearer
 * <ADMIN_TOKEN>`. Without a configured token the admin API is disabled and refuses every
 * call. The comparison is of SHA-256 digests, so it takes the same time whatever the
 * token presented, and the configured token is kept only as its digest.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ServiceError } from "../errors.js";

/** Checks the admin token a call presents. */
export interface AdminTokenGuard {
  /**
   * Returns when `bearer` (the call's Bearer value) is the admin token; throws 403 when
   * the admin API is disabled, 401 `Missing admin token` or `Invalid admin token`.
   */
  check(bearer: string | undefined): void;
}

/** Creates the guard for `adminToken`; undefined disables the admin API. */
export function createAdminTokenGuard(adminToken: string | undefined): AdminTokenGuard {
  const expected = adminToken ? digest(adminToken) : undefined;
  return {
    check(bearer) {
      if (!expected) {
        throw new ServiceError("permission_denied", "The admin API is disabled: set ADMIN_TOKEN");
      }
      if (!bearer) throw new ServiceError("unauthenticated", "Missing admin token");
      if (!timingSafeEqual(digest(bearer), expected)) {
        throw new ServiceError("unauthenticated", "Invalid admin token");
      }
    },
  };
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
