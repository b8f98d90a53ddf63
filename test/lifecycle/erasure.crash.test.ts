/**
 * An erasure interrupted by SIGKILL is completed when the service starts again on the
 * same storage: the request is recorded (pending) before any of its work, and every start
 * completes pending erasures, erasing exactly the events the call was bound to.
 * Real processes (test/support/service-process.ts) on the suite's driver.
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { bearer, createEvents, listAll } from "../events/events-client.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";
import { validEvent } from "../support/test-server.js";

// More than one page of 1,000: the kill may land between two of them.
const VICTIM_EVENTS = 1_500;
const processes: ServiceProcess[] = [];
let storage: IsolatedStorage | undefined;

afterAll(async () => {
  for (const service of processes) await service.cleanup();
  await storage?.cleanup();
});

describe("an erasure killed by SIGKILL", () => {
  it("is completed on restart, erasing all it was bound to and nothing else", async () => {
    storage = await createIsolatedStorage();
    const adminToken = randomBytes(24).toString("hex");
    const env = { RATE_LIMIT_MAX: "1000000000" };
    const first = await spawnService(env, { storageEnv: storage.env, adminToken });
    processes.push(first);
    const url = `http://127.0.0.1:${first.port}`;
    const admin = createAdminClient(url, adminToken);
    const { project } = await admin.createProject({ name: "crash", plan: Plan.PRO });
    const projectId = project?.id ?? "";
    const { secret } = await admin.createApiKey({ projectId, environment: Environment.TEST });
    await createEvents(
      { url },
      secret,
      Array.from({ length: VICTIM_EVENTS }, (_, i) =>
        validEvent({ actorId: "victim", entityId: `doc_${i}` }),
      ),
      16,
    );
    await createEvents({ url }, secret, [validEvent({ actorId: "bystander" })], 1);

    // The erasure's call; killed once it is recorded, while it works.
    const call = admin
      .eraseEvents({ projectId, environment: Environment.TEST, actorId: "victim" })
      .then(
        () => "answered",
        () => "failed",
      );
    await first.waitForLog("erasure: recorded", 60_000);
    first.child.kill("SIGKILL");
    expect(await first.exited).toEqual({ code: null, signal: "SIGKILL" });
    expect(await call).toBe("failed");

    const second = await spawnService(env, { storageEnv: storage.env, adminToken });
    processes.push(second);
    const completed = await second.waitForLog("erasure: a pending erasure was completed", 120_000);
    const secondUrl = `http://127.0.0.1:${second.port}`;
    const { erasures } = await createAdminClient(secondUrl, adminToken).listErasures({
      projectId,
    });
    expect(erasures).toHaveLength(1);
    expect(erasures[0]).toMatchObject({
      id: completed.erasureId,
      actorId: "victim",
      status: "done",
      matched: BigInt(VICTIM_EVENTS),
      erased: BigInt(VICTIM_EVENTS),
    });
    const listed = (await listAll({ url: secondUrl }, bearer(secret), { limit: 200 })).events;
    expect(listed.map((event) => event.actorId)).toEqual(["bystander"]);
  }, 300_000);
});
