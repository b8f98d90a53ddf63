/**
 * What the bench scripts read off the machine (/proc) and the scratch databases they
 * make on the local PostgreSQL.
 */
import { readdir, readFile } from "node:fs/promises";
import postgres from "postgres";

/** The PostgreSQL the bench runs against. */
export const BENCH_DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** CPU seconds (user + system) used so far by a process, all its threads included. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which may hold spaces: utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds used so far by every process named `command` (e.g. all of PostgreSQL's). */
export async function commandCpuSeconds(command: string): Promise<number> {
  let total = 0;
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const comm = (await readFile(`/proc/${pid}/comm`, "utf8")).trim();
      if (comm === command) total += await cpuSeconds(Number(pid));
    } catch {
      // The process ended while we read.
    }
  }
  return total;
}

/**
 * CPU seconds used so far by the PostgreSQL backends connected to database `name` (found
 * by their process title, `postgres: <user> <database> ...`): what the bench's own
 * statements cost, whatever other clients of the same server do meanwhile. Only
 * backends alive at both readings count, so read it with the bench's pool connected.
 */
export async function databaseCpuSeconds(name: string): Promise<Map<number, number>> {
  const found = new Map<number, number>();
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const title = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replaceAll("\0", " ");
      // `postgres: [cluster: ]<user> <database> <client> <state>`.
      if (title.startsWith("postgres: ") && title.split(" ").slice(1, 4).includes(name)) {
        found.set(Number(pid), await cpuSeconds(Number(pid)));
      }
    } catch {
      // The process ended while we read.
    }
  }
  return found;
}

/** Drops and creates database `name` on the bench's PostgreSQL; returns its URL. */
export async function recreateDatabase(name: string): Promise<string> {
  const sql = postgres(BENCH_DATABASE_URL, { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists ${name} with (force)`);
  await sql.unsafe(`create database ${name}`);
  await sql.end();
  return databaseUrl(name);
}

/** Drops database `name`. */
export async function dropDatabase(name: string): Promise<void> {
  const sql = postgres(BENCH_DATABASE_URL, { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists ${name} with (force)`);
  await sql.end();
}

/** The URL of database `name` on the bench's PostgreSQL. */
export function databaseUrl(name: string): string {
  const url = new URL(BENCH_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
