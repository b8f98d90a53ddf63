/**
 * An exclusive lock on the embedded database's directory. PGlite runs inside one process
 * and PostgreSQL's own lock (postmaster.pid) does not hold in it, so nothing stopped a
 * second process from opening the same files: a second start by mistake, on the same
 * port (it failed to listen only after opening and closing the database, which wrote a
 * shutdown record under the running one's feet) or on another port (two services, each
 * acknowledging events the other could not see, one's lost on the next start).
 *
 * The lock is a file that names its owner: pid, start time (/proc/<pid>/stat, Linux),
 * host name and boot id. It is written whole under a temporary name and linked into
 * place, so it never exists half written. A lock is stale, and taken over, when its
 * owner is gone: the machine booted since, or the pid runs no process, or another process
 * (a pid reused since, or this pid's earlier life in a restarted container) started at
 * another time. A lock of another host name (another container on a shared volume) cannot
 * be checked from here and is held: the message says to remove it when nothing runs there.
 *
 * A stale lock is moved aside before it is removed, and put back if what was moved turns
 * out to be another process's fresh lock, so two starts over one stale lock cannot both
 * take it.
 */
import { randomUUID } from "node:crypto";
import { link, open, readFile, rename, rm } from "node:fs/promises";
import { hostname } from "node:os";

/** The directory is another running process's (or, `host` set, maybe another host's). */
export class DataDirInUseError extends Error {
  constructor(
    readonly lockFile: string,
    readonly ownerPid: number,
    readonly ownerHost?: string,
  ) {
    super(
      ownerHost === undefined
        ? `the embedded database is in use by another process (pid ${ownerPid}; lock ${lockFile}): one service process per DATA_DIR`
        : `the embedded database is locked by process ${ownerPid} of host ${ownerHost} (lock ${lockFile}): one service process per DATA_DIR; if nothing of that host uses it any more (a container that was replaced), remove the lock`,
    );
    this.name = "DataDirInUseError";
  }
}

/** Who holds a lock. */
interface LockOwner {
  pid: number;
  /** Clock ticks since boot when the process started (Linux); undefined elsewhere. */
  startTicks?: number;
  host?: string;
  /** The kernel's id of this boot (Linux); undefined elsewhere. */
  bootId?: string;
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

async function bootId(): Promise<string | undefined> {
  const id = await readFile("/proc/sys/kernel/random/boot_id", "utf8").catch(() => "");
  return id.trim() || undefined;
}

/** This process as a lock names it. */
async function thisProcess(): Promise<LockOwner> {
  const me: LockOwner = { pid: process.pid, host: hostname() };
  const ticks = await startTicksOf(process.pid);
  if (ticks !== undefined) me.startTicks = ticks;
  const boot = await bootId();
  if (boot !== undefined) me.bootId = boot;
  return me;
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

/** Whether the process that wrote `owner` may still run (see the module comment). */
async function ownerRuns(owner: LockOwner, me: LockOwner): Promise<boolean> {
  if (owner.bootId !== undefined && me.bootId !== undefined && owner.bootId !== me.bootId) {
    return false;
  }
  if (owner.host !== undefined && owner.host !== me.host) return true;
  // This pid: this very process (a second open), or its earlier life (a restarted
  // container gets its pid again); their start times tell them apart.
  if (owner.pid === me.pid) {
    return owner.startTicks === undefined || owner.startTicks === me.startTicks;
  }
  if (!isRunning(owner.pid)) return false;
  if (owner.startTicks === undefined) return true;
  const ticks = await startTicksOf(owner.pid);
  return ticks === undefined || ticks === owner.startTicks;
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    if (typeof parsed.pid !== "number" || !Number.isSafeInteger(parsed.pid)) return undefined;
    const owner: LockOwner = { pid: parsed.pid };
    if (typeof parsed.startTicks === "number") owner.startTicks = parsed.startTicks;
    if (typeof parsed.host === "string") owner.host = parsed.host;
    if (typeof parsed.bootId === "string") owner.bootId = parsed.bootId;
    return owner;
  } catch {
    return undefined;
  }
}

const readLock = (file: string) => readFile(file, "utf8").catch(() => "");

/** Writes `text` to a new file (mode 0600) and flushes it to disk. */
export async function writeDurably(file: string, text: string): Promise<void> {
  const handle = await open(file, "wx", 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Takes the lock `lockFile` for this process; resolves with its release. Throws
 * DataDirInUseError when a process that may run holds it, and the file system's error
 * when the lock cannot be written.
 */
export async function lockDataDir(lockFile: string): Promise<() => Promise<void>> {
  const me = await thisProcess();
  const mine = JSON.stringify(me);
  const draft = `${lockFile}.${randomUUID()}`;
  await writeDurably(draft, mine);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(draft, lockFile);
        return async () => {
          if ((await readLock(lockFile)) === mine) await rm(lockFile, { force: true });
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const text = await readLock(lockFile);
      // Unreadable or not a lock (damaged: it is only ever linked whole): stale.
      const owner = parseOwner(text);
      if (owner !== undefined && (await ownerRuns(owner, me))) {
        throw new DataDirInUseError(
          lockFile,
          owner.pid,
          owner.host !== undefined && owner.host !== me.host ? owner.host : undefined,
        );
      }
      // Aside, then checked: another start may have replaced the stale lock meanwhile.
      const aside = `${lockFile}.stale-${randomUUID()}`;
      try {
        await rename(lockFile, aside);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw error;
      }
      if ((await readLock(aside)) !== text) {
        await link(aside, lockFile).catch(() => undefined);
      }
      await rm(aside, { force: true });
    }
    throw new DataDirInUseError(lockFile, -1);
  } finally {
    await rm(draft, { force: true });
  }
}
