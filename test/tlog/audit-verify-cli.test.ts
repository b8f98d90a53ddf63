/**
 * `audit verify` as an auditor runs it: on files (NDJSON events, checkpoints, a proof
 * bundle) and against a service over HTTP. The service here is a stand-in serving a log
 * built in memory through the REST shapes of docs/verifiable-log.md (pages of events, the
 * checkpoint, the key, the two proofs); the real service's endpoints are tested with it
 * in the API tests.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toBase64 } from "../../src/tlog/bytes.js";
import { signCheckpoint } from "../../src/tlog/checkpoint.js";
import { listedEventLeaf } from "../../src/tlog/leaf.js";
import { createMemoryTree, type MemoryTree } from "../../src/tlog/memory-tree.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { parseSignerKey, signerKey, verifierKey } from "../../src/tlog/note.js";

const crypto = createNodeLogCrypto();
const ORIGIN = "audit.test/proj_cli/test";
const API_KEY = "pk_test_cli";
/** A frontend token's shape with a tenant claim (the CLI reads the claim; the fake service compares the text). */
const TENANT_TOKEN = [
  Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url"),
  Buffer.from(JSON.stringify({ sub: "proj_cli", env: "test", tenant: "acme" })).toString(
    "base64url",
  ),
  "signature",
].join(".");
let dir = "";

function listed(i: number): Record<string, unknown> {
  return {
    eventId: `0193a5b2-7c1e-7d3f-8a9b-${i.toString(16).padStart(12, "0")}`,
    receivedAt: new Date(Date.UTC(2026, 10, 25, 9, 0, i)).toISOString(),
    occurredAt: "2026-11-25T09:00:00.000Z",
    actionKey: "invoice.pay",
    entityType: "invoice",
    entityId: `inv_${i}`,
    actorType: "user",
    actorId: "user_1",
    context: { amount: i * 10.5 },
    logIndex: i,
    salt: toBase64(new Uint8Array(32).fill(100 + i)),
  };
}

let events: Record<string, unknown>[] = [];
let tree: MemoryTree;
let vkey = "";
let checkpoint15 = "";
let checkpoint6 = "";

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function ndjson(list: Record<string, unknown>[]): string {
  return list.map((e) => JSON.stringify(e)).join("\n");
}

async function bundle(treeSize: number, from?: number) {
  return JSON.stringify({
    inclusion: await Promise.all(
      events.slice(0, treeSize).map(async (e, i) => ({
        eventId: e.eventId,
        logIndex: i,
        treeSize,
        leaf: toBase64((await listedEventLeaf(crypto, e)).leaf),
        hashes: (await tree.proveRecord(i, treeSize)).map(toBase64),
      })),
    ),
    consistency:
      from === undefined
        ? []
        : [{ from, to: treeSize, hashes: (await tree.proveTree(from, treeSize)).map(toBase64) }],
  });
}

function audit(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/cli/audit.ts", ...args],
      { env: { ...process.env, AUDIT_API_KEY: "", ...env } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "audit-verify-cli-"));
  events = Array.from({ length: 15 }, (_, i) => listed(i));
  tree = createMemoryTree(crypto);
  for (const event of events) await tree.append((await listedEventLeaf(crypto, event)).leaf);
  const signer = await parseSignerKey(
    crypto,
    await signerKey(crypto, ORIGIN, new Uint8Array(32).fill(8)),
  );
  vkey = await verifierKey(crypto, ORIGIN, signer.publicKey);
  checkpoint15 = await signCheckpoint(
    crypto,
    { origin: ORIGIN, size: 15, rootHash: await tree.root(15) },
    signer,
  );
  checkpoint6 = await signCheckpoint(
    crypto,
    { origin: ORIGIN, size: 6, rootHash: await tree.root(6) },
    signer,
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("audit verify on files", () => {
  it("exits 0 and says what it checked for an intact log and an earlier checkpoint", async () => {
    const result = await audit([
      "verify",
      "--key",
      vkey,
      "--checkpoint",
      file("cp15", checkpoint15),
      "--earlier",
      file("cp6", checkpoint6),
      "--events",
      file("all.ndjson", ndjson(events)),
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `ok    checkpoint: signed by ${vkey.split("+").slice(0, 2).join("+")}; log ${ORIGIN}, size 15`,
    );
    expect(result.stdout).toContain(
      "ok    inclusion: the 15 events' leaves, in logIndex order, form a tree",
    );
    expect(result.stdout).toContain("ok    consistency: the first 6 leaves");
    expect(result.stdout).toMatch(/verified: every check held \(15 events read\)\n$/);
  });

  it("exits 1 and names the changed event first, with a proof bundle", async () => {
    const changed = events.map((e, i) => (i === 11 ? { ...e, context: { amount: 1 } } : e));
    const result = await audit([
      "verify",
      "--key-file",
      file("key", `${vkey}\n`),
      "--checkpoint",
      file("cp15", checkpoint15),
      "--events",
      file("changed.ndjson", ndjson(changed)),
      "--bundle",
      file("bundle.json", await bundle(15)),
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `NOT VERIFIED: 1 check(s) failed; first: event ${events[11]?.eventId} (logIndex 11): its content or metadata changed`,
    );
  });

  it("reads saved GET /api/events pages as well as NDJSON", async () => {
    const pages = [
      JSON.stringify({ events: events.slice(0, 8), nextCursor: "c1" }),
      JSON.stringify({ events: events.slice(8), nextCursor: null }),
    ].join("\n");
    const result = await audit([
      "verify",
      "--key",
      vkey,
      "--checkpoint",
      file("cp15-pages", checkpoint15),
      "--events",
      file("pages.json", `\uFEFF${pages}\n`),
    ]);
    expect(result.stdout).toContain("events: 15 read, 15 with a leaf recomputed");
    expect(result.code).toBe(0);
  });

  it("exits 1 and names the missing position when an event was deleted", async () => {
    const result = await audit([
      "verify",
      "--key",
      vkey,
      "--checkpoint",
      file("cp15", checkpoint15),
      "--events",
      file("deleted.ndjson", ndjson(events.filter((_, i) => i !== 0))),
      "--bundle",
      file("bundle.json", await bundle(15)),
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("first: logIndex 0: no event in the input holds this position");
  });

  it("exits 1 for a checkpoint another key signed, and 2 for usage mistakes", async () => {
    const other = await parseSignerKey(
      crypto,
      await signerKey(crypto, ORIGIN, new Uint8Array(32).fill(9)),
    );
    const foreign = await signCheckpoint(
      crypto,
      { origin: ORIGIN, size: 15, rootHash: await tree.root(15) },
      other,
    );
    const refused = await audit([
      "verify",
      "--key",
      vkey,
      "--checkpoint",
      file("foreign", foreign),
      "--events",
      file("all.ndjson", ndjson(events)),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("first: checkpoint: note has no verifiable signatures");

    const noSource = await audit(["verify", "--key", vkey]);
    expect(noSource.code).toBe(2);
    expect(noSource.stderr).toContain("give --api-key (or AUDIT_API_KEY)");
    const unknown = await audit(["verify", "--nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Unknown option '--nope'");
    const missingFile = await audit([
      "verify",
      "--key",
      vkey,
      "--checkpoint",
      join(dir, "none"),
      "--events",
      join(dir, "none"),
    ]);
    expect(missingFile.code).toBe(2);
    expect(missingFile.stderr).toContain("cannot read checkpoint");
    const badKey = await audit([
      "verify",
      "--key",
      "not-a-key",
      "--checkpoint",
      file(
        "cp",
        await signCheckpoint(
          crypto,
          { origin: ORIGIN, size: 15, rootHash: await tree.root(15) },
          other,
        ),
      ),
      "--events",
      file("all.ndjson", ndjson(events)),
    ]);
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toContain("--key: not a verifier key");
  });
});

describe("audit verify against a service", () => {
  let server: Server;
  let url = "";
  const served = { checkpoint: "" };

  beforeAll(async () => {
    served.checkpoint = checkpoint15;
    server = createServer((req, res) => {
      const reply = (status: number, body: unknown, type = "application/json") => {
        res.writeHead(status, { "content-type": type });
        res.end(typeof body === "string" ? body : JSON.stringify(body));
      };
      const tenantToken = req.headers.authorization === `Bearer ${TENANT_TOKEN}`;
      if (req.headers.authorization !== `Bearer ${API_KEY}` && !tenantToken)
        return reply(401, { error: "Invalid API key" });
      const target = new URL(req.url ?? "/", "http://x");
      const q = (name: string) => target.searchParams.get(name) ?? "";
      void (async () => {
        switch (target.pathname) {
          case "/api/events/export": {
            // NDJSON in log order, written in several chunks (a line cut between two);
            // one event newer than the checkpoint. A tenant's token: every third event.
            const text = [...events, listed(15)]
              .filter((_, i) => !tenantToken || i % 3 === 0)
              .map((e) => `${JSON.stringify(e)}\n`)
              .join("");
            res.writeHead(200, { "content-type": "application/x-ndjson; charset=utf-8" });
            for (let at = 0; at < text.length; at += 700) res.write(text.slice(at, at + 700));
            res.end();
            return;
          }
          case "/api/log/checkpoint":
            return reply(200, served.checkpoint, "text/plain");
          case "/api/log/key":
            return reply(200, `${vkey}\n`, "text/plain");
          case "/api/log/proof/inclusion": {
            const i = events.findIndex((e) => e.eventId === q("eventId"));
            if (i < 0) return reply(404, { error: "Event not found" });
            const treeSize = Number(q("treeSize"));
            return reply(200, {
              logIndex: i,
              treeSize,
              leaf: toBase64((await listedEventLeaf(crypto, events[i] ?? {})).leaf),
              hashes: (await tree.proveRecord(i, treeSize)).map(toBase64),
            });
          }
          case "/api/log/proof/consistency": {
            const from = Number(q("from"));
            const to = Number(q("to"));
            return reply(200, { from, to, hashes: (await tree.proveTree(from, to)).map(toBase64) });
          }
          default:
            return reply(404, { error: "Not found" });
        }
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("reads the whole export, skips events newer than the checkpoint, and saves the checkpoint", async () => {
    const saved = join(dir, "saved-checkpoint");
    const result = await audit(
      ["verify", "--url", url, "--key", vkey, "--save-checkpoint", saved],
      {
        AUDIT_API_KEY: API_KEY,
      },
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      "events: 16 read, 15 with a leaf recomputed from their content and salt, 1 newer than the checkpoint skipped",
    );
    expect(readFileSync(saved, "utf8")).toBe(checkpoint15);
  });

  it("checks each event's proof and the consistency proof with --partial and --earlier", async () => {
    const result = await audit([
      "verify",
      "--url",
      url,
      "--api-key",
      API_KEY,
      "--key",
      vkey,
      "--partial",
      "--earlier",
      file("cp6", checkpoint6),
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      "ok    inclusion: 15 of 15 events proven in the checkpoint's tree by their inclusion proofs",
    );
    expect(result.stdout).toMatch(
      /ok {4}consistency: proof of \d+ hashes shows the tree of size 6 is a prefix of the tree of size 15/,
    );
  });

  it("checks a tenant's token's events by their proofs, not as the whole log", async () => {
    const result = await audit(["verify", "--url", url, "--api-key", TENANT_TOKEN, "--key", vkey]);
    expect(result.stderr).toContain(
      `the token reads tenant "acme"'s events only: checking them as --partial`,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("ok    inclusion: 5 of 5 events proven");
    expect(result.stdout).not.toContain("deleted");
  });

  it("warns when the key is taken from the service, and fails on a credential it refuses", async () => {
    const unpinned = await audit(["verify", "--url", url, "--api-key", API_KEY]);
    expect(unpinned.code).toBe(0);
    expect(unpinned.stderr).toContain(
      "warning: the verifier key was taken from the service itself",
    );
    const refused = await audit([
      "verify",
      "--url",
      url,
      "--api-key",
      "pk_test_wrong",
      "--key",
      vkey,
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe("audit: GET /api/log/checkpoint: 401 Invalid API key\n");
    const down = await audit([
      "verify",
      "--url",
      "http://127.0.0.1:9",
      "--api-key",
      API_KEY,
      "--key",
      vkey,
    ]);
    expect(down.code).toBe(2);
    expect(down.stderr).toContain("cannot reach http://127.0.0.1:9");
  });
});
