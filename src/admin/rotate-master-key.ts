#!/usr/bin/env node
/**
 * `npm run rotate-master-key` (from a build: `node dist/src/admin/rotate-master-key.js`):
 * replaces MASTER_KEY, the key that wraps every project's keys (docs/deploy.md, Rotating
 * the master key). It re-wraps each stored key under NEW_MASTER_KEY in one transaction
 * (crypto/keyring.ts `rewrapStoredKeys`); the events, sealed under the project keys,
 * are not touched. Run with every instance stopped: an instance still running with the
 * old key would wrap a new project's keys under it.
 *
 * Reads the storage as the service does: DATABASE_URL and MASTER_KEY, or the embedded
 * DATA_DIR, whose master.key it then replaces (after the database has committed, so that
 * a run cut in between is mended by running it again: the keys are already under the new
 * key, and the file is written). Exit 0 when done, 1 when refused (nothing changed), 78
 * for a bad configuration.
 */
import { randomBytes } from "node:crypto";
import { open, readFile, rename } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ConfigError, loadConfig } from "../config.js";
import { rewrapStoredKeys } from "../crypto/keyring.js";
import { DataDirInUseError, writeDurably } from "../store/data-dir-lock.js";
import type { Db } from "../store/db.js";
import { createPgliteDb } from "../store/pglite-driver.js";
import { createPostgresDb } from "../store/postgres-driver.js";

/** A refusal: said on stderr, exit 1, nothing changed. */
class Refusal extends Error {}

/** A 32-byte key from base64 text, or a ConfigError naming `name`. */
function keyFrom(text: string | undefined, name: string): Buffer {
  const key = Buffer.from(text?.trim() ?? "", "base64");
  if (key.length !== 32)
    throw new ConfigError(`Invalid configuration: ${name} must be 32 bytes encoded in base64`);
  return key;
}

/**
 * master.key replaced by the new key, the old one kept beside it (returned: its path),
 * both on disk before the rename, and the rename synced through the directory. PGlite
 * does not sync its commits: after a power cut the database may hold the keys as they
 * were, under the old key, which the kept copy still opens.
 */
async function replaceKeyFile(keyFile: string, oldKey: Buffer, newKey: Buffer): Promise<string> {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const old = `${keyFile}.${stamp}.old`;
  const next = `${keyFile}.${randomBytes(4).toString("hex")}.new`;
  await writeDurably(old, `${oldKey.toString("base64")}\n`);
  await writeDurably(next, `${newKey.toString("base64")}\n`);
  await rename(next, keyFile);
  const directory = await open(dirname(keyFile), "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
  return old;
}

async function main(): Promise<string> {
  const config = loadConfig();
  const newKey = keyFrom(process.env.NEW_MASTER_KEY, "NEW_MASTER_KEY (`openssl rand -base64 32`)");
  const embedded = config.DATABASE_URL === undefined;
  const keyFile = join(config.DATA_DIR, "master.key");
  let oldText = config.MASTER_KEY;
  if (oldText === undefined && embedded) {
    oldText = await readFile(keyFile, "utf8").catch(() => {
      throw new ConfigError(`Invalid configuration: no MASTER_KEY and no ${keyFile} to rotate`);
    });
  }
  if (oldText === undefined) {
    throw new ConfigError(
      "Invalid configuration: MASTER_KEY (the current key) is required when DATABASE_URL is set",
    );
  }
  const oldKey = keyFrom(oldText, embedded && !config.MASTER_KEY ? keyFile : "MASTER_KEY");
  if (oldKey.equals(newKey)) throw new Refusal("NEW_MASTER_KEY is the current master key");

  let db: Db;
  if (embedded) {
    db = await createPgliteDb(join(config.DATA_DIR, "pglite")).catch((error: unknown) => {
      if (error instanceof DataDirInUseError) {
        throw new Refusal(`a service runs on DATA_DIR ${config.DATA_DIR}: stop it first`);
      }
      throw error;
    });
  } else {
    db = createPostgresDb({ url: config.DATABASE_URL ?? "", maxConnections: 1 });
  }
  try {
    if (!embedded) {
      // Instances keep their pools open: any other session means one may still run. Sessions
      // of instances just stopped take a moment to leave: looked at for up to 3 s.
      let others = 0;
      for (const until = Date.now() + 3_000; ; ) {
        const [row] = await db.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid()
              and backend_type = 'client backend'`,
        );
        others = row?.n ?? 0;
        if (others === 0 || Date.now() >= until) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (others > 0) {
        throw new Refusal(
          `${others} other sessions are connected to the database: stop every instance (and close other clients) first`,
        );
      }
    }
    const done = await rewrapStoredKeys(db, oldKey, newKey).catch((error: unknown) => {
      throw new Refusal(
        `nothing changed: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    // With MASTER_KEY given, the embedded service reads it rather than master.key.
    const keyInFile = embedded && config.MASTER_KEY === undefined;
    let kept = "";
    if (keyInFile) kept = await replaceKeyFile(keyFile, oldKey, newKey);
    const where = keyInFile
      ? `${keyFile} now holds the new key (the old one kept in ${kept} until the new has served)`
      : "start every instance with MASTER_KEY set to the new key";
    const logKey =
      !embedded && !config.LOG_SIGNING_KEY
        ? "; LOG_SIGNING_KEY is unset, so the log's signing key, derived from MASTER_KEY, changes with it: a log key rotation (docs/verifiable-log.md, Rotation)"
        : "";
    return `master key rotated: ${done.rewrapped} keys re-wrapped (${done.alreadyNew} already under the new key); ${where}${logKey}`;
  } finally {
    await db.close();
  }
}

main().then(
  (summary) => {
    process.stdout.write(`${summary}\n`);
  },
  (error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    process.stderr.write(
      `rotate-master-key: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
