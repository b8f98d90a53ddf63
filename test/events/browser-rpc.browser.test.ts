/**
 * Browsers on every protocol: List Events, and the server streams ExportEvents and
 * FollowEvents, called from Chromium, on a page of another origin, with
 * @connectrpc/connect-web over Connect and gRPC-Web and a frontend token,
 * under the same CORS policy as GET /api/events (any origin by default; CORS_ORIGINS
 * restricts it). Event ingestion stays closed to browsers on every protocol.
 */
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { type HostApp, launchChromium, startHostApp } from "../viewer/browser.js";
import type { ListOutcome, StreamOutcome } from "./browser-rpc-entry.js";
import { bearer, createEvents, tokenFor } from "./events-client.js";

const ENTRY = fileURLToPath(new URL("./browser-rpc-entry.ts", import.meta.url));
const LIST_EVENTS = "/audit.v1.EventService/ListEvents";

/** The page script, bundled for the browser. */
async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "warning",
  });
  const text = result.outputFiles[0]?.text ?? "";
  return text.replaceAll("</script", "<\\/script");
}

describe("List Events from a browser on another origin, over Connect and gRPC-Web", () => {
  let open: TestServer;
  let restricted: TestServer;
  let browser: Browser;
  let host: HostApp;
  let openToken: string;
  let restrictedToken: string;
  const eventIds: string[] = [];

  beforeAll(async () => {
    const [script, launched, servers] = await Promise.all([
      bundle(),
      launchChromium(),
      Promise.all([
        startTestServer(),
        startTestServer({ CORS_ORIGINS: "https://elsewhere.example" }),
      ]),
    ]);
    browser = launched;
    [open, restricted] = servers;
    host = await startHostApp({
      page: `<!doctype html><title>rpc</title><script type="module">${script}</script>`,
      mint: async () => "",
    });
    const key = await open.provision();
    eventIds.push(
      ...(await createEvents(
        open,
        key.secret,
        [validEvent({ entityId: "browser-rpc" }), validEvent({ entityId: "browser-rpc" })],
        1,
      )),
    );
    openToken = await tokenFor(open, key.secret);
    const restrictedKey = await restricted.provision();
    restrictedToken = await tokenFor(restricted, restrictedKey.secret);
  });
  afterAll(async () => {
    await browser?.close();
    await host?.close();
    await Promise.all([open?.close(), restricted?.close()]);
  });

  /** Runs the page script in a fresh page of the host app's origin. */
  const listFromPage = async (
    baseUrl: string,
    protocol: "connect" | "grpc-web",
    token: string,
  ): Promise<ListOutcome> => {
    const page = await browser.newPage();
    try {
      await page.goto(host.url);
      await page.waitForFunction(() => "auditListEvents" in globalThis);
      return await page.evaluate(
        ([url, proto, credential]) =>
          (
            globalThis as unknown as {
              auditListEvents: (a: string, b: string, c: string, d: string) => Promise<ListOutcome>;
            }
          ).auditListEvents(url, proto, credential, "browser-rpc"),
        [baseUrl, protocol, token] as const,
      );
    } finally {
      await page.close();
    }
  };

  /** Runs a server stream from a fresh page of the host app's origin. */
  const streamFromPage = async (
    baseUrl: string,
    protocol: "connect" | "grpc-web",
    token: string,
    method: "exportEvents" | "followEvents",
  ): Promise<StreamOutcome> => {
    const page = await browser.newPage();
    try {
      await page.goto(host.url);
      await page.waitForFunction(() => "auditStreamEvents" in globalThis);
      return await page.evaluate(
        ([url, proto, credential, name, count]) =>
          (
            globalThis as unknown as {
              auditStreamEvents: (
                a: string,
                b: string,
                c: string,
                d: string,
                e: string,
                f: number,
              ) => Promise<StreamOutcome>;
            }
          ).auditStreamEvents(url, proto, credential, name, "browser-rpc", count),
        [baseUrl, protocol, token, method, eventIds.length] as const,
      );
    } finally {
      await page.close();
    }
  };

  it.each(
    (["exportEvents", "followEvents"] as const).flatMap((method) =>
      (["connect", "grpc-web"] as const).map((protocol) => [method, protocol] as const),
    ),
  )(
    "%s over %s: the page reads the server stream in log order, and the exposed x-request-id",
    async (method, protocol) => {
      const outcome = await streamFromPage(open.url, protocol, openToken, method);
      expect(outcome).toEqual({
        ok: true,
        eventIds,
        logIndexes: ["0", "1"],
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
    },
  );

  it.each(["connect", "grpc-web"] as const)(
    "followEvents over %s: the page reads the error of a bad token",
    async (protocol) => {
      const outcome = await streamFromPage(
        open.url,
        protocol,
        "eyJhbGciOiJIUzI1NiJ9.e30.c2ln",
        "followEvents",
      );
      expect(outcome).toEqual({ ok: false, code: "Unauthenticated", message: "Invalid token" });
    },
  );

  it.each(["connect", "grpc-web"] as const)(
    "exportEvents over %s: with CORS_ORIGINS not naming the page's origin, the browser refuses it",
    async (protocol) => {
      const outcome = await streamFromPage(
        restricted.url,
        protocol,
        restrictedToken,
        "exportEvents",
      );
      expect(outcome).toMatchObject({ ok: false, code: "Unknown" });
    },
  );

  it.each(["connect", "grpc-web"] as const)(
    "%s: the page reads the events with a frontend token, and the exposed x-request-id",
    async (protocol) => {
      const outcome = await listFromPage(open.url, protocol, openToken);
      expect(outcome).toEqual({
        ok: true,
        eventIds: [...eventIds].reverse(),
        nextCursor: null,
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
    },
  );

  it.each(["connect", "grpc-web"] as const)(
    "%s: the page reads the error of a bad token (Unauthenticated, Invalid token)",
    async (protocol) => {
      const outcome = await listFromPage(open.url, protocol, "eyJhbGciOiJIUzI1NiJ9.e30.c2ln");
      expect(outcome).toEqual({ ok: false, code: "Unauthenticated", message: "Invalid token" });
    },
  );

  it.each(["connect", "grpc-web"] as const)(
    "%s: with CORS_ORIGINS not naming the page's origin, the browser refuses the answer",
    async (protocol) => {
      const outcome = await listFromPage(restricted.url, protocol, restrictedToken);
      expect(outcome.ok).toBe(false);
      // The browser hides everything of a refused answer: fetch fails.
      expect(outcome).toMatchObject({ code: "Unknown" });
    },
  );

  it("the preflight of the RPC allows the headers connect-web and gRPC-Web send", async () => {
    const response = await fetch(`${open.url}${LIST_EVENTS}`, {
      method: "OPTIONS",
      headers: {
        origin: "https://anywhere.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-grpc-web, x-user-agent",
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
    const allowed = (response.headers.get("access-control-allow-headers") ?? "").split(", ");
    for (const header of [
      "authorization",
      "content-type",
      "connect-protocol-version",
      "connect-timeout-ms",
      "x-grpc-web",
      "x-user-agent",
      "grpc-timeout",
    ]) {
      expect(allowed).toContain(header);
    }
  });

  it("event ingestion answers no preflight and no Access-Control-Allow-Origin over RPC either", async () => {
    const url = `${open.url}/audit.v1.IngestService/CreateEvent`;
    const preflight = await fetch(url, {
      method: "OPTIONS",
      headers: { origin: "https://anywhere.example", "access-control-request-method": "POST" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const key = await open.provision();
    const call = await fetch(url, {
      method: "POST",
      headers: {
        origin: "https://anywhere.example",
        "content-type": "application/json",
        ...bearer(key.secret),
      },
      body: JSON.stringify(validEvent()),
    });
    expect(call.status).toBe(200);
    expect(call.headers.get("access-control-allow-origin")).toBeNull();
  });
});
