/**
 * The embedded database directory's lock (src/store/data-dir-lock.ts): one process at a
 * time. Held: a running process's lock, this very process's (a second open), another host's
 * (a container on a shared volume). Taken over: a lock left by a process that is gone, by
 * this pid's earlier life (a restarted container), by a pid reused since, from before the
 * machine booted, or damaged (empty, not JSON).
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataDirInUseError, lockDataDir } from "../../src/store/data-dir-lock.js";

let dir: string;
let n = 0;
const lockFile = () => join(dir, `db-${n++}.lock`);
const linux = process.platform === "linux";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "audit-lock-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A pid that runs no process now: past every pid in use (pid_max is at most 2^22). */
const GONE = 4_194_305;

const owner = async (file: string) =>
  JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("the data directory lock", () => {
  it("is taken whole, refused to a second open in this process, and released", async () => {
    const file = lockFile();
    const release = await lockDataDir(file);
    const written = await owner(file);
    expect(written).toMatchObject({ pid: process.pid, host: hostname() });
    if (linux) expect(written.startTicks).toEqual(expect.any(Number));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const again = await refusal(lockDataDir(file));
    expect(again).toBeInstanceOf(DataDirInUseError);
    expect(await owner(file)).toEqual(written);
    await release();
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });
    // No draft or moved-aside file is left behind.
    expect((await readdir(dir)).filter((name) => name.startsWith("db-0"))).toEqual([]);
  });

  it("refuses a lock held by a running process, naming it", async () => {
    const file = lockFile();
    // The parent (the test runner) runs: as another service process would.
    await writeFile(file, JSON.stringify({ pid: process.ppid, host: hostname() }));
    const refused = await refusal(lockDataDir(file));
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as DataDirInUseError).ownerPid).toBe(process.ppid);
    expect((refused as Error).message).toContain(`in use by another process (pid ${process.ppid}`);
    expect(await owner(file)).toEqual({ pid: process.ppid, host: hostname() });
  });

  it("refuses another host's lock (a container on the same volume), saying how to clear it", async () => {
    const file = lockFile();
    await writeFile(file, JSON.stringify({ pid: 1, host: "other-container" }));
    const refused = await refusal(lockDataDir(file));
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as Error).message).toContain("of host other-container");
    expect((refused as Error).message).toContain("remove the lock");
  });

  it("takes over a lock whose process is gone, an earlier life of this pid, a reused pid, one from before the boot, and a damaged one", async () => {
    const stale: string[] = [
      JSON.stringify({ pid: GONE, startTicks: 1, host: hostname() }),
      JSON.stringify({ pid: GONE }),
      "",
      "{not json",
    ];
    if (linux) {
      stale.push(
        // This pid, started at another time: a restarted container's earlier process.
        JSON.stringify({ pid: process.pid, startTicks: 1, host: hostname() }),
        // The parent's pid with another start time: a process that took the pid since.
        JSON.stringify({ pid: process.ppid, startTicks: 1, host: hostname() }),
        // Another host's lock from before the machine booted: nothing of it runs.
        JSON.stringify({ pid: 1, host: "other", bootId: "00000000-0000-0000-0000-000000000000" }),
      );
    }
    for (const text of stale) {
      const file = lockFile();
      await writeFile(file, text);
      const release = await lockDataDir(file);
      expect((await owner(file)).pid, text).toBe(process.pid);
      await release();
    }
  });

  it("release leaves a lock another process took since in place", async () => {
    const file = lockFile();
    const release = await lockDataDir(file);
    await writeFile(file, JSON.stringify({ pid: process.ppid }));
    await release();
    expect(await owner(file)).toEqual({ pid: process.ppid });
  });
});
