/**
 * `npm start` builds only when dist/ is missing or older than a source (scripts/build.js):
 * the staleness rule on a scratch tree, every way a source can change.
 */
import { mkdir, mkdtemp, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isStale, STAMP } from "../../scripts/build.js";

let root: string;
const past = new Date(Date.now() - 3_600_000);
const built = new Date(Date.now() - 1_800_000);
const later = new Date(Date.now() - 600_000);

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "audit-build-"));
  await mkdir(join(root, "src", "store"), { recursive: true });
  await mkdir(join(root, "gen"), { recursive: true });
  await mkdir(join(root, "dist"));
  for (const file of ["src/main.ts", "src/store/db.ts", "gen/a_pb.ts", "tsconfig.json"]) {
    await writeFile(join(root, file), "");
  }
  await writeFile(join(root, "dist", STAMP), "");
  await age(["src/main.ts", "src/store/db.ts", "src/store", "src", "gen/a_pb.ts", "gen"], past);
  await age(["tsconfig.json"], past);
  await age([`dist/${STAMP}`], built);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function age(paths: string[], time: Date) {
  for (const path of paths) await utimes(join(root, path), time, time);
}

describe("whether dist/ must be built", () => {
  it("is fresh when nothing changed since the build", async () => {
    expect(await isStale(root)).toBe(false);
  });

  it("is stale without a stamp (never built, or a build that did not finish)", async () => {
    await rm(join(root, "dist", STAMP));
    expect(await isStale(root)).toBe(true);
    await rm(join(root, "dist"), { recursive: true });
    expect(await isStale(root)).toBe(true);
  });

  it("is stale when a source deep in src/ or gen/ was edited after the build", async () => {
    await age(["src/store/db.ts"], later);
    expect(await isStale(root)).toBe(true);
    await age(["src/store/db.ts"], past);
    await age(["gen/a_pb.ts"], later);
    expect(await isStale(root)).toBe(true);
  });

  it("is stale when a source was removed or renamed (its directory changed)", async () => {
    await rm(join(root, "src/store/db.ts"));
    expect(await isStale(root)).toBe(true);
    await age(["src/store"], past);
    expect(await isStale(root)).toBe(false);
    await rename(join(root, "src/main.ts"), join(root, "src/entry.ts"));
    expect(await isStale(root)).toBe(true);
  });

  it("is stale when the compiler's configuration changed", async () => {
    await age(["tsconfig.json"], later);
    expect(await isStale(root)).toBe(true);
  });

  it("ignores files that are not sources of the build", async () => {
    await writeFile(join(root, "README.md"), "");
    await mkdir(join(root, "test"));
    await writeFile(join(root, "test", "x.test.ts"), "");
    expect(await isStale(root)).toBe(false);
  });
});
