/**
 * Secrets of the embedded default. With no DATABASE_URL, a new user gets a working
 * service without configuring anything: the master key, admin token and token signing
 * key are generated once into DATA_DIR (mode 0600) and reused on every start. With
 * PostgreSQL they must come from the environment, the same on every instance.
 */
import { hkdfSync, randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "./config.js";
import { ConfigError } from "./config.js";

/** The secrets the service runs with. */
export interface Secrets {
  masterKey: Buffer;
  adminToken: string | undefined;
  tokenSigningKey: string;
  /** The 32-byte Ed25519 seed that signs the logs' checkpoints. */
  logSigningKey: Buffer;
  /** Names of the secrets generated into DATA_DIR on this start. */
  generated: string[];
}

/** Reads a secret file, or creates it with `make()` when it does not exist. */
async function fileSecret(
  path: string,
  make: () => string,
): Promise<{ value: string; created: boolean }> {
  try {
    return { value: (await readFile(path, "utf8")).trim(), created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const value = make();
  await writeFile(path, `${value}\n`, { mode: 0o600, flag: "wx" });
  return { value, created: true };
}

/** The secrets from the configuration, generating the embedded default's as needed. */
export async function resolveSecrets(config: Config): Promise<Secrets> {
  const embedded = config.DATABASE_URL === undefined;
  if (!embedded) {
    if (!config.MASTER_KEY) {
      throw new ConfigError(
        "Invalid configuration: MASTER_KEY is required when DATABASE_URL is set",
      );
    }
    if (!config.TOKEN_SIGNING_KEY) {
      throw new ConfigError(
        "Invalid configuration: TOKEN_SIGNING_KEY is required when DATABASE_URL is set",
      );
    }
    const masterKey = Buffer.from(config.MASTER_KEY, "base64");
    return {
      masterKey,
      adminToken: config.ADMIN_TOKEN,
      tokenSigningKey: config.TOKEN_SIGNING_KEY,
      // Without LOG_SIGNING_KEY, derived from the master key: the same on every instance.
      logSigningKey: config.LOG_SIGNING_KEY
        ? Buffer.from(config.LOG_SIGNING_KEY, "base64")
        : Buffer.from(hkdfSync("sha256", masterKey, "", "audit log signing key v1", 32)),
      generated: [],
    };
  }
  await usingDataDir(config.DATA_DIR, () =>
    mkdir(config.DATA_DIR, { recursive: true, mode: 0o700 }),
  );
  const generated: string[] = [];
  const pick = async (given: string | undefined, file: string, make: () => string) => {
    if (given) return given;
    const secret = await usingDataDir(config.DATA_DIR, () =>
      fileSecret(join(config.DATA_DIR, file), make),
    );
    if (secret.created) generated.push(file);
    return secret.value;
  };
  const masterKey = await pick(config.MASTER_KEY, "master.key", () =>
    randomBytes(32).toString("base64"),
  );
  const adminToken = await pick(config.ADMIN_TOKEN, "admin.token", () =>
    randomBytes(24).toString("base64url"),
  );
  const tokenSigningKey = await pick(config.TOKEN_SIGNING_KEY, "token-signing.key", () =>
    randomBytes(32).toString("base64url"),
  );
  const logSigningKey = await pick(config.LOG_SIGNING_KEY, "log-signing.key", () =>
    randomBytes(32).toString("base64"),
  );
  const masterKeyBytes = Buffer.from(masterKey, "base64");
  if (masterKeyBytes.length !== 32) {
    throw new ConfigError(
      "Invalid configuration: master.key in DATA_DIR must be 32 bytes in base64",
    );
  }
  const logSigningKeyBytes = Buffer.from(logSigningKey, "base64");
  if (logSigningKeyBytes.length !== 32) {
    throw new ConfigError(
      "Invalid configuration: log-signing.key in DATA_DIR must be 32 bytes in base64",
    );
  }
  return {
    masterKey: masterKeyBytes,
    adminToken,
    tokenSigningKey,
    logSigningKey: logSigningKeyBytes,
    generated,
  };
}

/**
 * Runs a file operation in DATA_DIR; a file-system refusal (not a directory, no
 * permission, read-only) becomes a configuration error that names DATA_DIR.
 */
export async function usingDataDir<T>(dataDir: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (typeof code !== "string" || !code.startsWith("E")) throw error;
    throw new ConfigError(`Invalid configuration: DATA_DIR ${dataDir} cannot be used (${code})`);
  }
}
