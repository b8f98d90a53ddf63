/**
 * Builds dist/ from src/ and gen/ (`tsc -p tsconfig.build.json`). With `--if-stale` it builds
 * only when dist/ is missing or a source is newer than the last build: `npm start` runs it
 * before `node dist/src/main.js`, so that a start with nothing changed (a supervisor restarting
 * a crashed instance, say) does not spend seconds in the compiler.
 *
 * Invariants:
 * - dist/ is replaced whole: the build goes to a sibling directory that is then renamed, so a
 *   start never runs half a build, a failed build keeps the previous one, and a deleted source
 *   leaves no module behind.
 * - The stamp dist/.build-stamp carries the time the build *started*: a source saved while the
 *   compiler runs is newer than the stamp and gets the next start to build again.
 * - Directories count with their own modification time, so adding, removing or renaming a
 *   source file makes dist/ stale even when every remaining file is older than the stamp.
 * - Nothing goes to stdout (the compiler's messages included): the service's stdout carries
 *   only its JSON log lines.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** What the build reads: a change to any of these makes dist/ stale. */
export const BUILD_INPUTS = ["src", "gen", "tsconfig.json", "tsconfig.build.json"];

/** The file whose modification time is the start of the last successful build. */
export const STAMP = ".build-stamp";

/**
 * The latest modification time (ms) of `path` and, for a directory, of everything under it
 * (the directories themselves included); 0 when it does not exist.
 * @param {string} path
 * @returns {Promise<number>}
 */
async function newestModification(path) {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT") return 0;
    throw error;
  }
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of await readdir(path)) {
    newest = Math.max(newest, await newestModification(join(path, entry)));
  }
  return newest;
}

/**
 * Whether `outDir` under `root` is missing or older than one of the build's inputs.
 * @param {string} root the repository's directory
 * @param {string} [outDir]
 * @returns {Promise<boolean>}
 */
export async function isStale(root, outDir = "dist") {
  let built;
  try {
    built = (await stat(join(root, outDir, STAMP))).mtimeMs;
  } catch {
    return true;
  }
  for (const input of BUILD_INPUTS) {
    if ((await newestModification(join(root, input))) > built) return true;
  }
  return false;
}

/**
 * Compiles into a staging directory beside `outDir` and swaps it in. Resolves with the
 * compiler's exit status (0: built).
 * @param {string} root
 * @param {string} [outDir]
 * @returns {Promise<number>}
 */
export async function build(root, outDir = "dist") {
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  } catch {
    process.stderr.write(
      "Cannot build dist/: TypeScript is not installed (an install without dev dependencies?). " +
        "Build where it is (npm ci && npm run build) and ship dist/ with the install.\n",
    );
    return 1;
  }
  const started = new Date();
  const staging = join(root, `${outDir}.building-${process.pid}`);
  await rm(staging, { recursive: true, force: true });
  // The compiler's diagnostics go to stderr: stdout is the service's JSON log stream.
  const result = spawnSync(
    process.execPath,
    [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", staging],
    { cwd: root, stdio: ["ignore", 2, 2] },
  );
  if (result.status !== 0) {
    await rm(staging, { recursive: true, force: true });
    return result.status ?? 1;
  }
  // The OpenAPI document, which GET /openapi.json serves, goes with the code: a deployment
  // that copies dist/ alone (the container image) serves it too.
  const openapi = join(root, "gen", "openapi", "openapi.json");
  if (existsSync(openapi)) {
    await mkdir(join(staging, "gen", "openapi"), { recursive: true });
    await copyFile(openapi, join(staging, "gen", "openapi", "openapi.json"));
  }
  const stamp = join(staging, STAMP);
  await writeFile(stamp, "");
  await utimes(stamp, started, started);
  const target = join(root, outDir);
  const previous = join(root, `${outDir}.previous-${process.pid}`);
  const hadPrevious = existsSync(target);
  if (hadPrevious) await rename(target, previous);
  await rename(staging, target);
  if (hadPrevious) await rm(previous, { recursive: true, force: true });
  return 0;
}

/** `node scripts/build.js [--if-stale]`: exits with the compiler's status. */
async function main() {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const ifStale = process.argv.includes("--if-stale");
  if (ifStale && !(await isStale(root))) return;
  if (ifStale) {
    process.stderr.write(
      "dist/ is missing or older than the sources: building it (npm run build)\n",
    );
  }
  const started = performance.now();
  const status = await build(root);
  if (status !== 0) {
    process.stderr.write(`build failed (tsc exit status ${status}); dist/ is unchanged\n`);
    process.exitCode = status;
    return;
  }
  process.stderr.write(`built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
