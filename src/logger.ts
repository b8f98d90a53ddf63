/**
 * Structured JSON logs (pino). Secrets never reach a log line: request headers and
 * bodies are not logged, and the redaction below is a second line of defence for any
 * object that carries them by mistake.
 */
import { type Logger, pino } from "pino";

/** The service's logger at `level`, writing JSON lines to stdout. */
export function createLogger(level: string): Logger {
  return pino({
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
  });
}
