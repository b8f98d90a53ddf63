/**
 * Embedded PostgreSQL (PGlite, compiled to WASM) in a data directory: the zero set-up
 * default. PGlite is one connection, so every statement and transaction here runs one
 * at a time through a queue; a statement never lands inside another's transaction.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { PGlite, types } from "@electric-sql/pglite";
import { withArrayLiterals } from "./array-literal.js";
import { lockDataDir } from "./data-dir-lock.js";
import type { Db, Queryable } from "./db.js";

/**
 * The data directory holds a database that cannot be opened. Never "fixed" by creating a
 * new one: PGlite, finding no `PG_VERSION`, initialises a fresh cluster over the existing
 * files, and the events in them become unreachable (found by an outside audit,
 * 2026-11-28). A restart does not help either: a person must look (restore the
 * directory from a backup).
 */
export class DamagedDatabaseError extends Error {
  override name = "DamagedDatabaseError";
}

/**
 * Opens (or creates) the database in `dataDir`, locked for this process (`<dataDir>.lock`:
 * data-dir-lock.ts; DataDirInUseError when another process has it); `memory://` keeps it
 * in memory.
 */
export async function createPgliteDb(dataDir: string): Promise<Db> {
  const unlock = dataDir.startsWith("memory://")
    ? async () => {}
    : await lockDataDir(`${dataDir}.lock`);
  let pg: PGlite;
  try {
    const existing = dataDir.startsWith("memory://") ? false : await holdsFiles(dataDir);
    if (existing) await checkVersionFile(dataDir);
    pg = await openPglite(dataDir).catch((error: unknown) => {
      // A new directory that fails to initialise is a crash; an existing one is damaged.
      if (!existing) throw error;
      const cause = (error instanceof Error ? error.message : String(error)).split("\n")[0];
      throw new DamagedDatabaseError(
        `the embedded database in ${dataDir} cannot be opened (${cause?.slice(0, 200)}): it is damaged; restore the directory from a backup`,
      );
    });
  } catch (error) {
    await unlock();
    throw error;
  }
  return pgliteDb(pg, unlock);
}

/** Whether `dir` exists and holds anything. */
async function holdsFiles(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length > 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** Refuses a database directory whose `PG_VERSION` is missing or not a major version. */
async function checkVersionFile(dir: string): Promise<void> {
  const file = join(dir, "PG_VERSION");
  const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (text === undefined || !/^\d+\n?$/.test(text)) {
    throw new DamagedDatabaseError(
      `the embedded database in ${dir} has ${text === undefined ? "no" : "a damaged"} PG_VERSION file: it is damaged or not a database; refusing to start, which would create a new, empty database over its files (restore the directory from a backup)`,
    );
  }
}

function openPglite(dataDir: string): Promise<PGlite> {
  return PGlite.create(dataDir, {
    // Write-ahead log segments no longer needed are removed rather than kept for reuse
    // with their old bytes: an erasure's clean-up leaves no erased content in the data
    // directory (docs/lifecycle.md).
    startParams: [...PGlite.defaultStartParams, "-c", "wal_recycle=off"],
    // bytea to and from its hex text with Node's Buffer rather than PGlite's own
    // conversion in JavaScript, which took most of the time of writing or reading a
    // large event (a 1 MB body stores about 3 MB of ciphertext).
    parsers: { [types.BYTEA]: (text: string) => Buffer.from(text.slice(2), "hex") },
    serializers: {
      [types.BYTEA]: (value: Uint8Array) =>
        `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}`,
    },
  });
}

function pgliteDb(pg: PGlite, unlock: () => Promise<void>): Db {
  let tail: Promise<unknown> = Promise.resolve();
  let closed = false;

  // Runs `task` after every task queued before it, whatever their outcome.
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new Error("database is closed"));
    const result = tail.then(task, task);
    tail = result.catch(() => undefined);
    return result;
  };

  const run = async <Row>(
    target: Pick<PGlite, "query">,
    text: string,
    params: readonly unknown[] = [],
  ): Promise<Row[]> => {
    const values = withArrayLiterals(params);
    const result = await target.query<Row>(text, values);
    return result.rows;
  };

  return {
    driver: "pglite",
    query: (text, params) => exclusive(() => run(pg, text, params)),
    transaction: (work) =>
      exclusive(() =>
        pg.transaction(async (tx) => {
          const scoped: Queryable = { query: (text, params) => run(tx, text, params) };
          return work(scoped);
        }),
      ),
    async ping() {
      await exclusive(() => pg.query("select 1"));
    },
    async close() {
      await exclusive(async () => {
        closed = true;
        try {
          await pg.close();
        } finally {
          await unlock();
        }
      });
    },
  };
}
