/**
 * The embedded database directory's lock (src/store/data-dir-lock.ts): one process at a
 * time; a lock left by a process that is gone, by this process's own pid (a restarted
 * container) or by a pid now reused by another process is taken over.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataDirInUseError, lockDataDir } from "../../src/store/data-dir-lock.js";

let dir: string;
let n = 0;
const lockFile = () => join(dir, `db-${n++}.lock`);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "audit-lock-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A pid that runs no process now: past every pid in use (pid_max is at most 2^22). */
const GONE = 4_194_305;

describe("the data directory lock", () => {
  it("is taken, refused to another holder, and released", async () => {
    const file = lockFile();
    const release = await lockDataDir(file);
    const written = JSON.parse(await readFile(file, "utf8")) as { pid: number };
    expect(written.pid).toBe(process.pid);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await release();
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses a lock held by a running process, naming it", async () => {
    const file = lockFile();
    // The parent (the test runner) runs: as another service process would.
    await writeFile(file, JSON.stringify({ pid: process.ppid }));
    const refused = await lockDataDir(file).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as DataDirInUseError).ownerPid).toBe(process.ppid);
    expect((refused as Error).message).toContain(`in use by another process (pid ${process.ppid}`);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ pid: process.ppid });
  });

  it("takes over a lock whose process is gone, or is this one's pid, or was reused since", async () => {
    for (const stale of [
      { pid: GONE, startTicks: 1 },
      { pid: process.pid, startTicks: 1 },
      // The parent's pid with another start time: a process that took the pid since.
      ...(process.platform === "linux" ? [{ pid: process.ppid, startTicks: 1 }] : []),
    ]) {
      const file = lockFile();
      await writeFile(file, JSON.stringify(stale));
      const release = await lockDataDir(file);
      expect(JSON.parse(await readFile(file, "utf8")).pid).toBe(process.pid);
      await release();
    }
  });

  it("release leaves a lock another process took since in place", async () => {
    const file = lockFile();
    const release = await lockDataDir(file);
    await writeFile(file, JSON.stringify({ pid: process.ppid }));
    await release();
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ pid: process.ppid });
  });
});
