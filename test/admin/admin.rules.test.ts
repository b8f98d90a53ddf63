/**
 * AdminService's rules called directly (no server, no admin token: that is the edge's):
 * unknown projects and keys are 404s naming them, and every change to what a key may
 * do takes effect at once although the authenticator caches keys for a minute.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import { createDirectServices, type DirectServices } from "../support/direct-services.js";

const UNKNOWN_ID = "00000000-0000-7000-8000-000000000000";

async function refusal(call: Promise<unknown>): Promise<ServiceError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${error}`);
  return error;
}

describe("AdminService rules, called directly", () => {
  let services: DirectServices;
  beforeAll(async () => {
    services = await createDirectServices({ cacheSeconds: 60 });
  });
  afterAll(async () => {
    await services?.close();
  });

  it("creates a project on its plan with key version 1, and lists it", async () => {
    const project = await services.admin.createProject("Billing", "start");
    expect(project).toMatchObject({ name: "Billing", plan: "start", keyVersion: 1 });
    const listed = await services.admin.listProjects();
    expect(listed.map((each) => each.id)).toContain(project.id);
  });

  it("an unknown project is a 404 naming it, for every call that takes one", async () => {
    for (const call of [
      () => services.admin.setProjectPlan(UNKNOWN_ID, "pro"),
      () => services.admin.createApiKey(UNKNOWN_ID, "test"),
      () => services.admin.listApiKeys(UNKNOWN_ID),
      () => services.admin.rotateProjectKey(UNKNOWN_ID),
    ]) {
      const error = await refusal(call());
      expect(error.kind).toBe("not_found");
      expect(error.message).toBe(`Project ${UNKNOWN_ID} not found`);
    }
  });

  it("an unknown key is a 404 naming it", async () => {
    const error = await refusal(services.admin.setApiKeyStatus(UNKNOWN_ID, "revoked"));
    expect(error.kind).toBe("not_found");
    expect(error.message).toBe(`API key ${UNKNOWN_ID} not found`);
  });

  it("a created key authenticates at once; a retired one stays listed beside it", async () => {
    const project = await services.admin.createProject("Keys", "free");
    const early = await services.admin.createApiKey(project.id, "live");
    await services.admin.setApiKeyStatus(early.record.id, "retired");
    const created = await services.admin.createApiKey(project.id, "live");
    expect(created.secret).toMatch(/^pk_live_[A-Za-z0-9]{40}$/);
    expect(created.record).toMatchObject({ projectId: project.id, environment: "live" });
    const principal = await services.authenticator.requireApiKey({
      kind: "api_key",
      value: created.secret,
      via: "bearer",
    });
    expect(principal).toMatchObject({ projectId: project.id, environment: "live", plan: "free" });
    const keys = await services.admin.listApiKeys(project.id);
    expect(keys.map((key) => key.status).sort()).toEqual(["active", "retired"]);
  });

  it("a revoked key is refused at once, although the authenticator had cached it", async () => {
    const { keyId, secret } = await services.provision();
    const credential = { kind: "api_key", value: secret, via: "bearer" } as const;
    await services.authenticator.requireApiKey(credential);
    const revoked = await services.admin.setApiKeyStatus(keyId, "revoked");
    expect(revoked.status).toBe("revoked");
    const error = await refusal(services.authenticator.requireApiKey(credential));
    expect(error.kind).toBe("permission_denied");
    expect(error.message).toBe("API key has been revoked");
  });

  it("a plan change reaches the cached key's principal at once", async () => {
    const { projectId, secret } = await services.provision({ plan: "free" });
    const credential = { kind: "api_key", value: secret, via: "x-project-key" } as const;
    expect((await services.authenticator.requireApiKey(credential)).plan).toBe("free");
    const project = await services.admin.setProjectPlan(projectId, "pro");
    expect(project.plan).toBe("pro");
    expect((await services.authenticator.requireApiKey(credential)).plan).toBe("pro");
  });

  it("rotating a project's data key raises its key version", async () => {
    const { projectId } = await services.provision();
    const rotated = await services.admin.rotateProjectKey(projectId);
    expect(rotated.keyVersion).toBe(2);
    expect((await services.admin.rotateProjectKey(projectId)).keyVersion).toBe(3);
  });
});
