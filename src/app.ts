/**
 * The composition root: builds the stores, rules, services and transports from the
 * configuration, and nothing else. `createApp` is what tests start on port 0 and what
 * main.ts runs.
 */

import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "pino";
import { AdminService } from "../gen/audit/v1/admin_pb.js";
import { EventService } from "../gen/audit/v1/events_pb.js";
import { IngestService } from "../gen/audit/v1/ingest_pb.js";
import { LogService } from "../gen/audit/v1/log_pb.js";
import { TokenService } from "../gen/audit/v1/tokens_pb.js";
import { createAdminService } from "./admin/admin-service.js";
import { adminOperations } from "./api/admin-operations.js";
import { erasureOperations } from "./api/erasure-operations.js";
import { eventOperations } from "./api/event-operations.js";
import { eventStreamOperations } from "./api/event-stream-operations.js";
import { ingestOperations, ingestStreamOperations } from "./api/ingest-operations.js";
import { logOperations } from "./api/log-operations.js";
import type { Operations } from "./api/operation.js";
import { tokenOperations } from "./api/token-operations.js";
import { createAdminTokenGuard } from "./auth/admin-token.js";
import { generateApiKey } from "./auth/api-keys.js";
import { createAuthenticator, type KeyPrincipal } from "./auth/authenticator.js";
import { createFrontendTokens } from "./auth/frontend-tokens.js";
import { type Config, ConfigError } from "./config.js";
import { createKeyring } from "./crypto/keyring.js";
import { type DatabaseStartup, startDatabase } from "./database-startup.js";
import { resolveSecrets, usingDataDir } from "./embedded-secrets.js";
import { createCursorCodec } from "./events/cursor.js";
import { createExportService } from "./events/export-service.js";
import { createFollowService } from "./events/follow-service.js";
import { createListService } from "./events/list-service.js";
import { createLogWaker } from "./events/log-wake.js";
import { createTokenService } from "./events/token-service.js";
import { createBulkIngestService } from "./ingest/bulk-ingest.js";
import { createIngestService } from "./ingest/ingest-service.js";
import { createErasureService } from "./lifecycle/erasure-service.js";
import { createRetentionJob } from "./lifecycle/retention-job.js";
import { createRetentionService } from "./lifecycle/retention-service.js";
import { openLimits } from "./limits/limits.js";
import { listedEventLeaf, renderListedEvent } from "./listed-event-leaf.js";
import { createDeriver, type DerivationWorker } from "./log/deriver.js";
import { createIngestPushback } from "./log/ingest-pushback.js";
import { createIntegrator } from "./log/integrator.js";
import { createPlaintextCache } from "./log/plaintext-cache.js";
import { createReadYourWrites } from "./log/read-your-writes.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { createAutoAnalyze } from "./store/auto-analyze.js";
import { createBatchAppender } from "./store/batch-append.js";
import { DataDirInUseError } from "./store/data-dir-lock.js";
import type { Db, Queryable } from "./store/db.js";
import { createEventReader } from "./store/event-reads.js";
import { createEventStore } from "./store/events.js";
import { readLagSummary } from "./store/log-integration.js";
import { createLogNotifications } from "./store/log-notifications.js";
import { createLogReader } from "./store/log-reads.js";
import { migrate } from "./store/migrations.js";
import { createPgliteDb, DamagedDatabaseError, LowDiskSpaceError } from "./store/pglite-driver.js";
import { createPostgresDb } from "./store/postgres-driver.js";
import { createProjectStore, type ProjectStore } from "./store/projects.js";
import { createNodeLogCrypto } from "./tlog/node-crypto.js";
import { createEdge } from "./transport/edge.js";
import type { NodeRequest, NodeResponse } from "./transport/node-http.js";
import { keepProtoKeysAsKeys } from "./transport/proto-key.js";
import { watchLoopDelay } from "./transport/queue-delay.js";
import { type ListeningServer, listen } from "./transport/server.js";
import { createCheckpointPublisher } from "./verifiable-log/checkpoint-publisher.js";
import { createEventTreeStage } from "./verifiable-log/event-tree-stage.js";
import { createLogReadService } from "./verifiable-log/log-service.js";
import { createLogSigning } from "./verifiable-log/log-signing.js";
import { createTreeBackfill } from "./verifiable-log/tree-backfill.js";
import { publishedIssuers } from "./verifiable-log/tree-store.js";

/** The services of the API, in the order of the proto files. */
export const SERVICES = [IngestService, EventService, TokenService, AdminService, LogService];

/** The RPC paths whose request streams as long as the client likes (not held to REQUEST_TIMEOUT_MS). */
export const OPEN_ENDED_STREAMS: ReadonlySet<string> = new Set([
  `/${IngestService.typeName}/${IngestService.method.ingestEvents.name}`,
]);

/** A built application, not yet listening. */
export interface App {
  config: Config;
  logger: Logger;
  db: Db;
  metrics: Metrics;
  projects: ProjectStore;
  adminToken: string | undefined;
  handler: (req: NodeRequest, res: NodeResponse) => void;
  /**
   * On the first start of the embedded default, once the port is listening: creates a
   * project and a test key, to print once (a start that fails before it loses no key).
   */
  bootstrap(): Promise<{ projectId: string; secret: string } | undefined>;
  /**
   * Resolves once the database is migrated (at once, unless PostgreSQL was unreachable at
   * start-up); rejects with a ConfigError if it is then reached and refuses for good.
   */
  databaseReady: Promise<void>;
  /** Names of secrets generated into DATA_DIR on this start. */
  generatedSecrets: string[];
  /** Listens on the configured port. */
  listen(): Promise<ListeningServer>;
  /**
   * Ends the open follow streams (unavailable: their clients resume elsewhere) and refuses
   * new ones; called when shutdown starts, so that it waits only for real requests.
   */
  endStreams(): void;
  /** Releases timers, pools and the database. */
  close(): Promise<void>;
}

/** Options for tests and tools. */
export interface AppOptions {
  /** Collect process metrics (main does; tests do not). */
  processMetrics?: boolean;
  /**
   * Serve unary gRPC calls on the lean path (transport/grpc-unary.ts); true by default.
   * bench/grpc-unary.ts turns it off to measure what the path earns.
   */
  leanGrpc?: boolean;
  /**
   * Grow the logs' Merkle trees and publish checkpoints (docs/verifiable-log.md); true by
   * default. bench/log-cost.ts turns it off to measure what the log costs ingestion.
   */
  verifiableLog?: boolean;
}

/** Builds the application from its configuration. */
export async function createApp(
  config: Config,
  logger: Logger,
  options: AppOptions = {},
): Promise<App> {
  // Before any request is decoded: a `__proto__` key stays a key (transport/proto-key.ts).
  keepProtoKeysAsKeys();
  const secrets = await resolveSecrets(config);
  const opened = config.DATABASE_URL
    ? createPostgresDb({ url: config.DATABASE_URL })
    : await usingDataDir(config.DATA_DIR, () =>
        createPgliteDb(join(config.DATA_DIR, "pglite"), {
          minFreeBytes: config.DATA_DIR_MIN_FREE_MB * 1_048_576,
        }).catch((error: unknown) => {
          // Another service process runs on this directory: starting would corrupt it.
          // Or the database there is damaged, or its disk too full to open it safely:
          // starting again would not fix it (exit 78).
          if (
            error instanceof DataDirInUseError ||
            error instanceof DamagedDatabaseError ||
            error instanceof LowDiskSpaceError
          ) {
            throw new ConfigError(
              `Invalid configuration: DATA_DIR ${config.DATA_DIR}: ${error.message}`,
            );
          }
          throw error;
        }),
      );
  // An unreachable PostgreSQL does not stop the start: the service listens and answers 503
  // until a retry has reached and migrated it (database-startup.ts).
  let startup: DatabaseStartup;
  try {
    startup = await startDatabase({
      db: opened,
      migrate: async (db) => {
        await migrate(db);
        await checkLogIssuer(db, config.LOG_ISSUER, logger);
      },
      logger,
      url: config.DATABASE_URL ?? "embedded",
    });
  } catch (error) {
    await opened.close().catch(() => {});
    throw error;
  }
  const db = startup.db;

  const metrics = createMetrics(options.processMetrics ?? false);
  const keyring = createKeyring({ db, masterKey: secrets.masterKey });
  const projects = createProjectStore(db, keyring);
  const frontendTokens = createFrontendTokens({ signingKey: secrets.tokenSigningKey });
  const authenticator = createAuthenticator({
    projects,
    cacheSeconds: config.API_KEY_CACHE_SECONDS,
    tokens: frontendTokens,
  });
  const limits = await openLimits(config, logger, metrics).catch(async (error: unknown) => {
    startup.stop();
    await db.close().catch(() => {});
    throw error;
  });
  // PGlite is one connection in this thread: one write transaction at a time, as large
  // as the queue. On PostgreSQL, batches of up to 64 keep a pipeline: while one batch is
  // written, the next is prepared and the last one answered. One large batch at a time
  // measured 20-25% fewer events/s (bench/), the process and the database idling in turn;
  // a journal append costs PostgreSQL 55 µs of CPU an event in batches of 32, 36 in 64
  // (bench/store-write.ts).
  // Behind the journal: log indexes, filter indexes and search tokens, in large passes
  // (docs/write-path.md). On PGlite a pass holds the one connection, so its passes are
  // smaller: appends wait behind them.
  // Follow streams are woken when a pass commits: here at once, elsewhere by NOTIFY.
  const notifications = config.DATABASE_URL
    ? createLogNotifications({
        url: config.DATABASE_URL,
        onError: (error) => logger.warn({ err: error }, "log notifications failed"),
      })
    : undefined;
  const waker = createLogWaker(notifications);
  const streamsEnd = new AbortController();
  // The verifiable log (docs/verifiable-log.md): the integrator appends each pass's
  // leaves to the logs' trees; checkpoints are signed apart, every interval.
  const logCrypto = createNodeLogCrypto();
  const logSigning = createLogSigning({
    crypto: logCrypto,
    issuer: config.LOG_ISSUER,
    seed: secrets.logSigningKey,
  });
  const treeStage = createEventTreeStage({
    crypto: logCrypto,
    keyring,
    // The leaf commits to the event exactly as GET /api/events renders it.
    render: renderListedEvent,
    // A migrated log's backfill, a chunk a transaction (on PGlite it holds the connection).
    backfillChunk: db.driver === "pglite" ? 1_000 : 5_000,
  });
  const verifiableLog = options.verifiableLog ?? true;
  // Each event's payload opened, its indexes and its leaf derived: large passes in a
  // worker thread, so that requests keep this one (log/deriver.ts).
  const deriver = createDeriver({
    logger,
    leafOf: verifiableLog ? listedEventLeaf(logCrypto) : undefined,
    worker: config.DERIVATION_WORKER === "on" ? derivationWorker() : undefined,
    minEventsForWorker: config.DERIVATION_WORKER_MIN_EVENTS,
  });
  metrics.readWorkerPasses(() => deriver.workerPasses);
  // Pushback while the integrator is behind (docs/write-path.md): before the rate limit,
  // so that a refused call does not count against it.
  const pushback =
    config.INGEST_MAX_LAG_SECONDS > 0
      ? createIngestPushback({
          db,
          logger,
          maxLagMs: config.INGEST_MAX_LAG_SECONDS * 1000,
          requestWaitMs: config.INGEST_PUSHBACK_WAIT_MS,
          // Waiting calls hold ingest slots: a quarter of them at most, the rest for others.
          maxWaiting:
            config.INGEST_MAX_IN_FLIGHT > 0
              ? Math.max(1, Math.floor(config.INGEST_MAX_IN_FLIGHT / 4))
              : 64,
          onRefused: () => metrics.overloadRefused("ingest", "index_lag"),
          onWaited: (seconds) => metrics.pushbackWaited(seconds),
        })
      : undefined;
  const plaintexts = createPlaintextCache();
  const integrator = createIntegrator({
    db,
    keyring,
    logger,
    deriver,
    plaintexts,
    stages: verifiableLog ? [treeStage] : [],
    ...(db.driver === "pglite" ? { maxEventsPerPass: 1_000 } : {}),
    onPass: (result, elapsedMs) => {
      metrics.integrated(result.integrated);
      pushback?.passed(result.integrated, elapsedMs);
      if (result.integrated > 0) waker.passCommitted();
    },
  });
  // Retention's expiry job (docs/lifecycle.md): erases, as tombstones, integrated events
  // older than their log's period.
  const retentionJob = createRetentionJob({
    db,
    logger,
    intervalMs: config.RETENTION_INTERVAL_SECONDS * 1000,
    ...(config.RETENTION_BATCH_SIZE ? { batchSize: config.RETENTION_BATCH_SIZE } : {}),
  });
  metrics.readLogLag(async () => {
    const lag = await readLagSummary(db);
    return {
      head: Number(lag.head),
      integrated: Number(lag.integrated),
      oldestPendingSeconds: lag.oldestPending
        ? Math.max(0, (Date.now() - lag.oldestPending.getTime()) / 1000)
        : 0,
    };
  });
  const checkpoints = createCheckpointPublisher({
    db,
    crypto: logCrypto,
    signing: logSigning,
    logger,
    intervalMs: config.LOG_CHECKPOINT_INTERVAL_MS,
  });
  const treeBackfill = createTreeBackfill({
    db,
    stage: treeStage,
    logger,
    intervalMs: config.LOG_CHECKPOINT_INTERVAL_MS,
  });
  const events = createEventStore(
    db,
    db.driver === "pglite"
      ? {
          quota: limits.quota,
          concurrency: 1,
          onAppended: () => integrator.nudge(),
          onWriting: plaintexts.remember,
        }
      : {
          quota: limits.quota,
          concurrency: 4,
          maxBatch: 64,
          onAppended: () => integrator.nudge(),
          onWriting: plaintexts.remember,
        },
  );
  const eventCreated = (principal: KeyPrincipal) => {
    metrics.eventCreated(principal.environment);
    pushback?.appended(principal);
  };
  const ingestAdmission = pushback ? [pushback, ...limits.admission] : limits.admission;
  const ingest = createIngestService({
    authenticator,
    keyring,
    events,
    idempotencyTtlSeconds: config.IDEMPOTENCY_TTL_SECONDS,
    admission: ingestAdmission,
    onCreated: eventCreated,
  });

  const readYourWrites = createReadYourWrites({
    db,
    nudge: () => integrator.nudge(true),
    onWaited: (seconds) => metrics.listWaited(seconds),
  });
  const logReader = createLogReader(db);
  const streams = eventStreamOperations(
    createExportService({ authenticator, keyring, reader: logReader, readYourWrites }),
    createFollowService({
      stopping: streamsEnd.signal,
      authenticator,
      keyring,
      reader: logReader,
      readYourWrites,
      wake: waker,
      heartbeatMs: config.FOLLOW_HEARTBEAT_SECONDS * 1000,
      pollMs: config.FOLLOW_POLL_MS,
    }),
  );
  const batches = createBatchAppender(db, {
    quota: limits.quota,
    concurrency: db.driver === "pglite" ? 1 : 4,
    onAppended: () => integrator.nudge(),
    onWriting: plaintexts.remember,
  });
  const bulk = createBulkIngestService({
    authenticator,
    keyring,
    events,
    batches,
    idempotencyTtlSeconds: config.IDEMPOTENCY_TTL_SECONDS,
    admission: limits.admission,
    ...(pushback ? { pushback } : {}),
    onCreated: eventCreated,
  });

  const erasure = createErasureService({
    db,
    projects,
    keyring,
    logger,
    nudge: () => integrator.nudge(true),
    reclaim: config.ERASURE_RECLAIM ?? (db.driver === "pglite" ? "full" : "vacuum"),
  });
  const adminGuard = createAdminTokenGuard(secrets.adminToken);
  const operations: Operations = new Map([
    ...ingestOperations(ingest, bulk),
    ...eventOperations(
      createListService({
        authenticator,
        keyring,
        reader: createEventReader(db),
        readYourWrites,
        // Derived from the master key: every instance shares it, and it never leaves.
        cursors: createCursorCodec(secrets.masterKey),
      }),
    ),
    ...tokenOperations(createTokenService({ authenticator, tokens: frontendTokens })),
    ...logOperations(
      createLogReadService({
        db,
        crypto: logCrypto,
        authenticator,
        keyring,
        signing: logSigning,
        readYourWrites,
      }),
    ),
    ...adminOperations(
      createAdminService({ projects, keyring, authenticator, db, signing: logSigning }),
      { retention: createRetentionService({ db, projects }) },
      adminGuard,
    ),
    ...erasureOperations(erasure, adminGuard),
  ]);
  // Shedding by the event loop's delay (docs/reliability.md, Overload); stopped at close.
  const loopDelay = watchLoopDelay({
    targetMs: config.LOOP_DELAY_TARGET_MS,
    intervalMs: config.LOOP_DELAY_INTERVAL_MS,
  });
  const handler = createEdge({
    services: SERVICES,
    operations,
    streams,
    ingestStreams: ingestStreamOperations(bulk),
    logger,
    metrics,
    requireHttps: config.NODE_ENV === "production",
    leanGrpc: options.leanGrpc ?? true,
    trustProxy: config.TRUST_PROXY,
    corsOrigins: config.CORS_ORIGINS,
    ...(config.METRICS_TOKEN ? { metricsToken: config.METRICS_TOKEN } : {}),
    admission: { ingest: config.INGEST_MAX_IN_FLIGHT, read: config.READ_MAX_IN_FLIGHT },
    ...(loopDelay ? { shedder: loopDelay } : {}),
    readiness: { database: () => db.ping() },
    ...(limits.redisPing ? { optionalReadiness: { redis: limits.redisPing } } : {}),
  });

  // Expired idempotency keys are deleted every minute (and once the database is ready).
  const sweep = () =>
    Promise.all([
      events.deleteExpiredIdempotencyKeys(new Date()),
      batches.deleteExpiredKeys(new Date()),
    ]).catch((error: unknown) => {
      logger.warn({ err: error }, "could not delete expired idempotency keys");
    });
  // PGlite has no autovacuum: its planner statistics are kept here (store/auto-analyze.ts).
  const autoAnalyze = db.driver === "pglite" ? createAutoAnalyze(db, logger) : undefined;
  // What runs in the background starts once the database is migrated: at once, or when a
  // retry has reached a database that was unreachable at start-up.
  let sweeper: NodeJS.Timeout | undefined;
  let closed = false;
  const startBackground = async () => {
    if (closed) return;
    void sweep();
    sweeper = setInterval(sweep, 60_000);
    sweeper.unref();
    integrator.start();
    pushback?.start();
    await waker.start();
    if (verifiableLog) {
      checkpoints.start();
      treeBackfill.start();
    }
    retentionJob.start();
    autoAnalyze?.start();
    // Erasures left pending by a crash (here or on another instance) are completed.
    erasure.start();
  };
  // Nothing is served from, or written to, a database whose keys the master key does not
  // open (a wrong secret in a deployment): its requests would all fail, and the log
  // would co-sign checkpoints with the key derived from the wrong secret.
  const ready = startup.ready.then(async () => {
    if (!(await keyring.opensStoredKeys())) {
      throw new ConfigError(
        "Invalid configuration: MASTER_KEY does not open the keys stored in the database: it is not the key its data was written with",
      );
    }
  });
  if (startup.reachedAtStart) {
    try {
      await ready;
    } catch (error) {
      await startup.db.close().catch(() => {});
      throw error;
    }
    await startBackground();
  } else {
    ready.then(startBackground, () => {});
  }

  return {
    config,
    logger,
    db,
    metrics,
    projects,
    adminToken: secrets.adminToken,
    handler,
    bootstrap: async () => (config.DATABASE_URL ? undefined : bootstrapEmbedded(projects)),
    generatedSecrets: secrets.generated,
    async listen() {
      const tls =
        config.TLS_CERT_FILE && config.TLS_KEY_FILE
          ? {
              cert: await readConfiguredFile("TLS_CERT_FILE", config.TLS_CERT_FILE),
              key: await readConfiguredFile("TLS_KEY_FILE", config.TLS_KEY_FILE),
            }
          : undefined;
      try {
        return await listen(handler, {
          host: config.HOST,
          port: config.PORT,
          openEndedStreams: OPEN_ENDED_STREAMS,
          extraAcceptHandles: config.ACCEPT_HANDLES - 1,
          onAcceptHandles: (outcome) => {
            if ("error" in outcome) {
              logger.warn(
                { err: outcome.error },
                "could not add accept handles: new connections are accepted one per turn of the event loop",
              );
            }
          },
          ...(tls ? { tls } : {}),
        });
      } catch (error) {
        throw listenError(error, config);
      }
    },
    databaseReady: ready,
    endStreams: () => streamsEnd.abort(),
    async close() {
      closed = true;
      streamsEnd.abort();
      loopDelay?.stop();
      startup.stop();
      clearInterval(sweeper);
      // No stream waiting for the pushback writes after the drains.
      await pushback?.stop();
      await events.drain();
      await batches.drain();
      await erasure.stop();
      await integrator.stop();
      await deriver.close();
      await retentionJob.stop();
      await autoAnalyze?.stop();
      await notifications?.close();
      await checkpoints.stop();
      await treeBackfill.stop();
      await limits.close();
      await db.close();
    },
  };
}

/**
 * The derivation worker's script: the compiled derivation-worker.js beside this file, or,
 * when the service runs from its TypeScript (tests, `npm run dev`), the .ts file behind
 * tsx's loader, which the worker registers first (a worker inherits no loader).
 */
export function derivationWorker(): DerivationWorker {
  const here = import.meta.url;
  if (here.endsWith(".js")) return { script: new URL("./derivation-worker.js", here) };
  const tsxDir = dirname(createRequire(here).resolve("tsx/package.json"));
  const tsxApi = pathToFileURL(join(tsxDir, "dist/esm/api/index.mjs")).href;
  const entry = new URL("./derivation-worker.ts", here).href;
  return {
    script: `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`,
    options: { eval: true },
  };
}

/** A file named by a configuration variable; unreadable, a configuration error. */
async function readConfiguredFile(variable: string, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new ConfigError(`Invalid configuration: ${variable} ${path} cannot be read (${code})`);
  }
}

// Why the port could not be opened, by the error's code.
const LISTEN_REFUSALS: Readonly<Record<string, string>> = {
  EADDRINUSE: "the port is in use (choose another PORT, or stop what holds it)",
  EACCES: "permission denied (a PORT below 1024 needs privileges)",
  EADDRNOTAVAIL: "HOST is not an address of this machine",
  ENOTFOUND: "HOST does not resolve",
  EAI_AGAIN: "HOST does not resolve",
};

/**
 * A failure to listen that the configuration explains (HOST, PORT, the TLS files) as a
 * configuration error; anything else unchanged.
 */
function listenError(error: unknown, config: Config): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const refusal = code === undefined ? undefined : LISTEN_REFUSALS[code];
  if (refusal) {
    return new ConfigError(`Cannot listen on ${config.HOST}:${config.PORT}: ${refusal}`);
  }
  // OpenSSL's refusal of the PEM data, thrown when the TLS server is created.
  if (config.TLS_CERT_FILE && code?.startsWith("ERR_OSSL")) {
    const reason = error instanceof Error ? error.message : String(code);
    return new ConfigError(
      `Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must hold a PEM certificate and its private key (${reason})`,
    );
  }
  return error;
}

/** On an empty embedded database: a free project and a test key, to print once. */
async function bootstrapEmbedded(projects: ProjectStore) {
  const existing = await projects.listProjects();
  if (existing.length > 0) return undefined;
  const project = await projects.createProject("Default project", "free");
  const key = generateApiKey("test");
  await projects.createApiKey({
    projectId: project.id,
    environment: "test",
    keyHash: key.hash,
    prefix: key.prefix,
  });
  return { projectId: project.id, secret: key.secret };
}

/**
 * Refuses a LOG_ISSUER that none of the logs' latest checkpoints names: it is the first part
 * of every log's origin, which a checkpoint signs and an auditor's verifier key names, so an
 * instance with another value would publish checkpoints that verify against neither the
 * logs' pinned keys nor their earlier checkpoints (exit 78: every instance must use the same
 * value, and it is fixed once a checkpoint is published). Logs whose latest checkpoints
 * already name several issuers (left by an instance configured apart before this check)
 * start under any of them, with a warning.
 */
async function checkLogIssuer(db: Queryable, issuer: string, logger: Logger): Promise<void> {
  const published = await publishedIssuers(db);
  if (published.length === 0) return;
  if (!published.includes(issuer)) {
    throw new ConfigError(
      `Invalid configuration: LOG_ISSUER ${issuer} is not the issuer the published checkpoints name (${published.join(", ")}): every instance must use the same LOG_ISSUER, and it cannot change once a checkpoint is published (docs/verifiable-log.md)`,
    );
  }
  if (published.length > 1) {
    logger.warn(
      { issuer, issuers: published },
      "the logs' latest checkpoints name several issuers: the logs under another one get their next checkpoints under LOG_ISSUER, whose consistency with their earlier ones cannot be proven",
    );
  }
}
