/**
 * Serves the browser viewer: the `<audit-log-viewer>` module at
 * /viewer/audit-log-viewer.js and its demo page at /viewer/. `npm run build:viewer`
 * bundles them from viewer/src into viewer/dist, which is committed, so that a fresh
 * clone serves them with no build step (CI checks the bundle matches its sources).
 *
 * Invariants: only the files listed here are served (no part of a request's path reaches
 * the file system), for GET and HEAD. The module may be loaded by any page: a
 * cross-origin module script is fetched with CORS, so it is sent with
 * `Access-Control-Allow-Origin: *` (it holds no secret, and no credential is involved).
 * The demo page takes a token, so its CSP runs scripts from this origin only (no inline
 * script, HTML sinks only through lit's Trusted Types policy), submits no form anywhere
 * (a token never ends up in a URL) and forbids framing.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type NodeRequest, type NodeResponse, sendJson } from "./node-http.js";

/** The path prefix of the viewer. */
const VIEWER_PATH = "/viewer/";

/** The CSP of the demo page. */
const DEMO_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // The service itself, and a host app's token provider URL typed into the demo.
  "connect-src 'self' https: http:",
  "img-src 'self' data:",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types lit-html",
].join("; ");

interface Asset {
  file: string;
  contentType: string;
  headers: Record<string, string>;
}

// Files are not content-hashed: pages and scripts are revalidated (ETag) after a short
// while, so a new release reaches embedding pages within minutes.
const ASSET_CACHE = "public, max-age=300";
const ASSETS: ReadonlyMap<string, Asset> = new Map([
  [
    VIEWER_PATH,
    {
      file: "index.html",
      contentType: "text/html; charset=utf-8",
      headers: {
        "cache-control": "no-cache",
        "content-security-policy": DEMO_PAGE_CSP,
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
      },
    },
  ],
  [
    `${VIEWER_PATH}audit-log-viewer.js`,
    {
      file: "audit-log-viewer.js",
      contentType: "text/javascript; charset=utf-8",
      headers: {
        "cache-control": ASSET_CACHE,
        "access-control-allow-origin": "*",
        "cross-origin-resource-policy": "cross-origin",
      },
    },
  ],
  [
    `${VIEWER_PATH}demo.js`,
    {
      file: "demo.js",
      contentType: "text/javascript; charset=utf-8",
      headers: { "cache-control": ASSET_CACHE },
    },
  ],
  [
    `${VIEWER_PATH}demo.css`,
    {
      file: "demo.css",
      contentType: "text/css; charset=utf-8",
      headers: { "cache-control": ASSET_CACHE },
    },
  ],
]);

/** The viewer's files, for the request handler. */
export interface StaticViewer {
  /** Answers a request for a viewer file (returns true), or leaves it (false). */
  handle(req: NodeRequest, res: NodeResponse, method: string, path: string): boolean;
}

/** Creates the viewer's file server, over viewer/dist of this checkout. */
export function createStaticViewer(): StaticViewer {
  const dir = distDir();
  // Each file is read and hashed once, on first request: the bundle does not change
  // while the process runs. A failed read is not kept, so a later build is picked up.
  const loaded = new Map<string, Promise<{ body: Buffer; etag: string }>>();
  const load = (file: string) => {
    let pending = loaded.get(file);
    if (!pending) {
      pending = readFile(join(dir, file)).then((body) => ({
        body,
        etag: `"${createHash("sha256").update(body).digest("base64url")}"`,
      }));
      pending.catch(() => loaded.delete(file));
      loaded.set(file, pending);
    }
    return pending;
  };

  const serve = async (req: NodeRequest, res: NodeResponse, method: string, asset: Asset) => {
    let body: Buffer;
    let etag: string;
    try {
      ({ body, etag } = await load(asset.file));
    } catch {
      sendJson(res, 404, { error: "The viewer is not built: run npm run build:viewer" });
      return;
    }
    const headers = {
      ...asset.headers,
      etag,
      "content-type": asset.contentType,
      "x-content-type-options": "nosniff",
    };
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, "content-length": String(body.length) });
    if (method === "HEAD") res.end();
    else res.end(body);
  };

  return {
    handle(req, res, method, path) {
      // /viewer redirects to /viewer/: the demo page's relative URLs resolve against it.
      const redirect = path === "/viewer";
      const asset = ASSETS.get(path);
      if (!redirect && !asset) return false;
      if (method !== "GET" && method !== "HEAD") {
        sendJson(res, 405, { error: "Method not allowed" }, { allow: "GET, HEAD" });
        return true;
      }
      if (!asset) {
        res.writeHead(308, { location: VIEWER_PATH, "content-length": "0" });
        res.end();
        return true;
      }
      serve(req, res, method, asset).catch(() => res.destroy());
      return true;
    },
  };
}

// viewer/dist of this checkout: this file runs from src/transport (tsx, vitest) or from
// dist/src/transport (compiled), two or three levels below the repository.
function distDir(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  const candidates = [join(here, "../../viewer/dist"), join(here, "../../../viewer/dist")];
  return (
    candidates.find((dir) => existsSync(join(dir, "index.html"))) ?? join(here, "../../viewer/dist")
  );
}
