/**
 * The container image's HEALTHCHECK (deploy/Dockerfile), run as Docker runs it, against the
 * service on plain HTTP and on TLS of its own (TLS_CERT_FILE): healthy on both, unhealthy
 * when nothing answers. Before, it spoke plain HTTP only, and a service terminating TLS
 * itself was marked unhealthy.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnService } from "../support/service-process.js";
import { makeCertificate } from "../support/tls-certificate.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let command: string[] = [];
let scratch = "";

beforeAll(async () => {
  const dockerfile = await readFile(join(ROOT, "deploy/Dockerfile"), "utf8");
  const instruction = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)?.[1];
  if (!instruction) throw new Error("no HEALTHCHECK ... CMD [...] in deploy/Dockerfile");
  command = JSON.parse(instruction) as string[];
  scratch = await mkdtemp(join(tmpdir(), "audit-healthcheck-"));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** The check's exit status, with the image's environment for the service's port. */
function check(env: Record<string, string>): number | null {
  const [file, ...args] = command;
  expect(file).toBe("node");
  return spawnSync(process.execPath, args, { env: { ...process.env, ...env }, timeout: 10_000 })
    .status;
}

describe("the image's HEALTHCHECK", () => {
  it("is healthy on plain HTTP and on the service's own TLS, unhealthy when nothing answers", async () => {
    const cert = join(scratch, "cert.pem");
    const key = join(scratch, "key.pem");
    await makeCertificate(cert, key);
    const plain = await spawnService();
    const tls = await spawnService({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
    try {
      expect(check({ PORT: String(plain.port) })).toBe(0);
      expect(check({ PORT: String(tls.port), TLS_CERT_FILE: cert })).toBe(0);
      // The plain check against the TLS port, and the TLS one against the plain port, fail.
      expect(check({ PORT: String(tls.port) })).not.toBe(0);
      expect(check({ PORT: String(plain.port), TLS_CERT_FILE: cert })).not.toBe(0);
    } finally {
      await plain.cleanup();
      await tls.cleanup();
    }
    expect(check({ PORT: String(plain.port) })).not.toBe(0);
  }, 120_000);
});
