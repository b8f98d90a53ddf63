/**
 * The keyring across instances: a data key rotation on one instance reaches another
 * within the cache's trust of the current version (5 s), not a minute later (found by an
 * outside audit on 2026-11-28: another instance sealed new events under the old version
 * for 57 s after a rotation).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyring } from "../../src/crypto/keyring.js";
import type { Db } from "../../src/store/db.js";
import { migrate } from "../../src/store/migrations.js";
import { createProjectStore } from "../../src/store/projects.js";
import { createIsolatedDb } from "../support/isolated-storage.js";

let db: Db;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
  await migrate(db);
});

afterAll(async () => {
  await cleanup();
});

describe("the keyring", () => {
  it("picks up a rotation made by another instance within 5 s", async () => {
    const masterKey = randomBytes(32);
    let clock = 1_000_000;
    const now = () => clock;
    const rotating = createKeyring({ db, masterKey, now });
    const other = createKeyring({ db, masterKey, now });
    const projectId = (await createProjectStore(db, rotating).createProject("rotate", "free")).id;

    expect((await other.forProject(projectId)).currentVersion).toBe(1);
    expect(await rotating.rotate(projectId)).toBe(2);
    expect((await rotating.forProject(projectId)).currentVersion).toBe(2);

    clock += 4_999;
    expect((await other.forProject(projectId)).currentVersion).toBe(1);
    clock += 1;
    const picked = await other.forProject(projectId);
    expect(picked.currentVersion).toBe(2);
    // Both instances hold the same key for the new version, and the old one still opens.
    const [mine, theirs] = await Promise.all([
      (await rotating.forProject(projectId)).dataKey(2),
      picked.dataKey(2),
    ]);
    expect(theirs).toEqual(mine);
    expect(await picked.dataKey(1)).toEqual(
      await (await rotating.forProject(projectId)).dataKey(1),
    );
  });
});
