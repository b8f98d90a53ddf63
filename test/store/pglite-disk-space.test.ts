/**
 * The embedded database's free-space floor (store/pglite-driver.ts): below it every
 * statement is refused with disk_full (53100), a 503 to requests, and taken again once
 * space returns; a disk already below it when the database opens stops the open. Found by
 * an outside audit (2026-11-28): with 10-14 MB free PGlite spun for good, unable to make
 * its next write-ahead log segment, and the service answered nothing, /healthz included.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Messages, toServiceError } from "../../src/errors.js";
import { createPgliteDb, LowDiskSpaceError } from "../../src/store/pglite-driver.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const MB = 1_048_576;

describe("the embedded database's free-space floor", () => {
  it("refuses statements while the disk is under the floor, and takes them again after", async () => {
    const dir = await mkdtemp(join(tmpdir(), "audit-disk-"));
    dirs.push(dir);
    let free = 500 * MB;
    const asked: string[] = [];
    const db = await createPgliteDb(join(dir, "pglite"), {
      minFreeBytes: 64 * MB,
      freeBytes: async (path) => {
        asked.push(path);
        return free;
      },
    });
    try {
      await db.query("create table t (n int)");
      // The file system of the data directory is the one asked about.
      expect(asked[0]).toBe(dir);

      free = 20 * MB;
      // Read again within a second.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const refused = await db.query("insert into t values (1)").catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(LowDiskSpaceError);
      expect((refused as LowDiskSpaceError).code).toBe("53100");
      expect((refused as Error).message).toContain("20 MB free, under its floor of 64 MB");
      expect(toServiceError(refused)).toMatchObject({
        kind: "unavailable",
        message: Messages.diskFull,
      });
      await expect(db.transaction((tx) => tx.query("select 1"))).rejects.toBeInstanceOf(
        LowDiskSpaceError,
      );
      await expect(db.ping()).rejects.toBeInstanceOf(LowDiskSpaceError);

      free = 500 * MB;
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await db.query("insert into t values (2)");
      expect(await db.query("select n from t")).toEqual([{ n: 2 }]);
    } finally {
      await db.close();
    }
  });

  it("does not open a database whose disk is already under the floor", async () => {
    const dir = await mkdtemp(join(tmpdir(), "audit-disk-"));
    dirs.push(dir);
    await expect(
      createPgliteDb(join(dir, "pglite"), { minFreeBytes: 64 * MB, freeBytes: async () => MB }),
    ).rejects.toBeInstanceOf(LowDiskSpaceError);
    // Its lock was given back: with room, it opens.
    const db = await createPgliteDb(join(dir, "pglite"), { freeBytes: async () => 500 * MB });
    await db.query("select 1");
    await db.close();
  });
});
