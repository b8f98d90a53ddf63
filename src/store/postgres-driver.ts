/**
 * PostgreSQL through the `postgres` package: a pool of connections, prepared
 * statements, and errors passed through unchanged for the boundary to classify.
 *
 * Connection losses are worked around here, for postgres.js 3.4.9 (see `retire`,
 * `transaction` and `fetch_types`): without that, one lost connection could end the
 * process or leave the pool failing requests after 5 s for up to a minute.
 */
import postgres from "postgres";
import { isConnectionFailure } from "../errors.js";
import { withArrayLiterals } from "./array-literal.js";
import type { Db, Queryable } from "./db.js";

type Params = postgres.ParameterOrJSON<never>[];

// How long a transaction whose connection failed waits for postgres.js to report the close.
const LOST_TRANSACTION_TIMEOUT_MS = 5_000;
// Errors of a connection lost while open (or stuck connecting), as opposed to refused.
const LOST_CONNECTION = new Set([
  "CONNECTION_CLOSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "57P01",
]);

/** Options of the PostgreSQL driver. */
export interface PostgresOptions {
  url: string;
  maxConnections?: number;
}

/** Opens a pool on `url`; connections are made lazily, on first use. */
export function createPostgresDb(options: PostgresOptions): Db {
  const open = () =>
    postgres(options.url, {
      max: options.maxConnections ?? 10,
      connect_timeout: 5,
      // Seconds before a failed connection tries again. The default grows to 20 s while the
      // database is away, and queries queued for a connection wait that long: requests then
      // hang for up to 20 s before their 503, and the service needs as long to recover.
      backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2),
      idle_timeout: 30,
      onnotice: () => {},
      // Dates and bytea come back as Date and Buffer; counts are cast to int in SQL.
      prepare: true,
      // Each new connection would first fetch the array types, a query whose promise
      // postgres.js drops: a connection terminated during it rejects that promise
      // unhandled, which ends the process (porsager/postgres#1192, #1223). Array
      // parameters are written as array literals here instead (`arrayLiteral`).
      fetch_types: false,
    });
  let sql = open();
  const retiring = new Set<Promise<void>>();

  /**
   * A connection lost while a write to it was pending keeps a stale write timer in
   * postgres.js 3.4.9 (porsager/postgres#1208): each later reconnect of that connection
   * never sends its start-up message and fails with CONNECT_TIMEOUT after 5 s, until
   * enough bytes pile up (seen here up to 25 s after the loss). So a lost connection
   * retires its whole pool: what runs on it finishes or fails within 5 s, and new queries
   * get a fresh pool. A refused connection (database down) retires nothing: the pool's
   * back-off retries it.
   */
  const retire = (pool: postgres.Sql, error: unknown) => {
    const code = (error as { code?: unknown } | undefined)?.code;
    if (pool !== sql || typeof code !== "string" || !LOST_CONNECTION.has(code)) return;
    sql = open();
    const ended: Promise<void> = pool
      .end({ timeout: 5 })
      .catch(() => {})
      .finally(() => retiring.delete(ended));
    retiring.add(ended);
  };

  const run = async <Row>(
    target: postgres.Sql | postgres.TransactionSql,
    text: string,
    params: readonly unknown[] = [],
  ): Promise<Row[]> => {
    const values = withArrayLiterals(params);
    const rows = await target.unsafe(text, values as Params, { prepare: true });
    return rows as unknown as Row[];
  };

  /** Runs one statement outside a transaction on the current pool. */
  const statement = async <Row>(text: string, params?: readonly unknown[]): Promise<Row[]> => {
    const pool = sql;
    try {
      return await run<Row>(pool, text, params);
    } catch (error) {
      retire(pool, error);
      throw error;
    }
  };

  return {
    driver: "postgres",
    query: statement,
    async transaction(work) {
      // When the connection is lost inside a transaction, sql.begin must not be told:
      // it would send ROLLBACK on the dead connection, and postgres.js 3.4.9 then writes
      // to a null socket from a setImmediate, an uncaught TypeError that ends the process
      // (porsager/postgres#1154, #1208). So the failed query never settles; sql.begin
      // rejects by itself on the connection's close, which always follows such an error
      // (the server rolls the transaction back). The timer only bounds the wait.
      const pool = sql;
      let abandon: (error: unknown) => void = () => {};
      const abandoned = new Promise<never>((_, reject) => {
        abandon = reject;
      });
      let timer: NodeJS.Timeout | undefined;
      // Set once the transaction has settled, committed or not. A transaction whose
      // connection closed while it waited on something else (the integrator's pass awaits
      // its derivation worker) has already rejected, but its work goes on: its next query
      // would go to postgres.js's closed connection, which writes to its null socket inside
      // an async function nobody awaits, an unhandled rejection that ends the process (seen
      // in CI: a pass after pg_terminate_backend). Such a query is not sent and never
      // settles, so the work stops there and sql.begin sends no ROLLBACK either.
      let settled = false;
      const scoped = (tx: postgres.TransactionSql): Queryable => ({
        query: async <Row>(text: string, params?: readonly unknown[]) => {
          if (settled) return new Promise<never>(() => {});
          try {
            return await run<Row>(tx, text, params);
          } catch (error) {
            if (!isConnectionFailure(error)) throw error;
            timer ??= setTimeout(() => abandon(error), LOST_TRANSACTION_TIMEOUT_MS);
            return new Promise<never>(() => {});
          }
        },
      });
      try {
        const result = await Promise.race([
          pool.begin(async (tx) => ({ value: await work(scoped(tx)) })),
          abandoned,
        ]);
        return result.value;
      } catch (error) {
        retire(pool, error);
        throw error;
      } finally {
        settled = true;
        clearTimeout(timer);
      }
    },
    async ping() {
      await statement("select 1");
    },
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), ...retiring]);
    },
  };
}
