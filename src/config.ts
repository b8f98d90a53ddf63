/**
 * The service's configuration: one schema-validated parse of the environment at
 * start-up. Nothing else in the service reads `process.env`.
 */
import { z } from "zod";

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const flag = z
  .enum(["1", "0", "true", "false", "yes", "no", ""])
  .transform((value) => value === "1" || value === "true" || value === "yes");

const base64Key = z
  .string()
  .refine(
    (value) => Buffer.from(value, "base64").length === 32,
    "must be 32 bytes encoded in base64",
  );

/**
 * Whether a postgres:// URL parses as the driver will read it: a valid URL (a port in
 * range), no fragment (an unencoded `#` in a password starts one), and a path of one
 * database name (an unencoded `@` or `/` in a password moves the rest into the path),
 * and a user, password and host that percent-decode (the driver decodes those: a `%` not
 * followed by two hex digits threw URIError). Checked here so that a bad value stops the
 * start with exit 78 and a message that does not repeat it, instead of the driver's crash,
 * which printed the URL with its password.
 */
function isDatabaseUrl(value: string): boolean {
  // As postgres.js reads it: of a host list (`h1:5432,h2:5432`), the first.
  const authority = value.slice(value.indexOf("://") + 3).split(/[?/]/)[0] ?? "";
  const hosts = authority.slice(authority.indexOf("@") + 1);
  let url: URL;
  try {
    url = new URL(value.replace(hosts, hosts.split(",")[0] ?? ""));
  } catch {
    return false;
  }
  if (url.hash !== "" || url.pathname.slice(1).includes("/") || url.pathname.includes("@")) {
    return false;
  }
  try {
    for (const part of [url.username, url.password, url.host]) decodeURIComponent(part);
  } catch {
    return false;
  }
  return true;
}

const schema = z.object({
  PORT: integer(0, 65535).default(3000),
  HOST: z.string().min(1).default("0.0.0.0"),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
    .refine(
      isDatabaseUrl,
      "must be a postgres://user:password@host:port/database URL naming one database, with a '#', '@', '/' or '%' in the password percent-encoded (%23, %40, %2F, %25); the value is not shown, as it may hold the password",
    )
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must be a redis:// URL")
    .optional(),
  REDIS_KEY_PREFIX: z.string().default("audit:"),
  DATA_DIR: z.string().min(1).default("./data"),
  MASTER_KEY: base64Key.optional(),
  ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  // When set, GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  TOKEN_SIGNING_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  // The operator's acknowledgement that production runs on the embedded database.
  EMBEDDED_IN_PRODUCTION: flag.default(false),
  TRUST_PROXY: flag.default(false),
  // Origins allowed to call List Events from a browser, comma-separated; `*` for any.
  CORS_ORIGINS: z
    .string()
    .transform((value) =>
      value
        .split(",")
        .map((origin) => origin.trim())
        .filter((origin) => origin.length > 0),
    )
    .pipe(
      z
        .array(
          z
            .string()
            .regex(
              /^(\*|[a-z][a-z0-9+.-]*:\/\/[^/\s]+)$/i,
              "must be * or origins like https://app.example.com, comma-separated",
            ),
        )
        .min(1, "must name at least one origin, or *"),
    )
    .default(["*"]),
  TLS_CERT_FILE: z.string().min(1).optional(),
  TLS_KEY_FILE: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  RATE_LIMIT_MAX: integer(1, 1_000_000_000).default(100),
  RATE_LIMIT_WINDOW_SECONDS: integer(1, 86_400).default(60),
  IDEMPOTENCY_TTL_SECONDS: integer(1, 31_536_000).default(86_400),
  API_KEY_CACHE_SECONDS: integer(0, 300).default(5),
  SHUTDOWN_TIMEOUT_SECONDS: integer(1, 600).default(25),
  // Admission control (docs/reliability.md, Overload): the most Create Event, bulk and
  // stream events in progress at once, and the most reads (lists, the log's proofs,
  // tokens); beyond, a fast 503 with Retry-After. 0 turns a limit off.
  INGEST_MAX_IN_FLIGHT: integer(0, 1_000_000).default(256),
  READ_MAX_IN_FLIGHT: integer(0, 1_000_000).default(64),
  // Shedding by queueing delay (docs/reliability.md, Overload): once the event loop's delay
  // has stayed at or above the target for the interval, those classes get the same fast 503
  // until it is back under the target. 0 turns it off.
  LOOP_DELAY_TARGET_MS: integer(0, 60_000).default(500),
  // Handles accepting new connections from the port (transport/accept-handles.ts): node
  // takes one connection per handle per turn of its event loop. 1: the listening one only.
  ACCEPT_HANDLES: integer(1, 256).default(64),
  LOOP_DELAY_INTERVAL_MS: integer(1, 60_000).default(1_000),
  // Pushback (docs/write-path.md): a log whose oldest event not yet listable is older than
  // this takes no new events (calls wait, then 503 with Retry-After; streams wait) until
  // the integrator catches up. 0 turns it off.
  INGEST_MAX_LAG_SECONDS: integer(0, 3_600).default(3),
  // How long a Create Event or batch for a log behind waits for it before that 503.
  INGEST_PUSHBACK_WAIT_MS: integer(0, 60_000).default(2_000),
  WORKERS: integer(1, 64).default(1),
  // Follow streams (docs/export.md): a heartbeat after this long without events, and a
  // look at the log this often when no notification came.
  FOLLOW_HEARTBEAT_SECONDS: integer(1, 300).default(15),
  FOLLOW_POLL_MS: integer(50, 60_000).default(1_000),
  // The verifiable log (docs/verifiable-log.md): the Ed25519 seed that signs checkpoints,
  // the first part of each log's origin, and how often grown trees get a checkpoint.
  LOG_SIGNING_KEY: base64Key.optional(),
  LOG_ISSUER: z
    .string()
    .regex(/^[^\s+/]+$/, "must be a name without spaces, '+' or '/' (the service's host name)")
    .default("audit-event-service"),
  LOG_CHECKPOINT_INTERVAL_MS: integer(10, 60_000).default(1000),
  // Retention (docs/lifecycle.md): how often the expiry job runs; at least hourly.
  RETENTION_INTERVAL_SECONDS: integer(1, 3_600).default(3_600),
  // Events per expiry batch (one transaction); unset: 5,000 on PostgreSQL, 1,000 on PGlite.
  RETENTION_BATCH_SIZE: integer(1, 100_000).optional(),
  // After an erasure (docs/lifecycle.md): `full` rewrites the tables it deleted from so the
  // erased bytes leave the files (locks each table meanwhile), `vacuum` only marks their
  // space reusable. Default: full on the embedded PGlite, vacuum on PostgreSQL.
  ERASURE_RECLAIM: z.enum(["full", "vacuum"]).optional(),
  // The embedded database refuses statements (503) while its disk has less free space
  // than this, before PGlite hangs for lack of room for its next 16 MB WAL segment; 0: off.
  DATA_DIR_MIN_FREE_MB: integer(0, 1_000_000).default(64),
  // The integrator's derivation (decrypt, indexes, leaves) of large passes runs in a
  // worker thread (docs/write-path.md); `off` keeps it on the requests' thread.
  DERIVATION_WORKER: z.enum(["on", "off"]).default("on"),
  // Fewest events in a pass that go to that worker (smaller passes cost less here).
  DERIVATION_WORKER_MIN_EVENTS: integer(0, 1_000_000).default(32),
});

/** The parsed configuration. */
export type Config = z.output<typeof schema>;

/** Raised when the environment is invalid; the message names the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Parses the environment. Empty strings count as unset, so `FOO=` in a shell keeps the
 * default. Throws a ConfigError naming the first bad variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") present[key] = value;
  }
  const result = schema.safeParse(present);
  if (!result.success) {
    const issue = result.error.issues[0];
    const name = issue?.path.join(".") ?? "environment";
    throw new ConfigError(`Invalid configuration: ${name} ${issue?.message ?? "is invalid"}`);
  }
  const config = result.data;
  if (config.WORKERS > 1 && (!config.DATABASE_URL || !config.REDIS_URL)) {
    // PGlite is one process, and in-memory rate limits would multiply by the workers.
    throw new ConfigError(
      "Invalid configuration: WORKERS above 1 needs DATABASE_URL and REDIS_URL",
    );
  }
  if (config.NODE_ENV === "production" && !config.DATABASE_URL && !config.EMBEDDED_IN_PRODUCTION) {
    // Durability is stated, not assumed: PGlite runs with fsync off (README, Durability).
    throw new ConfigError(
      "Invalid configuration: NODE_ENV=production without DATABASE_URL runs on the embedded database, whose writes are not fsynced (a machine crash may lose acknowledged events); set DATABASE_URL, or EMBEDDED_IN_PRODUCTION=1 to accept that",
    );
  }
  if ((config.TLS_CERT_FILE === undefined) !== (config.TLS_KEY_FILE === undefined)) {
    throw new ConfigError("Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE go together");
  }
  return config;
}
