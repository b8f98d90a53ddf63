/**
 * `audit export` and `audit follow` against the real service, as a SIEM pipeline runs
 * them: an export to a file equals the REST export; a file left incomplete (cut in the
 * middle of a record) is finished by `--resume` with every event once, in NDJSON and CSV;
 * a follower killed and restarted with its cursor file prints each event once.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { bearer, createEvents } from "./events-client.js";
import { exportEvents, ndjson, parseCsv } from "./log-streams-client.js";

const EVENTS = 300;

/** Runs the CLI to its end: exit code, stdout, stderr. */
function audit(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/cli/audit.ts", ...args],
      { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe("audit export and follow", () => {
  let server: TestServer;
  let secret: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    secret = (await server.provision()).secret;
    await createEvents(
      server,
      secret,
      Array.from({ length: EVENTS }, (_, i) =>
        validEvent({ entityId: `cli-${i}`, actorDisplay: i % 4 === 0 ? 'a, "b"\nc' : "plain" }),
      ),
      20,
    );
    dir = mkdtempSync(join(tmpdir(), "audit-cli-"));
    env = { AUDIT_URL: server.url, AUDIT_API_KEY: secret };
  });
  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  it("exports to a file what the REST export streams", async () => {
    const out = join(dir, "all.ndjson");
    const result = await audit(["export", "--out", out], env);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(out, "utf8")).toBe((await exportEvents(server, bearer(secret))).text);
  });

  it("finishes a file cut in the middle of a record with --resume, NDJSON and CSV", async () => {
    for (const format of ["ndjson", "csv"] as const) {
      const out = join(dir, `cut.${format}`);
      const whole = (await exportEvents(server, bearer(secret), { format })).text;
      // A run killed in the middle of a record.
      writeFileSync(out, whole);
      truncateSync(out, Math.floor(whole.length * 0.4));
      const result = await audit(["export", "--out", out, "--format", format, "--resume"], env);
      expect(result.code, result.stderr).toBe(0);
      const text = readFileSync(out, "utf8");
      expect(text).toBe(whole);
      if (format === "csv") expect(parseCsv(text)).toHaveLength(EVENTS + 1);
      else expect(ndjson(text).map((e) => e.logIndex)).toEqual([...Array(EVENTS).keys()]);
    }
  });

  it("refuses bad input with the service's message and exit code 2", async () => {
    const result = await audit(["export", "--from-index", "9", "--to-index", "3"], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("fromIndex must not be greater than toIndex");
    const format = await audit(["export", "--format", "xml"], env);
    expect(format.code).toBe(2);
    // --resume with the other format than the file's: refused, the file untouched.
    for (const [written, asked] of [
      ["ndjson", "csv"],
      ["csv", "ndjson"],
    ] as const) {
      const out = join(dir, `mismatch.${written}`);
      expect((await audit(["export", "--out", out, "--format", written], env)).code).toBe(0);
      const before = readFileSync(out, "utf8");
      const resumed = await audit(["export", "--out", out, "--format", asked, "--resume"], env);
      expect(resumed.code).toBe(2);
      expect(resumed.stderr).toBe(
        `audit: ${out} does not hold a ${asked} export: resume it with the --format it was written in\n`,
      );
      expect(readFileSync(out, "utf8")).toBe(before);
    }
  });

  it("follows from its cursor file across restarts, printing each event once", async () => {
    const cursor = join(dir, "cursor");
    const printed: Record<string, unknown>[] = [];
    const runUntil = async (count: number) => {
      const child: ChildProcess = spawn(
        process.execPath,
        ["--import", "tsx", "src/cli/audit.ts", "follow", "--cursor-file", cursor],
        { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
      );
      let buffer = "";
      await new Promise<void>((resolve) => {
        child.stdout?.on("data", (bytes: Buffer) => {
          buffer += bytes.toString("utf8");
          const lines = buffer.split("\n");
          buffer = lines.pop() ?? "";
          for (const line of lines) printed.push(JSON.parse(line) as Record<string, unknown>);
          if (printed.length >= count) resolve();
        });
      });
      // The cursor is written after each batch: wait for it to cover what was printed.
      const last = Number(printed.at(-1)?.logIndex);
      const saved = () => (existsSync(cursor) ? Number(readFileSync(cursor, "utf8").trim()) : -1);
      while (saved() <= last) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    };
    await runUntil(EVENTS);
    expect(readFileSync(cursor, "utf8")).toBe(`${EVENTS}\n`);
    const added = await createEvents(
      server,
      secret,
      Array.from({ length: 5 }, (_, i) => validEvent({ entityId: `later-${i}` })),
      1,
    );
    await runUntil(EVENTS + 5);
    expect(printed.map((event) => event.logIndex)).toEqual([...Array(EVENTS + 5).keys()]);
    expect(printed.slice(EVENTS).map((event) => event.eventId)).toEqual(added);
  });

  it("ends with exit code 2 when its reader closes the output, retrying nothing", async () => {
    // `audit follow | head -1`: a closed pipe is no cut connection, and reconnecting
    // cannot mend it. The reader here leaves before the first record: deterministic.
    const readerGone = async (args: string[]) => {
      const child = spawn(process.execPath, ["--import", "tsx", "src/cli/audit.ts", ...args], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.destroy();
      let stderr = "";
      child.stderr?.on("data", (bytes: Buffer) => {
        stderr += bytes.toString("utf8");
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      return { code, stderr };
    };
    for (const args of [["follow"], ["export", "--format", "csv"]]) {
      const { code, stderr } = await readerGone(args);
      expect({ args, code }).toEqual({ args, code: 2 });
      expect(stderr).toMatch(/^audit: the output failed: .*EPIPE/m);
      expect(stderr).not.toMatch(/reconnecting|resuming/);
    }
  });
});
