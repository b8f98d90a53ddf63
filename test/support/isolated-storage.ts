/**
 * Storage of its own for one test server or process, following the suite's
 * environment: with DATABASE_URL, a fresh PostgreSQL database on that server (with the
 * secrets PostgreSQL mode requires); otherwise a temporary DATA_DIR for the embedded
 * PGlite. With REDIS_URL, a unique key prefix. `cleanup` drops or deletes all of it.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import type { Db } from "../../src/store/db.js";
import { createPgliteDb } from "../../src/store/pglite-driver.js";
import { createPostgresDb } from "../../src/store/postgres-driver.js";

/** Isolated storage and the configuration variables that point the service at it. */
export interface IsolatedStorage {
  kind: "postgres" | "pglite";
  /** DATABASE_URL, MASTER_KEY, TOKEN_SIGNING_KEY or DATA_DIR; REDIS_URL, REDIS_KEY_PREFIX. */
  env: Record<string, string>;
  /** The database's name (PostgreSQL only). */
  database: string | undefined;
  /** Drops the database or removes the data directory, and deletes the Redis keys. */
  cleanup(): Promise<void>;
}

/** Creates storage for one server. */
export async function createIsolatedStorage(): Promise<IsolatedStorage> {
  const cleanups: (() => Promise<void>)[] = [];
  const env: Record<string, string> = {};
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step();
  };

  const redisUrl = process.env.REDIS_URL;
  if (redisUrl) {
    const prefix = `audit-test-${randomBytes(6).toString("hex")}:`;
    env.REDIS_URL = redisUrl;
    env.REDIS_KEY_PREFIX = prefix;
    cleanups.push(() => deleteRedisKeys(redisUrl, prefix));
  }

  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) {
    const name = `audit_test_${randomBytes(6).toString("hex")}`;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    env.DATABASE_URL = url.toString();
    env.MASTER_KEY = randomBytes(32).toString("base64");
    env.TOKEN_SIGNING_KEY = randomBytes(32).toString("hex");
    cleanups.push(async () => {
      const drop = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await drop.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
    });
    return { kind: "postgres", env, database: name, cleanup };
  }

  const dir = await mkdtemp(join(tmpdir(), "audit-test-"));
  env.DATA_DIR = dir;
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return { kind: "pglite", env, database: undefined, cleanup };
}

/** A database of its own on the suite's driver, opened (not migrated); `cleanup` closes and drops it. */
export async function createIsolatedDb(): Promise<{ db: Db; cleanup(): Promise<void> }> {
  const storage = await createIsolatedStorage();
  const db =
    storage.kind === "postgres"
      ? createPostgresDb({ url: storage.env.DATABASE_URL ?? "" })
      : await createPgliteDb(storage.env.DATA_DIR ?? "");
  return {
    db,
    async cleanup() {
      await db.close();
      await storage.cleanup();
    },
  };
}

/** Deletes every Redis key that contains `prefix`. */
export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `*${prefix}*`, "COUNT", 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
