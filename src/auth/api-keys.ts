/**
 * API keys: `pk_<env>_<random>`. Only the SHA-256 hash of a key is stored; a lookup is
 * by hash through a unique index, so no secret is ever compared byte by byte in code.
 */
import { hash, randomBytes } from "node:crypto";
import type { EnvironmentName } from "../vocabulary/tenancy.js";

/** The spec's key format: `pk_`, the environment, `_`, a random string. */
export const API_KEY_FORMAT = /^pk_(test|live)_[A-Za-z0-9_-]+$/;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_CHARS = 40;
/** Characters of a key kept for display: `pk_test_` and four more. */
const PREFIX_CHARS = 12;

/** A new key: the secret (shown once), its hash and its display prefix. */
export interface NewApiKey {
  secret: string;
  hash: Buffer;
  prefix: string;
}

/** Makes a new random key for `environment` (about 238 bits of randomness). */
export function generateApiKey(environment: EnvironmentName): NewApiKey {
  let random = "";
  while (random.length < RANDOM_CHARS) {
    for (const byte of randomBytes(RANDOM_CHARS)) {
      // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && random.length < RANDOM_CHARS) random += BASE62[byte % 62];
    }
  }
  const secret = `pk_${environment}_${random}`;
  return { secret, hash: hashApiKey(secret), prefix: secret.slice(0, PREFIX_CHARS) };
}

/** The stored form of a key. */
export function hashApiKey(secret: string): Buffer {
  return hash("sha256", secret, "buffer");
}
