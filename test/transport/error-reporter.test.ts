/**
 * The error reporter logs a database outage once (issue 26): one error line with the
 * cause's stack when it starts, the requests failed meanwhile only counted, and one line
 * when the database answers again; other unexpected failures are still logged each time.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { Messages, ServiceError } from "../../src/errors.js";
import {
  createErrorReporter,
  OUTAGE_ENDED,
  OUTAGE_STARTED,
} from "../../src/transport/error-reporter.js";

type Line = Record<string, unknown> & { msg?: string; level?: number };

function capture() {
  const lines: Line[] = [];
  const logger = pino(
    { level: "info" },
    { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
  );
  return { logger, lines };
}

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
const waitFor = async (check: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe("the error reporter and refusals the client was told about", () => {
  it("logs no line for load shedding, a stopping instance or an integrator behind (each a 503 with its cause), and one for an internal failure", () => {
    const { logger, lines } = capture();
    const reporter = createErrorReporter(logger);
    for (let i = 0; i < 100; i++) {
      for (const message of [
        Messages.overloaded,
        Messages.shuttingDown,
        Messages.integrationBehind,
      ]) {
        reporter.report(
          new ServiceError("unavailable", message, { retryAfterSeconds: 1 }),
          undefined,
        );
      }
    }
    expect(lines).toEqual([]);
    reporter.report(new Error("a bug"), undefined);
    expect(lines.map((line) => line.msg)).toEqual(["request failed"]);
  });
});

describe("the error reporter during a database outage", () => {
  it("logs the start once with its stack, counts the rest, and logs the end once the probe passes", async () => {
    const { logger, lines } = capture();
    let up = false;
    const reporter = createErrorReporter(logger, {
      databaseProbe: async () => {
        if (!up) throw refused();
      },
      probeIntervalMs: 10,
    });
    for (let i = 0; i < 50; i++) {
      reporter.report(i % 2 ? refused() : new ServiceError("unavailable", Messages.unavailable), {
        requestId: `r${i}`,
      } as never);
    }
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(lines.map((line) => line.msg)).toEqual([OUTAGE_STARTED]);
    expect(lines[0]?.level).toBe(50);
    expect(String((lines[0]?.err as { stack?: string } | undefined)?.stack)).toContain("Error");
    expect(lines[0]?.reqId).toBe("r0");

    up = true;
    await waitFor(() => lines.length === 2);
    expect(lines[1]).toMatchObject({ msg: OUTAGE_ENDED, requestsFailed: 50 });
    expect(typeof lines[1]?.outageSeconds).toBe("number");

    // A later outage is a new one; an internal failure is logged every time.
    reporter.report(refused(), undefined);
    reporter.report(new Error("bug"), undefined);
    reporter.report(new Error("bug"), undefined);
    expect(lines.slice(2).map((line) => line.msg)).toEqual([
      OUTAGE_STARTED,
      "request failed",
      "request failed",
    ]);
  });

  it("without a probe, takes an outage as over after a quiet spell", async () => {
    const { logger, lines } = capture();
    const reporter = createErrorReporter(logger, { probeIntervalMs: 500 });
    reporter.report(refused(), undefined);
    reporter.report(refused(), undefined);
    expect(lines.map((line) => line.msg)).toEqual([OUTAGE_STARTED]);
    // Five seconds without a failure.
    await waitFor(() => lines.length === 2, 10_000);
    expect(lines[1]).toMatchObject({ msg: OUTAGE_ENDED, requestsFailed: 2 });
  }, 15_000);
});
