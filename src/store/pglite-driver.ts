/**
 * Embedded PostgreSQL (PGlite, compiled to WASM) in a data directory: the zero set-up
 * default. PGlite is one connection, so every statement and transaction here runs one
 * at a time through a queue; a statement never lands inside another's transaction.
 */
import { readdir, readFile, statfs } from "node:fs/promises";
import { dirname, join } from "node:path";
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
 * The embedded database's disk is below its free-space floor: every statement is refused
 * (SQLSTATE 53100, disk_full: a 503 to requests, errors.ts) until space returns. PGlite,
 * unable to create its next 16 MB write-ahead log segment, spins for good (no error, no
 * log line, not even /healthz: an outside audit, 2026-11-28, with 10-14 MB free), so the
 * floor keeps it from getting there.
 */
export class LowDiskSpaceError extends Error {
  override name = "LowDiskSpaceError";
  readonly code = "53100";
}

/** Options of the embedded database. */
export interface PgliteOptions {
  /** Free bytes on the data directory's file system below which statements are refused; 0: never. */
  minFreeBytes?: number;
  /** Free bytes of the file system of a path (tests give their own). */
  freeBytes?: (path: string) => Promise<number>;
}

/** The default floor: four write-ahead log segments. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;
// How long a reading of the free space is trusted: one statfs a second at most.
const FREE_SPACE_TTL_MS = 1_000;

/**
 * Opens (or creates) the database in `dataDir`, locked for this process (`<dataDir>.lock`:
 * data-dir-lock.ts; DataDirInUseError when another process has it); `memory://` keeps it
 * in memory.
 */
export async function createPgliteDb(dataDir: string, options: PgliteOptions = {}): Promise<Db> {
  const unlock = dataDir.startsWith("memory://")
    ? async () => {}
    : await lockDataDir(`${dataDir}.lock`);
  const minFree = options.minFreeBytes ?? MIN_FREE_BYTES;
  const guard =
    dataDir.startsWith("memory://") || minFree <= 0
      ? undefined
      : spaceGuard(dirname(dataDir), minFree, options.freeBytes ?? freeBytesOf);
  let pg: PGlite;
  try {
    const existing = dataDir.startsWith("memory://") ? false : await holdsFiles(dataDir);
    if (existing) await checkVersionFile(dataDir);
    await guard?.check();
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
  return pgliteDb(pg, unlock, guard);
}

/** Free bytes for an unprivileged writer on the file system holding `path`. */
async function freeBytesOf(path: string): Promise<number> {
  const stats = await statfs(path);
  return stats.bavail * stats.bsize;
}

/** Checks the free space (at most once a second) and refuses below `minFree`. */
function spaceGuard(
  path: string,
  minFree: number,
  freeBytes: (path: string) => Promise<number>,
): { check(): Promise<void> } {
  let readAt = Number.NEGATIVE_INFINITY;
  let free = Number.POSITIVE_INFINITY;
  return {
    async check() {
      if (performance.now() - readAt >= FREE_SPACE_TTL_MS) {
        // A file system that cannot tell is not refused for it.
        free = await freeBytes(path).catch(() => Number.POSITIVE_INFINITY);
        readAt = performance.now();
      }
      if (free < minFree) {
        throw new LowDiskSpaceError(
          `the embedded database's disk has ${Math.floor(free / 1_048_576)} MB free, under its floor of ${Math.floor(minFree / 1_048_576)} MB (DATA_DIR_MIN_FREE_MB): statements are refused until space returns`,
        );
      }
    },
  };
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

function pgliteDb(
  pg: PGlite,
  unlock: () => Promise<void>,
  guard: { check(): Promise<void> } | undefined,
): Db {
  let tail: Promise<unknown> = Promise.resolve();
  let closed = false;

  // Runs `task` after every task queued before it, whatever their outcome; refused while
  // the disk is below its floor.
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new Error("database is closed"));
    const guarded = guard ? () => guard.check().then(task) : task;
    const result = tail.then(guarded, guarded);
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
