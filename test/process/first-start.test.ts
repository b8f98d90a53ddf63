/**
 * The first start of the embedded default (README, Quick start): the real process prints
 * a test API key once, on stderr, with curl lines that work as printed; stdout carries only
 * JSON log lines, one of which records the first start (without the key). A first start that fails
 * before it listens (the port taken) must not use up that key: the next start prints it.
 * Embedded only: with DATABASE_URL nothing is created at start.
 */
import * as net from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { spawnService } from "../support/service-process.js";
import { usingPostgres } from "../support/test-server.js";

const storages: IsolatedStorage[] = [];

afterAll(async () => {
  for (const storage of storages) await storage.cleanup();
});

/** The banner's ingest curl line, read back: its URL, key and body. */
function printedIngestCall(text: string) {
  const url = /curl -i -X POST (\S+) /.exec(text)?.[1];
  const key = /API key: +(\S+)/.exec(text)?.[1];
  const body = /-d '(\{.*\})'/.exec(text)?.[1];
  return { url, key, body };
}

describe.skipIf(usingPostgres)("first start of the embedded default", () => {
  it("a start that cannot listen creates nothing; the next one prints a key whose curl line works", async () => {
    const storage = await createIsolatedStorage();
    storages.push(storage);
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as net.AddressInfo).port;

    await expect(spawnService({ PORT: String(port) }, { storageEnv: storage.env })).rejects.toThrow(
      /exited before logging/,
    );
    taken.close();

    const service = await spawnService({}, { storageEnv: storage.env });
    try {
      // The banner is written right after this record.
      const record = await service.waitForLog(
        "first start: created a project and a test API key, shown once on stderr",
        30_000,
      );
      for (let i = 0; i < 50 && !service.stderr().includes("API key:"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const { url, key, body } = printedIngestCall(service.stderr());
      expect(url).toBe(`http://127.0.0.1:${service.port}/api/ingest/event`);
      expect(key).toMatch(/^pk_test_/);
      expect(service.stderr()).toContain(`project id: ${record.projectId}`);
      // stdout: JSON lines only, and the key in none of them.
      expect(service.stdout.length).toBeGreaterThan(0);
      for (const line of service.stdout) {
        expect(() => JSON.parse(line), line).not.toThrow();
        expect(line).not.toContain(key);
      }
      const response = await fetch(url ?? "", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body ?? "",
      });
      expect(response.status).toBe(201);
    } finally {
      await service.cleanup();
    }
    // Two starts of the embedded default, each initialising PGlite: over a minute when loaded.
  }, 180_000);

  it("in production behind a TLS proxy, the printed curl line carries the proxy's header and works", async () => {
    // Plain HTTP is refused in production: as printed without the header, the line got
    // 400 `HTTPS is required` (outside audit of 2026-11-29).
    const storage = await createIsolatedStorage();
    storages.push(storage);
    const service = await spawnService(
      { NODE_ENV: "production", EMBEDDED_IN_PRODUCTION: "1", TRUST_PROXY: "true" },
      { storageEnv: storage.env },
    );
    try {
      await service.waitForLog(
        "first start: created a project and a test API key, shown once on stderr",
        30_000,
      );
      for (let i = 0; i < 50 && !service.stderr().includes("frontend"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const banner = service.stderr();
      expect(banner).toContain(
        `curl -i -X POST http://127.0.0.1:${service.port}/api/ingest/event -H 'X-Forwarded-Proto: https' \\`,
      );
      const { url, key, body } = printedIngestCall(banner);
      const response = await fetch(url ?? "", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "x-forwarded-proto": "https",
        },
        body: body ?? "",
      });
      expect(response.status).toBe(201);
    } finally {
      await service.cleanup();
    }
  }, 120_000);
});
