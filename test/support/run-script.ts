/**
 * Runs one of the project's TypeScript entry points as its own process, to its end: for
 * tests of how a command or a start ends (exit code, what it printed).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** How a script ended and what it printed. */
export interface ScriptExit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `script` (a path from the project's root, e.g. `src/main.ts`) under tsx with `env`
 * over this process's environment (an undefined value removes a variable), until it
 * exits; killed with SIGKILL after `killAfterMs` when given.
 */
export async function runScript(
  script: string,
  env: NodeJS.ProcessEnv,
  killAfterMs?: number,
): Promise<ScriptExit> {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer =
    killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  // "close", not "exit": the output is read to its end.
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
