/**
 * Builds test/tlog/go-checker (Go's sumdb/tlog and sumdb/note, from Debian's
 * golang-golang-x-mod-dev, without modules) into a temporary directory. Fails, naming the
 * packages to install, when go or the package is missing: the cross-check never skips.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const GOPATH = "/usr/share/gocode";
const SOURCE = join(dirname(fileURLToPath(import.meta.url)), "go-checker", "main.go");
const INSTALL =
  "run: apt-get update && apt-get install -y golang-go golang-golang-x-mod-dev (as .ci/run does)";

/** A built checker: its path, and remove() when done. */
export interface GoChecker {
  path: string;
  remove(): void;
}

/** Builds the checker (a second or less with the build cache warm). */
export async function buildGoChecker(): Promise<GoChecker> {
  let go = "";
  try {
    go = execFileSync("sh", ["-c", "command -v go"], { encoding: "utf8" }).trim();
  } catch {
    // Reported below.
  }
  if (go === "") throw new Error(`the Go cross-check needs the go command: ${INSTALL}`);
  if (!existsSync(join(GOPATH, "src/golang.org/x/mod/sumdb/tlog/tlog.go"))) {
    throw new Error(`the Go cross-check needs golang.org/x/mod in ${GOPATH}: ${INSTALL}`);
  }
  // The build cache is kept between runs.
  const cache = join(tmpdir(), "audit-tlog-go-cache");
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), "audit-tlog-go-checker-"));
  const path = join(dir, "go-checker");
  execFileSync(go, ["build", "-o", path, SOURCE], {
    env: { ...process.env, GO111MODULE: "off", GOPATH, GOFLAGS: "", GOCACHE: cache },
    stdio: ["ignore", "inherit", "inherit"],
  });
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
