/**
 * The one small database interface the repositories use. Two drivers implement it,
 * PostgreSQL through `postgres` (store/postgres-driver.ts) and embedded PGlite
 * (store/pglite-driver.ts), with the same SQL and the same migrations.
 */

/** Something that runs SQL with positional parameters ($1, $2, ...). */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
}

/** A database: queries, transactions, a liveness check, and close. */
export interface Db extends Queryable {
  readonly driver: "postgres" | "pglite";
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it
   * throws. The promise settles only after COMMIT has returned.
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
