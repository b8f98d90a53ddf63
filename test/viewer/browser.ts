/**
 * What the viewer's browser tests share: headless Chromium (Debian's `chromium` package
 * driven by playwright-core, which downloads no browser of its own), screenshots, and a
 * host app of the kind that embeds the viewer: a page on another origin, and a token
 * endpoint that mints frontend tokens with the API key the way a customer's backend
 * would.
 *
 * A machine without /usr/bin/chromium fails these tests with a message saying so
 * rather than skipping them: .ci/run installs the package, and a suite that quietly
 * skips its browser tests would hide a broken viewer.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Where Debian's chromium package puts the browser. */
export const CHROMIUM_PATH = "/usr/bin/chromium";
/** Screenshots go here (gitignored). */
export const SCREENSHOT_DIR = "test-results";

/** Launches headless Chromium; throws a clear error when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}: the viewer's browser tests need Debian's ` +
        "chromium package (apt-get install -y chromium; .ci/run installs it).",
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // --no-sandbox: CI runs as root; /dev/shm is small in containers.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** Saves a full-page screenshot as test-results/viewer-<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `viewer-${name}.png`), fullPage: true });
}

/**
 * Page errors and console errors of a page, less the network errors a browser logs for
 * every non-2xx response (the tests cause 401s on purpose). A CSP or Trusted Types
 * violation shows up here.
 */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    if (message.text().startsWith("Failed to load resource")) return;
    errors.push(`console: ${message.text()}`);
  });
  return errors;
}

/** A customer's app: a page embedding the viewer, and its token endpoint. */
export interface HostApp {
  /** `http://127.0.0.1:<port>`, another origin than the service's. */
  url: string;
  /** How many tokens `POST /token` has minted. */
  tokenCalls(): number;
  close(): Promise<void>;
}

/** Options of startHostApp. */
export interface HostAppOptions {
  /** The HTML of `GET /`. */
  page: string;
  /** Mints a token (with the API key, on the server side). */
  mint: () => Promise<string>;
}

/** Starts the host app on 127.0.0.1, port 0. */
export async function startHostApp(options: HostAppOptions): Promise<HostApp> {
  let calls = 0;
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(options.page);
      return;
    }
    if (req.method === "POST" && req.url === "/token") {
      calls++;
      options.mint().then(
        (token) => {
          // Called from the service's demo page, another origin.
          res.writeHead(200, {
            "content-type": "application/json",
            "access-control-allow-origin": "*",
          });
          res.end(JSON.stringify({ token }));
        },
        () => {
          res.writeHead(500, { "access-control-allow-origin": "*" });
          res.end();
        },
      );
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tokenCalls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
