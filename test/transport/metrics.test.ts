/**
 * /metrics as a scraper and a hostile client see it: no label value a caller chooses
 * grows the number of series.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseExposition } from "../support/prometheus.js";
import { h2Close, h2Connect, h2Request } from "../support/raw-http.js";
import { startTestServer, type TestServer } from "../support/test-server.js";

const FIXED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT"];

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe("/metrics label cardinality", () => {
  const scrape = async () => {
    const response = await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(15_000) });
    expect(response.status).toBe(200);
    return parseExposition(await response.text());
  };

  it("invented HTTP/2 methods are counted under OTHER, adding no series", async () => {
    await scrape(); // the scrape's own series exists from here on
    const before = await scrape();
    const seriesBefore = before.samples.filter((s) => s.name === "http_requests_total").length;
    const session = await h2Connect(server.url);
    const invented = Array.from(
      { length: 40 },
      (_, i) => `X${i}${randomBytes(60).toString("hex").toUpperCase()}`,
    );
    try {
      for (const method of invented) {
        const response = await h2Request(session, { ":method": method, ":path": "/healthz" });
        expect(response.status).toBe(405);
      }
    } finally {
      await h2Close(session);
    }

    const after = await scrape();
    const series = after.samples.filter((s) => s.name === "http_requests_total");
    const methods = new Set(series.map((s) => s.labels.method));
    for (const method of methods) expect([...FIXED_METHODS, "OTHER"]).toContain(method);
    // 40 invented methods on one route and status: one new series at most.
    expect(series.length).toBeLessThanOrEqual(seriesBefore + 1);
    expect(after.value("http_requests_total", { route: "/healthz", method: "OTHER" })).toBe(40);
  });
});

describe("METRICS_TOKEN", () => {
  const token = "metrics-token-0123456789abcdef";
  let guarded: TestServer;

  beforeAll(async () => {
    guarded = await startTestServer({ METRICS_TOKEN: token });
  });
  afterAll(async () => {
    await guarded?.close();
  });

  const scrape = (headers: Record<string, string> = {}) =>
    fetch(`${guarded.url}/metrics`, { headers, signal: AbortSignal.timeout(15_000) });

  it("set: /metrics answers 401 without the token or with another, 200 with it; probes stay open", async () => {
    for (const headers of [
      {},
      { authorization: "Bearer wrong-token-0123456789abcdef" },
      { authorization: token },
      { "x-project-key": token },
    ]) {
      const refused = await scrape(headers);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe("Bearer");
      expect(await refused.json()).toEqual({ error: "Invalid metrics token" });
    }
    const allowed = await scrape({ authorization: `Bearer ${token}` });
    expect(allowed.status).toBe(200);
    expect(parseExposition(await allowed.text()).types.get("http_requests_total")).toBe("counter");
    const health = await fetch(`${guarded.url}/healthz`, { signal: AbortSignal.timeout(15_000) });
    expect(health.status).toBe(200);
  });

  it("unset (the default): /metrics stays open", async () => {
    const open = await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(15_000) });
    expect(open.status).toBe(200);
    await open.text();
  });
});
