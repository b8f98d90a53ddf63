/**
 * Process entry: configuration, application, port; SIGTERM and SIGINT stop accepting,
 * let in-flight requests finish, close the pools and exit 0.
 */
import cluster from "node:cluster";
import type { Logger } from "pino";
import { createApp } from "./app.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";

// EX_CONFIG of sysexits.h.
const CONFIG_ERROR_EXIT = 78;

/** A configuration mistake ends the process with its message and exit code 78 (EX_CONFIG). */
function exitOnConfigError(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(CONFIG_ERROR_EXIT);
  }
  throw error;
}

async function main(): Promise<void> {
  // A reader of stderr that has gone away (a supervisor killed, a pipe closed) must not end the
  // service: the next write there (the first-start banner) would otherwise throw EPIPE.
  process.stderr.on("error", () => {});
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    exitOnConfigError(error);
  }
  const logger = createLogger(config.LOG_LEVEL);
  if (config.WORKERS > 1 && cluster.isPrimary) {
    superviseWorkers(config.WORKERS, logger);
    return;
  }
  // Handled from the start: a signal that arrives while the service starts (a supervisor
  // stopping it at once) is acted on once it can stop cleanly, instead of killing it mid-way.
  let stop: ((signal: NodeJS.Signals) => void) | undefined;
  let requested: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop) stop(signal);
    else requested ??= signal;
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  const app = await createApp(config, logger, { processMetrics: true }).catch(exitOnConfigError);
  if (app.generatedSecrets.length > 0) {
    logger.warn(
      { files: app.generatedSecrets, dataDir: config.DATA_DIR },
      "generated secrets into DATA_DIR: keep them safe; losing master.key loses every event",
    );
  }
  const server = await app.listen().catch(async (error: unknown) => {
    await app.close().catch(() => {});
    return exitOnConfigError(error);
  });
  logger.info(
    {
      port: server.port,
      pid: process.pid,
      database: app.db.driver,
      production: config.NODE_ENV === "production",
    },
    "audit event service listening",
  );
  app.databaseReady.catch(async (error: unknown) => {
    // Reached after start-up, the database refused for good (a wrong password, no such
    // database): exit 78 like the same refusal at start-up; anything else is a crash.
    if (!(error instanceof ConfigError)) logger.error({ err: error }, "database start-up failed");
    await server.close(0).catch(() => {});
    await app.close().catch(() => {});
    if (error instanceof ConfigError) exitOnConfigError(error);
    process.exit(1);
  });
  if (config.NODE_ENV === "production" && app.db.driver === "pglite") {
    logger.warn(
      "production on the embedded database (EMBEDDED_IN_PRODUCTION): writes are not fsynced, a machine crash may lose acknowledged events",
    );
  }
  const firstStart = await app.bootstrap();
  if (firstStart) {
    logger.info(
      { projectId: firstStart.projectId },
      "first start: created a project and a test API key, shown once on stderr",
    );
    printFirstStart(baseUrl(config, server.port), firstStart, plainHttpAdvice(config));
  }

  let stopping = false;
  stop = (signal) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    app.endStreams();
    server
      .close(config.SHUTDOWN_TIMEOUT_SECONDS * 1000)
      .then(() => app.close())
      .then(
        () => {
          logger.info("stopped");
          process.exit(0);
        },
        (error: unknown) => {
          logger.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  if (requested) stop(requested);
}

/**
 * With WORKERS > 1 this process only supervises: it forks the workers (which share the
 * port through the cluster module), replaces one that dies, and on SIGTERM or SIGINT
 * passes the signal on and exits once every worker has finished its requests.
 */
function superviseWorkers(count: number, logger: Logger): void {
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < count; i++) fork();
  let failed = false;
  cluster.on("exit", (worker, code, signal) => {
    if (code === CONFIG_ERROR_EXIT && !stopping) {
      // A worker that cannot start for its configuration would fail the same way again.
      stopping = true;
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill("SIGTERM");
      process.exit(CONFIG_ERROR_EXIT);
    }
    if (stopping) {
      if (code !== 0) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, "worker died: starting another");
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, workers: count }, "shutting down workers");
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/**
 * Where a client on this machine reaches the service: https with TLS, and the bound host
 * unless it is every interface.
 */
function baseUrl(config: Config, port: number): string {
  const scheme = config.TLS_CERT_FILE ? "https" : "http";
  const anyHost = ["0.0.0.0", "::", "[::]"].includes(config.HOST);
  const host = anyHost ? "127.0.0.1" : config.HOST.includes(":") ? `[${config.HOST}]` : config.HOST;
  return `${scheme}://${host}:${port}`;
}

/**
 * In production without TLS plain HTTP is refused (400 `HTTPS is required`): behind a
 * trusted proxy, the header it would send makes the lines below work from this machine;
 * without one, they cannot, and the person is told why.
 */
function plainHttpAdvice(config: Config): { header?: string; note?: string } {
  if (config.NODE_ENV !== "production" || config.TLS_CERT_FILE) return {};
  if (config.TRUST_PROXY) return { header: "X-Forwarded-Proto: https" };
  return {
    note: "Production without TLS refuses plain HTTP (400 HTTPS is required): serve it behind a proxy that terminates TLS and set TRUST_PROXY, or set TLS_CERT_FILE and TLS_KEY_FILE.",
  };
}

/**
 * Shown once, on the first start of the embedded default, for the person at the terminal:
 * on stderr, since stdout carries only JSON log lines (and the key must not be logged).
 */
function printFirstStart(
  base: string,
  first: { projectId: string; secret: string },
  advice: { header?: string; note?: string },
): void {
  const proto = advice.header ? ` -H '${advice.header}'` : "";
  const body = JSON.stringify({
    actionKey: "user.login",
    entityType: "user",
    entityId: "user_123",
    actorId: "user_123",
  });
  process.stderr.write(
    [
      "",
      "First start: created a project (plan free) and a test API key. The key is shown only now.",
      `  project id: ${first.projectId}`,
      `  API key:    ${first.secret}`,
      "",
      ...(advice.note ? [advice.note, ""] : []),
      "Record an event:",
      `  curl -i -X POST ${base}/api/ingest/event${proto} \\`,
      `    -H 'Authorization: Bearer ${first.secret}' \\`,
      "    -H 'Content-Type: application/json' \\",
      `    -d '${body}'`,
      "",
      `Browse them: ${base}/viewer/ with a frontend token from`,
      `  curl -X POST ${base}/api/tokens/frontend${proto} \\`,
      `    -H 'Authorization: Bearer ${first.secret}' -H 'Content-Type: application/json' -d '{}'`,
      "",
      "",
    ].join("\n"),
  );
}

await main();
