/**
 * Serves the OpenAPI document of the REST API at GET /openapi.json (and HEAD). The
 * document is generated from the protos by `npm run generate` into
 * gen/openapi/openapi.json and committed (CI checks it is fresh and valid), so a fresh
 * clone serves it with no build step.
 *
 * Invariants: one fixed file, read once (a failed read is retried on the next request);
 * readable from any origin (`Access-Control-Allow-Origin: *`: it holds no secret and no
 * credential is involved), so that API tools on other origins can load it.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type NodeRequest, type NodeResponse, sendJson } from "./node-http.js";

/** The path of the document. */
export const OPENAPI_PATH = "/openapi.json";

/** The document's route, for the request handler. */
export interface OpenApiRoute {
  /** Answers a request for the document (returns true), or leaves it (false). */
  handle(req: NodeRequest, res: NodeResponse, method: string, path: string): boolean;
}

/** Creates the route over gen/openapi/openapi.json of this checkout. */
export function createOpenApiRoute(): OpenApiRoute {
  const file = documentFile();
  let loaded: Promise<{ body: Buffer; etag: string }> | undefined;
  const load = () => {
    if (!loaded) {
      loaded = readFile(file).then((body) => ({
        body,
        etag: `"${createHash("sha256").update(body).digest("base64url")}"`,
      }));
      loaded.catch(() => {
        loaded = undefined;
      });
    }
    return loaded;
  };

  const serve = async (req: NodeRequest, res: NodeResponse, method: string) => {
    let document: { body: Buffer; etag: string };
    try {
      document = await load();
    } catch {
      sendJson(res, 404, { error: "The OpenAPI document is not generated: run npm run generate" });
      return;
    }
    const headers = {
      etag: document.etag,
      "cache-control": "no-cache",
      "content-type": "application/json; charset=utf-8",
      "access-control-allow-origin": "*",
      "x-content-type-options": "nosniff",
    };
    if (req.headers["if-none-match"] === document.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { ...headers, "content-length": String(document.body.length) });
    if (method === "HEAD") res.end();
    else res.end(document.body);
  };

  return {
    handle(req, res, method, path) {
      if (path !== OPENAPI_PATH) return false;
      if (method !== "GET" && method !== "HEAD") {
        sendJson(res, 405, { error: "Method not allowed" }, { allow: "GET, HEAD" });
        return true;
      }
      serve(req, res, method).catch(() => res.destroy());
      return true;
    },
  };
}

// The document: dist/gen/openapi/openapi.json, which the build copies there (so dist/ alone,
// as the container image holds it, serves it), when this file runs from dist/src/transport;
// gen/openapi/openapi.json of the checkout when it runs from src/transport (tsx, vitest).
function documentFile(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  const candidates = [
    join(here, "../../gen/openapi/openapi.json"),
    join(here, "../../../gen/openapi/openapi.json"),
  ];
  return candidates.find((file) => existsSync(file)) ?? candidates[0] ?? "";
}
