/**
 * Start-up on a PostgreSQL server that may not be reachable yet (issue 26, item 7). The first
 * attempt to migrate decides:
 * - reached and migrated: the database is ready at once;
 * - refused for what retrying cannot fix (bad credentials, unknown role or database, no
 *   permission to create the schema): a ConfigError, so the process exits 78 with one line;
 * - not reached (refused, timed out, host unknown, server starting up or full): one warning,
 *   and the service starts anyway. Until a retry (exponential backoff with jitter, 0.5 s
 *   doubling up to 30 s) reaches the database and migrates it, every use of the gated `db`
 *   fails as a lost connection does: requests get 503 in their protocol, `/readyz` is not
 *   ready, `/healthz` answers. A retry refused for good rejects `ready` with a ConfigError.
 *
 * Invariant: nothing but the migration touches the database before `ready` resolves, so no
 * request ever meets a schema that is not there yet.
 */
import type { Logger } from "pino";
import { ConfigError } from "./config.js";
import { isConnectionFailure, isDiskFull } from "./errors.js";
import type { Db } from "./store/db.js";

// SQLSTATEs no retry can fix: invalid_authorization_specification (unknown role, no
// pg_hba.conf entry), invalid_password, invalid_catalog_name (unknown database),
// insufficient_privilege (the role cannot create the schema).
const REFUSED_FOR_GOOD: Readonly<Record<string, string>> = {
  "28000": "the role is not allowed to connect",
  "28P01": "the password was refused",
  "3D000": "the database does not exist",
  "42501": "the role lacks a permission the migrations need",
};

const INITIAL_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
// A still-unreachable database is logged again at most this often.
const REPEAT_WARNING_MS = 60_000;

/** The database once start-up has been dealt with. */
export interface DatabaseStartup {
  /** The database for the service: fails as unreachable until `ready` has resolved. */
  db: Db;
  /** Whether the first attempt reached and migrated the database (`ready` has resolved). */
  reachedAtStart: boolean;
  /** Resolves once migrated; rejects with a ConfigError if a retry is refused for good. */
  ready: Promise<void>;
  /** Stops retrying (ready then never settles). */
  stop(): void;
}

/** What start-up needs. */
export interface DatabaseStartupOptions {
  db: Db;
  migrate: (db: Db) => Promise<unknown>;
  logger: Logger;
  /** DATABASE_URL, named in messages without its password. */
  url: string;
}

/**
 * Migrates `options.db`, or starts retrying when it cannot be reached; throws a ConfigError
 * when the database refuses for good.
 */
export async function startDatabase(options: DatabaseStartupOptions): Promise<DatabaseStartup> {
  const { db, migrate, logger } = options;
  const where = describe(options.url);
  try {
    await migrate(db);
    return { db, reachedAtStart: true, ready: Promise.resolve(), stop: () => {} };
  } catch (error) {
    if (!notReached(error)) throw refusal(error, where) ?? error;
    logger.warn(
      { database: where, error: summary(error) },
      "database unreachable at start-up: answering 503 and retrying until it can be reached",
    );
  }

  let lastFailure: unknown;
  let ready = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const readyPromise = new Promise<void>((resolve, reject) => {
    let delay = INITIAL_RETRY_MS;
    let attempts = 1;
    let warnedAt = Date.now();
    const attempt = async () => {
      if (stopped) return;
      attempts++;
      try {
        await migrate(db);
      } catch (error) {
        if (stopped) return;
        if (!notReached(error)) {
          reject(refusal(error, where) ?? error);
          return;
        }
        lastFailure = error;
        if (Date.now() - warnedAt >= REPEAT_WARNING_MS) {
          warnedAt = Date.now();
          logger.warn(
            { database: where, attempts, error: summary(error) },
            "database still unreachable",
          );
        }
        delay = Math.min(delay * 2, MAX_RETRY_MS);
        schedule();
        return;
      }
      ready = true;
      logger.info({ database: where, attempts }, "database reached: schema up to date, serving");
      resolve();
    };
    // Jitter: instances that lost the same database do not all come back at once.
    const schedule = () => {
      timer = setTimeout(() => void attempt(), delay * (0.5 + Math.random() / 2));
    };
    schedule();
  });

  const gate = <T>(use: () => Promise<T>): Promise<T> =>
    ready ? use() : Promise.reject(unreachable(lastFailure, where));
  const gated: Db = {
    driver: db.driver,
    query: (sql, params) => gate(() => db.query(sql, params)),
    transaction: (work) => gate(() => db.transaction(work)),
    ping: () => gate(() => db.ping()),
    close: () => db.close(),
  };
  return {
    db: gated,
    reachedAtStart: false,
    ready: readyPromise,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function notReached(error: unknown): boolean {
  const code = codeOf(error);
  // A refusal no retry fixes stops the start, though a request meeting it later is
  // answered 503 like any lost connection (errors.ts).
  if (code !== undefined && Object.hasOwn(REFUSED_FOR_GOOD, code)) return false;
  // The host not resolving or routing, too many connections, a server still starting:
  // connection failures like a lost connection (errors.ts), retried; so is a disk out of
  // space, until space returns.
  return isConnectionFailure(error) || isDiskFull(error);
}

/** The ConfigError for a refusal no retry can fix; undefined for any other error. */
function refusal(error: unknown, where: string): ConfigError | undefined {
  const code = codeOf(error);
  const reason = code === undefined ? undefined : REFUSED_FOR_GOOD[code];
  if (reason === undefined) return undefined;
  const detail = error instanceof Error ? `: ${error.message}` : "";
  return new ConfigError(
    `Cannot use DATABASE_URL (${where}): ${reason} (${code}${detail})`.replace(/\s+/g, " "),
  );
}

/**
 * What a use of the database meets before it was reached: an error the boundary classifies
 * as a lost connection (503 `unavailable`), whatever the start-up attempt met.
 */
function unreachable(cause: unknown, where: string): Error {
  const code = codeOf(cause);
  const error = new Error(`the database (${where}) has not been reached since start-up`, {
    cause,
  });
  return Object.assign(error, {
    code: code !== undefined && isConnectionFailure(cause) ? code : "ECONNREFUSED",
  });
}

/** A log-friendly summary of a connection error: its code and message, no stack. */
function summary(error: unknown): { code: string | undefined; message: string } {
  return { code: codeOf(error), message: error instanceof Error ? error.message : String(error) };
}

/** user@host:port/database of a postgres:// URL: never its password. */
function describe(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : "";
    return `${user}${parsed.host}${parsed.pathname}`;
  } catch {
    return "an unparsable URL";
  }
}
