/**
 * The viewer's files as the service serves them: the committed bundle with no build
 * step, content types, caching, the demo page's CSP and the other security headers, and
 * nothing but the listed files.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/test-server.js";

describe("the viewer's files", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const get = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { redirect: "manual", ...init });

  it("the demo page is HTML with a CSP that runs no inline script and forbids framing", async () => {
    const response = await get("/viewer/");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'none'");
    expect(csp).toContain("require-trusted-types-for 'script'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    const html = await response.text();
    expect(html).toContain('<script type="module" src="audit-log-viewer.js"></script>');
    // Every script of the page is a file: the CSP would block an inline one.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it("the module is the committed bundle, JavaScript, loadable from any origin", async () => {
    const response = await get("/viewer/audit-log-viewer.js", {
      headers: { origin: "https://app.example.com" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    const body = await response.text();
    expect(body).toBe(await readFile("viewer/dist/audit-log-viewer.js", "utf8"));
    expect(body).toContain('"audit-log-viewer"');
  });

  it("the demo's script and styles are served with their types", async () => {
    const script = await get("/viewer/demo.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const styles = await get("/viewer/demo.css");
    expect(styles.status).toBe(200);
    expect(styles.headers.get("content-type")).toBe("text/css; charset=utf-8");
  });

  it("a request with the file's ETag gets 304 and no body", async () => {
    const first = await get("/viewer/audit-log-viewer.js");
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await get("/viewer/audit-log-viewer.js", {
      headers: { "if-none-match": etag ?? "" },
    });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });

  it("HEAD answers the headers and no body", async () => {
    const response = await get("/viewer/audit-log-viewer.js", { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(Number(response.headers.get("content-length"))).toBeGreaterThan(1000);
    expect(await response.text()).toBe("");
  });

  it("other methods get 405 naming GET and HEAD", async () => {
    const response = await get("/viewer/", { method: "POST", body: "x" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
    expect(await response.json()).toEqual({ error: "Method not allowed" });
  });

  it("/viewer redirects to /viewer/, where the page's relative URLs resolve", async () => {
    const response = await get("/viewer");
    expect(response.status).toBe(308);
    expect(response.headers.get("location")).toBe("/viewer/");
  });

  it("only the listed files are served: sources and other paths are 404", async () => {
    for (const path of [
      "/viewer/index.html",
      "/viewer/audit-log-viewer.ts",
      "/viewer/src/audit-log-viewer.ts",
      "/viewer/..%2Fpackage.json",
      "/viewer/../package.json",
    ]) {
      const response = await get(path);
      expect(response.status, path).toBe(404);
      expect(await response.json(), path).toEqual({ error: "Not found" });
    }
  });
});
