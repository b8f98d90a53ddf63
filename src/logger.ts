/**
 * Structured JSON logs (pino). Secrets never reach a log line: request headers and
 * bodies are not logged, and the redaction below is a second line of defence for any
 * object that carries them by mistake.
 *
 * Lines are written synchronously: a line logged just before the process exits (a configuration
 * error, "stopped") is never lost, and a stdout whose reader has gone away (a supervisor killed,
 * a log shipper crashed) cannot hold up the exit. With pino's default asynchronous destination,
 * exiting with a line still in flight made its exit hook retry the write on EPIPE forever, so a
 * SIGTERM left the process running (sonic-boom 4.2.1's flushSync retries every error).
 */
import { type Logger, pino } from "pino";

/** The service's logger at `level`, writing JSON lines to stdout. */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { service: "audit-event-service" },
      redact: {
        paths: [
          "authorization",
          "*.authorization",
          "headers.authorization",
          'headers["x-project-key"]',
          "*.secret",
          "secret",
          "token",
          "*.token",
          "masterKey",
          "adminToken",
        ],
        censor: "[redacted]",
      },
    },
    pino.destination({ dest: 1, sync: true }),
  );
}
