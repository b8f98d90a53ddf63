/**
 * PostgreSQL through the `postgres` package: a pool of connections, prepared
 * statements, and errors passed through unchanged for the boundary to classify.
 */
import postgres from "postgres";
import type { Db, Queryable } from "./db.js";

type Params = postgres.ParameterOrJSON<never>[];

// PostgreSQL type oids of array elements postgres.js must serialise specially.
const BYTEA = 17;
const TIMESTAMPTZ = 1184;

/** Options of the PostgreSQL driver. */
export interface PostgresOptions {
  url: string;
  maxConnections?: number;
}

/** Opens a pool on `url`; connections are made lazily, on first use. */
export function createPostgresDb(options: PostgresOptions): Db {
  const sql = postgres(options.url, {
    max: options.maxConnections ?? 10,
    connect_timeout: 5,
    idle_timeout: 30,
    onnotice: () => {},
    // Dates and bytea come back as Date and Buffer; counts are cast to int in SQL.
    prepare: true,
  });

  const run = async <Row>(
    target: postgres.Sql | postgres.TransactionSql,
    text: string,
    params: readonly unknown[] = [],
  ): Promise<Row[]> => {
    const values = params.map((value) => (Array.isArray(value) ? arrayParameter(value) : value));
    const rows = await target.unsafe(text, values as Params, { prepare: true });
    return rows as unknown as Row[];
  };

  /**
   * Arrays go through sql.array with the type of their first non-null element:
   * postgres.js would otherwise send the element type (`$1::bytea[]` then fails) and,
   * with a null first element, serialise Buffers and Dates as plain strings.
   */
  const arrayParameter = (value: readonly unknown[]) => {
    const sample = value.find((item) => item !== null && item !== undefined);
    const elementType =
      sample instanceof Uint8Array ? BYTEA : sample instanceof Date ? TIMESTAMPTZ : undefined;
    return sql.array(value as never[], elementType);
  };

  return {
    driver: "postgres",
    query: (text, params) => run(sql, text, params),
    async transaction(work) {
      const result = await sql.begin(async (tx) => {
        const scoped: Queryable = { query: (text, params) => run(tx, text, params) };
        return { value: await work(scoped) };
      });
      return result.value;
    },
    async ping() {
      await sql.unsafe("select 1");
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
