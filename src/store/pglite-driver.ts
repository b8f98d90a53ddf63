/**
 * Embedded PostgreSQL (PGlite, compiled to WASM) in a data directory: the zero set-up
 * default. PGlite is one connection, so every statement and transaction here runs one
 * at a time through a queue; a statement never lands inside another's transaction.
 */
import { PGlite, types } from "@electric-sql/pglite";
import { withArrayLiterals } from "./array-literal.js";
import { lockDataDir } from "./data-dir-lock.js";
import type { Db, Queryable } from "./db.js";

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
    pg = await openPglite(dataDir);
  } catch (error) {
    await unlock();
    throw error;
  }
  return pgliteDb(pg, unlock);
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
