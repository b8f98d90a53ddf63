/**
 * The first start of the embedded default (README, Quick start): the real process prints
 * a test API key once, with curl lines that work as printed. A first start that fails
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
function printedIngestCall(stdout: string[]) {
  const text = stdout.join("\n");
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
      await service.waitForLog("audit event service listening", 5_000);
      // The banner follows the listening line.
      for (let i = 0; i < 50 && !service.stdout.join("\n").includes("API key:"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const { url, key, body } = printedIngestCall(service.stdout);
      expect(url).toBe(`http://127.0.0.1:${service.port}/api/ingest/event`);
      expect(key).toMatch(/^pk_test_/);
      const response = await fetch(url ?? "", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body ?? "",
      });
      expect(response.status).toBe(201);
    } finally {
      await service.cleanup();
    }
  });
});
