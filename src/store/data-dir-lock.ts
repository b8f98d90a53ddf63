/**
 * An exclusive lock on the embedded database's directory. PGlite runs inside one process
 * and PostgreSQL's own lock (postmaster.pid) does not hold in it, so nothing stopped a
 * second process from opening the same files: a second start by mistake, on the same
 * port (it failed to listen only after opening and closing the database, which wrote a
 * shutdown record under the running one's feet) or on another port (two services, each
 * acknowledging events the other could not see, one's lost on the next start).
 *
 * The lock is a file created exclusively, holding its owner's pid and, on Linux, the
 * owner's start time (/proc/<pid>/stat), so that a pid reused by another process since
 * is not taken for the owner. A lock whose owner is gone (killed: nothing removed the
 * file) is taken over; one whose owner runs refuses the start.
 *
 * Limit: two processes starting at the same instant over a stale lock could both take
 * it over (each removes it, then creates its own); the second check below narrows that to
 * the time between one's creation and the other's removal.
 */
import { open, readFile, rm } from "node:fs/promises";

/** The directory is another running process's. */
export class DataDirInUseError extends Error {
  constructor(
    readonly lockFile: string,
    readonly ownerPid: number,
  ) {
    super(
      `the embedded database is in use by another process (pid ${ownerPid}; lock ${lockFile}): ` +
        "one service process per DATA_DIR",
    );
    this.name = "DataDirInUseError";
  }
}

interface LockOwner {
  pid: number;
  /** Clock ticks since boot when the process started (Linux); undefined elsewhere. */
  startTicks: number | undefined;
}

/** A process's start time in clock ticks since boot, from /proc; undefined without it. */
async function startTicksOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields after
    // its closing parenthesis start with the 3rd, and the start time is the 22nd.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return Number.isSafeInteger(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether the process that wrote `owner` still runs (and is not this one). */
async function ownerRuns(owner: LockOwner): Promise<boolean> {
  // A restarted container often gets its old pid again: its own old lock is stale.
  if (owner.pid === process.pid || !isRunning(owner.pid)) return false;
  if (owner.startTicks === undefined) return true;
  const ticks = await startTicksOf(owner.pid);
  return ticks === undefined || ticks === owner.startTicks;
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(text) as { pid?: unknown; startTicks?: unknown };
    if (typeof parsed.pid !== "number" || !Number.isSafeInteger(parsed.pid)) return undefined;
    return {
      pid: parsed.pid,
      startTicks: typeof parsed.startTicks === "number" ? parsed.startTicks : undefined,
    };
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock `lockFile` for this process; resolves with its release. Throws
 * DataDirInUseError when a running process holds it, and the file system's error when
 * the file cannot be written.
 */
export async function lockDataDir(lockFile: string): Promise<() => Promise<void>> {
  const me: LockOwner = { pid: process.pid, startTicks: await startTicksOf(process.pid) };
  const mine = JSON.stringify(me);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const file = await open(lockFile, "wx", 0o600);
      try {
        await file.writeFile(mine);
      } finally {
        await file.close();
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = parseOwner(await readFile(lockFile, "utf8").catch(() => ""));
      // Empty, half written or gone: another process is creating or removing it now.
      if (owner === undefined && attempt < 2) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      if (owner !== undefined && (await ownerRuns(owner))) {
        throw new DataDirInUseError(lockFile, owner.pid);
      }
      await rm(lockFile, { force: true });
      continue;
    }
    // Another process that judged the old lock stale at the same time may have removed
    // this one and written its own: then it is that process's.
    const held = parseOwner(await readFile(lockFile, "utf8").catch(() => ""));
    if (held?.pid !== me.pid) throw new DataDirInUseError(lockFile, held?.pid ?? -1);
    return async () => {
      const current = await readFile(lockFile, "utf8").catch(() => "");
      if (current === mine) await rm(lockFile, { force: true });
    };
  }
  throw new DataDirInUseError(lockFile, -1);
}
