/**
 * The log gauges when their figures cannot be read: NaN, never 0 (which looks healthy)
 * nor the last figure read (found by an outside audit on 2026-11-28: a service whose
 * database was away reported a lag of 0).
 */
import { describe, expect, it } from "vitest";
import { createMetrics } from "../../src/observability/metrics.js";

const LAG_GAUGES = [
  "audit_log_head_events",
  "audit_log_integrated_events",
  "audit_log_lag_events",
  "audit_log_lag_seconds",
];

async function gauges(metrics: ReturnType<typeof createMetrics>) {
  const text = await metrics.registry.metrics();
  return Object.fromEntries(
    LAG_GAUGES.map((name) => [name, text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1]]),
  );
}

describe("the log gauges", () => {
  it("read the figures when they can, NaN when the read fails, and the figures again after", async () => {
    const metrics = createMetrics();
    let failing = false;
    metrics.readLogLag(async () => {
      if (failing) throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
      return { head: 12, integrated: 10, oldestPendingSeconds: 0.5 };
    });
    expect(await gauges(metrics)).toEqual({
      audit_log_head_events: "12",
      audit_log_integrated_events: "10",
      audit_log_lag_events: "2",
      audit_log_lag_seconds: "0.5",
    });
    failing = true;
    await new Promise((resolve) => setImmediate(resolve));
    // prom-client writes NaN as "Nan", which Prometheus reads as NaN.
    expect(Object.values(await gauges(metrics))).toEqual(["Nan", "Nan", "Nan", "Nan"]);
    failing = false;
    await new Promise((resolve) => setImmediate(resolve));
    expect((await gauges(metrics)).audit_log_lag_events).toBe("2");
  });
});
