/**
 * Rotating the log's signing key, as an operator does it (docs/verifiable-log.md,
 * Rotation): the service restarted with a new LOG_SIGNING_KEY serves, at once, a latest
 * checkpoint that opens with the key GET /api/log/key now serves, and that still opens with
 * the key auditors pinned before; a later checkpoint and the consistency proof between the
 * two verify with both keys given to the verifier.
 */
import { randomBytes } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { createLogClient } from "../../src/cli/log-client.js";
import { openCheckpoint } from "../../src/tlog/checkpoint.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseVerifierKey } from "../../src/tlog/note.js";
import { verifyLog } from "../../src/tlog/verify.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { checkpointCovering } from "../support/log-checkpoints.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { validEvent } from "../support/test-server.js";

const crypto = createNodeLogCrypto();
const adminToken = randomBytes(24).toString("hex");
let storage: IsolatedStorage | undefined;
const running: ServiceProcess[] = [];

afterAll(async () => {
  for (const service of running) await service.cleanup();
  await storage?.cleanup();
});

async function start(signingKey: Buffer): Promise<ServiceProcess> {
  storage ??= await createIsolatedStorage();
  const service = await spawnService(
    {
      LOG_SIGNING_KEY: signingKey.toString("base64"),
      LOG_CHECKPOINT_INTERVAL_MS: "100",
      LOG_ISSUER: "audit.test",
    },
    { storageEnv: storage.env, adminToken },
  );
  running.push(service);
  return service;
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill("SIGTERM");
  expect(await service.exited).toEqual({ code: 0, signal: null });
}

async function post(url: string, secret: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${url}/api/ingest/event`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify(validEvent({ entityId: `doc_${i}` })),
    });
    expect(response.status).toBe(201);
  }
}

it("serves a checkpoint signed with the new key right after a restart with it, still verifiable with the old", async () => {
  const first = await start(randomBytes(32));
  const url = `http://127.0.0.1:${first.port}`;
  const admin = createAdminClient(url, adminToken);
  const { project } = await admin.createProject({ name: "rotation", plan: Plan.PRO });
  const { secret } = await admin.createApiKey({
    projectId: project?.id ?? "",
    environment: Environment.TEST,
  });
  await post(url, secret, 3);
  const before = createLogClient(url, secret);
  const kept = await checkpointCovering(before, 3);
  const oldKey = await before.verifierKey();
  await stop(first);

  const second = await start(randomBytes(32));
  const after = createLogClient(`http://127.0.0.1:${second.port}`, secret);
  const newKey = await after.verifierKey();
  expect(newKey).not.toBe(oldKey);
  expect(newKey.split("+")[0]).toBe(oldKey.split("+")[0]);
  // The log did not grow: its latest checkpoint is the one of size 3, signed again.
  let latest = "";
  for (let attempt = 0; attempt < 200; attempt++) {
    latest = await after.checkpoint();
    if (latest !== kept) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const withNew = await openCheckpoint(crypto, latest, await parseVerifierKey(crypto, newKey));
  const withOld = await openCheckpoint(crypto, latest, await parseVerifierKey(crypto, oldKey));
  expect(withNew.size).toBe(3);
  expect(withOld.rootHash).toEqual(withNew.rootHash);
  expect(latest.startsWith(kept)).toBe(true);

  // The log grows under the new key; the auditor checks the old checkpoint with the old
  // key, the new one with the new key, and the consistency between them.
  await post(`http://127.0.0.1:${second.port}`, secret, 2);
  const grown = await checkpointCovering(after, 5);
  const report = await verifyLog({
    crypto,
    verifierKey: `${oldKey}\n${newKey}`,
    checkpoint: grown,
    earlierCheckpoint: kept,
    events: after.events(),
    proofs: after,
  });
  expect(report.failures).toEqual([]);
  expect(report.ok).toBe(true);
  await stop(second);
});
