/**
 * LOG_ISSUER is the first part of every log's origin, which each checkpoint signs and an
 * auditor's verifier key names. An instance started with another value (a typo, one
 * instance configured apart from the others) used to publish the next checkpoint under
 * its own origin, which verified against neither the pinned key nor the earlier
 * checkpoints (outside audit). Now a start whose LOG_ISSUER is not the one the published
 * checkpoints name is refused (ConfigError: exit 78 from main.ts); the same value starts.
 */
import { afterAll, expect, it } from "vitest";
import { type App, createApp } from "../../src/app.js";
import { generateApiKey } from "../../src/auth/api-keys.js";
import { createLogClient } from "../../src/cli/log-client.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { checkpointCovering } from "../support/log-checkpoints.js";
import { validEvent } from "../support/test-server.js";

let storage: IsolatedStorage | undefined;
afterAll(async () => {
  await storage?.cleanup();
});

const appWith = (issuer: string): Promise<App> => {
  const config = loadConfig({
    ...storage?.env,
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "silent",
    LOG_ISSUER: issuer,
    LOG_CHECKPOINT_INTERVAL_MS: "100",
  });
  return createApp(config, createLogger(config.LOG_LEVEL));
};

/** Why an app under `issuer` could not start (closed again when it did: undefined). */
const startError = (issuer: string): Promise<unknown> =>
  appWith(issuer).then(
    async (app) => {
      await app.close();
      return undefined;
    },
    (error: unknown) => error,
  );

it("a start with another LOG_ISSUER than the published checkpoints name is refused; the same one starts", async () => {
  storage = await createIsolatedStorage();
  // Before any checkpoint, any issuer starts.
  const first = await appWith("audit.example.com");
  try {
    const server = await first.listen();
    const project = await first.projects.createProject("issuer", "pro");
    const key = generateApiKey("test");
    await first.projects.createApiKey({
      projectId: project.id,
      environment: "test",
      keyHash: key.hash,
      prefix: key.prefix,
    });
    const url = `http://127.0.0.1:${server.port}`;
    const response = await fetch(`${url}/api/ingest/event`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
      body: JSON.stringify(validEvent()),
    });
    expect(response.status).toBe(201);
    const note = await checkpointCovering(createLogClient(url, key.secret), 1);
    expect(note.split("\n")[0]).toBe(`audit.example.com/${project.id}/test`);
    await server.close(1_000);
  } finally {
    await first.close();
  }

  const refused = await startError("audit-event-service");
  expect(refused).toBeInstanceOf(ConfigError);
  expect((refused as Error).message).toBe(
    "Invalid configuration: LOG_ISSUER audit-event-service is not the issuer the published checkpoints name (audit.example.com): every instance must use the same LOG_ISSUER, and it cannot change once a checkpoint is published (docs/verifiable-log.md)",
  );

  const again = await appWith("audit.example.com");
  try {
    // Logs whose latest checkpoints already name two issuers (left by an instance
    // configured apart before this check): either starts, a third is refused.
    await again.db.query(
      `insert into log_trees (project_id, environment, size)
       select project_id, 'live', 0 from log_trees limit 1`,
    );
    await again.db.query(
      `insert into log_checkpoints (project_id, environment, size, root, note)
       select project_id, 'live', 0, root, replace(note, '/test', '/live') from log_checkpoints
        where environment = 'test' order by size desc limit 1`,
    );
    await again.db.query(
      `update log_checkpoints set note = 'other.example.com' || substr(note, length('audit.example.com') + 1)
        where environment = 'test' and size = (select max(size) from log_checkpoints where environment = 'test')`,
    );
  } finally {
    await again.close();
  }
  for (const issuer of ["audit.example.com", "other.example.com"]) {
    const app = await appWith(issuer);
    await app.close();
  }
  const third = await startError("third.example.com");
  expect((third as Error).message).toContain(
    "LOG_ISSUER third.example.com is not the issuer the published checkpoints name (audit.example.com, other.example.com)",
  );
});
