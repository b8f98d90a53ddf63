/**
 * Rotating MASTER_KEY (`npm run rotate-master-key`, docs/deploy.md): every stored key is
 * re-wrapped under the new master key in one transaction, the events still read exactly
 * as before under it, the old key no longer starts the service, and a run again changes
 * nothing. Refused, with nothing changed: while an instance runs on the storage, and
 * with a current key that is not the one the data was written with. On the suite's
 * driver (PostgreSQL with DATABASE_URL and MASTER_KEY; the embedded DATA_DIR, whose
 * master.key the command replaces).
 */

import { randomBytes } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, expect, it } from "vitest";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { type App, createApp } from "../../src/app.js";
import { generateApiKey } from "../../src/auth/api-keys.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { runScript } from "../support/run-script.js";
import { validEvent } from "../support/test-server.js";

const ADMIN_TOKEN = randomBytes(24).toString("hex");
let storage: IsolatedStorage | undefined;
afterAll(async () => {
  await storage?.cleanup();
});

const appWith = (env: Record<string, string>): Promise<App> => {
  const config = loadConfig({
    ...storage?.env,
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "silent",
    ADMIN_TOKEN,
    ...env,
  });
  return createApp(config, createLogger(config.LOG_LEVEL));
};

/** Runs the command with the storage's environment and `env`; how it ended. */
function rotate(env: Record<string, string>) {
  return runScript("src/admin/rotate-master-key.ts", {
    DATABASE_URL: undefined,
    ...storage?.env,
    ...env,
  });
}

/**
 * On PostgreSQL, waits until the closed app's sessions have left the database (its pool
 * closes them as it ends; the command refuses while any other session is connected).
 */
async function sessionsClosed(): Promise<void> {
  const url = storage?.env.DATABASE_URL;
  if (url === undefined) return;
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    for (let attempt = 0; attempt < 100; attempt++) {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()`;
      if (row?.n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await sql.end();
  }
}

/** The actorIds of the events listed through a running app. */
async function listedActors(app: App, secret: string): Promise<string[]> {
  const server = await app.listen();
  try {
    const response = await fetch(`http://127.0.0.1:${server.port}/api/events?limit=100`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { events: { actorId: string }[] };
    return body.events.map((event) => event.actorId).sort();
  } finally {
    await server.close(1_000);
  }
}

it("re-wraps every stored key under the new master key; the events read as before, the old key no longer starts", async () => {
  storage = await createIsolatedStorage();
  const embedded = storage.kind === "pglite";
  const newKey = randomBytes(32).toString("base64");

  const first = await appWith({});
  let secret = "";
  const oldKey = embedded
    ? (await readFile(join(storage.env.DATA_DIR ?? "", "master.key"), "utf8")).trim()
    : (storage.env.MASTER_KEY ?? "");
  try {
    const server = await first.listen();
    const project = await first.projects.createProject("rotation", "pro");
    const key = generateApiKey("test");
    secret = key.secret;
    await first.projects.createApiKey({
      projectId: project.id,
      environment: "test",
      keyHash: key.hash,
      prefix: key.prefix,
    });
    const post = async (actorId: string) => {
      const response = await fetch(`http://127.0.0.1:${server.port}/api/ingest/event`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify(validEvent({ actorId })),
      });
      expect(response.status).toBe(201);
    };
    await post("before-1");
    await post("before-2");
    // A second data key version: both must be re-wrapped.
    await createAdminClient(`http://127.0.0.1:${server.port}`, ADMIN_TOKEN).rotateProjectKey({
      projectId: project.id,
    });
    await post("after-data-key-rotation");
    await server.close(1_000);

    // An instance still running on the storage: refused, nothing changed.
    const running = await rotate({ NEW_MASTER_KEY: newKey });
    expect(running.code).toBe(1);
    expect(running.stderr).toMatch(
      embedded
        ? /^rotate-master-key: a service runs on DATA_DIR .*: stop it first\n$/
        : /^rotate-master-key: \d+ other sessions are connected to the database: stop every instance \(and close other clients\) first\n$/,
    );
  } finally {
    await first.close();
  }

  await sessionsClosed();
  // A current key that is not the data's: refused, nothing changed.
  const wrong = await rotate({
    MASTER_KEY: randomBytes(32).toString("base64"),
    NEW_MASTER_KEY: newKey,
  });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toMatch(
    /^rotate-master-key: nothing changed: the index key of project [0-9a-f-]+ opens under neither the old nor the new master key\n$/,
  );
  const bad = await rotate({ NEW_MASTER_KEY: "short" });
  expect(bad.code).toBe(78);

  const done = await rotate({ NEW_MASTER_KEY: newKey });
  expect(done.stderr).toBe("");
  expect(done.code).toBe(0);
  expect(done.stdout).toMatch(
    /^master key rotated: 3 keys re-wrapped \(0 already under the new key\)/,
  );
  // Run again as after a crash between the commit and the new key's file (embedded: the
  // file still holds the old key) or the new key's deployment: every key is under the new
  // one already, nothing changes.
  const keyFile = join(storage.env.DATA_DIR ?? "", "master.key");
  if (embedded) {
    const kept = (await readdir(storage.env.DATA_DIR ?? "")).filter((name) =>
      /^master\.key\..*\.old$/.test(name),
    );
    expect(kept).toHaveLength(1);
    expect((await readFile(join(storage.env.DATA_DIR ?? "", kept[0] ?? ""), "utf8")).trim()).toBe(
      oldKey,
    );
    await writeFile(keyFile, `${oldKey}\n`);
  }
  const again = await rotate({
    NEW_MASTER_KEY: newKey,
    ...(embedded ? {} : { MASTER_KEY: oldKey }),
  });
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(
    /^master key rotated: 0 keys re-wrapped \(3 already under the new key\)/,
  );
  if (embedded) expect((await readFile(keyFile, "utf8")).trim()).toBe(newKey);

  const refusedOld = await appWith({ MASTER_KEY: oldKey }).then(
    async (app) => {
      await app.close();
      return undefined;
    },
    (error: unknown) => error,
  );
  expect(refusedOld).toBeInstanceOf(ConfigError);

  const second = await appWith(embedded ? {} : { MASTER_KEY: newKey });
  try {
    expect(await listedActors(second, secret)).toEqual([
      "after-data-key-rotation",
      "before-1",
      "before-2",
    ]);
  } finally {
    await second.close();
  }
}, 120_000);
