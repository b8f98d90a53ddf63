/**
 * CORS as a browser meets it: the list endpoint answers preflights and carries
 * Access-Control-Allow-Origin (on errors too); event ingestion answers neither. Any
 * origin by default; only the configured ones with CORS_ORIGINS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { bearer, tokenFor } from "./events-client.js";

const APP = "https://app.example.com";

const preflight = (url: string, origin: string, headers = "authorization") =>
  fetch(url, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "GET",
      "access-control-request-headers": headers,
    },
  });

describe("CORS", () => {
  let open: TestServer;
  let restricted: TestServer;

  beforeAll(async () => {
    [open, restricted] = await Promise.all([
      startTestServer({ RATE_LIMIT_MAX: "1000000000" }),
      startTestServer({ CORS_ORIGINS: `${APP}, http://localhost:5173` }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([open?.close(), restricted?.close()]);
  });

  describe("by default (any origin)", () => {
    it("a preflight of GET /api/events is answered 204 with the allowed method and headers", async () => {
      const response = await preflight(
        `${open.url}/api/events`,
        "https://anywhere.example",
        "authorization, x-request-id",
      );
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-allow-methods")).toMatch(/\bGET\b/);
      const allowed = (response.headers.get("access-control-allow-headers") ?? "")
        .split(",")
        .map((name) => name.trim().toLowerCase());
      expect(allowed).toEqual(
        expect.arrayContaining(["authorization", "content-type", "x-request-id"]),
      );
      expect(response.headers.get("access-control-allow-credentials")).toBeNull();
      expect(await response.text()).toBe("");
    });

    it("a preflight with a query string is answered the same", async () => {
      const response = await preflight(`${open.url}/api/events?limit=5`, "https://a.example");
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    });

    it("the actual GET carries Access-Control-Allow-Origin and exposes x-request-id", async () => {
      const key = await open.provision();
      const token = await tokenFor(open, key.secret);
      const response = await fetch(`${open.url}/api/events`, {
        headers: { origin: "https://a.example", ...bearer(token) },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-expose-headers")).toMatch(/x-request-id/i);
    });

    it("an error of the list endpoint carries it too, so the page can read the error", async () => {
      const response = await fetch(`${open.url}/api/events`, {
        headers: { origin: "https://a.example" },
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    });

    it("a preflight of POST /api/ingest/event is not answered", async () => {
      const response = await fetch(`${open.url}/api/ingest/event`, {
        method: "OPTIONS",
        headers: {
          origin: "https://a.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      });
      expect(response.status).not.toBe(204);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(response.headers.get("access-control-allow-methods")).toBeNull();
    });

    it("POST /api/ingest/event from a page carries no Access-Control-Allow-Origin", async () => {
      const key = await open.provision();
      const response = await fetch(`${open.url}/api/ingest/event`, {
        method: "POST",
        headers: {
          origin: "https://a.example",
          "content-type": "application/json",
          ...bearer(key.secret),
        },
        body: JSON.stringify(validEvent()),
      });
      expect(response.status).toBe(201);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });

    it("the token endpoint (a backend's call, with an API key) answers no preflight", async () => {
      const response = await fetch(`${open.url}/api/tokens/frontend`, {
        method: "OPTIONS",
        headers: { origin: "https://a.example", "access-control-request-method": "POST" },
      });
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });
  });

  describe("with CORS_ORIGINS", () => {
    it.each([APP, "http://localhost:5173"])(
      "a listed origin (%s) is echoed back",
      async (origin) => {
        const response = await preflight(`${restricted.url}/api/events`, origin);
        expect(response.status).toBe(204);
        expect(response.headers.get("access-control-allow-origin")).toBe(origin);
        expect(response.headers.get("vary")).toMatch(/origin/i);
      },
    );

    it("another origin gets no Access-Control-Allow-Origin", async () => {
      const response = await preflight(`${restricted.url}/api/events`, "https://evil.example");
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      const actual = await fetch(`${restricted.url}/api/events`, {
        headers: { origin: "https://evil.example" },
      });
      expect(actual.headers.get("access-control-allow-origin")).toBeNull();
      expect(actual.headers.get("vary")).toMatch(/origin/i);
    });

    it("the actual GET from a listed origin carries it", async () => {
      const response = await fetch(`${restricted.url}/api/events`, { headers: { origin: APP } });
      expect(response.status).toBe(401);
      expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    });
  });
});
