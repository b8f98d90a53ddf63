/**
 * Proof that erased content is gone from storage, not only from the API. Events carrying
 * a unique marker (in their fields, context and changes) are erased by actor; then the
 * database's files are searched, after the clean-up an erasure runs (ERASURE_RECLAIM=full:
 * the tables rewritten; on PGlite also the write-ahead log switched and checkpointed), for
 * every value that held or was derived from them: the payload and context ciphertext, the
 * actor and tenant blind indexes, the search tokens only they had, the salts, and the
 * marker's plaintext. The same search before the erasure finds them (the search works).
 * PGlite: every file of its data directory. PostgreSQL: every relation file of the test
 * database (its WAL is the server's, shared, and outside the service's reach).
 */
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { bearer, createEvents, listedEvents } from "../events/events-client.js";
import {
  startTestServer,
  type TestServer,
  usingPostgres,
  validEvent,
} from "../support/test-server.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ ERASURE_RECLAIM: "full" });
});

afterAll(async () => {
  await server?.close();
});

/** Files to search: PGlite's whole data directory, or PostgreSQL's relation files. */
async function storedFiles(): Promise<{ name: string; bytes: Buffer }[]> {
  const db = server.app.db;
  await db.query("checkpoint");
  if (server.driver === "pglite") {
    const files: { name: string; bytes: Buffer }[] = [];
    const walk = async (dir: string) => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await walk(path);
        else if (entry.isFile()) files.push({ name: path, bytes: await readFile(path) });
      }
    };
    await walk(server.env.DATA_DIR ?? "");
    return files;
  }
  const relations = await db.query<{ path: string; relname: string }>(
    `select pg_relation_filepath(c.oid) as path, c.relname from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('public', 'pg_toast') and c.relkind in ('r', 'i', 't')
        and pg_relation_filepath(c.oid) is not null`,
  );
  const files: { name: string; bytes: Buffer }[] = [];
  for (const { path, relname } of relations) {
    // A relation's main fork and its 1 GB segments (none here is that large).
    const [row] = await db.query<{ bytes: Buffer | null }>(
      "select pg_read_binary_file($1, 0, (pg_stat_file($1, true)).size, true) as bytes",
      [path],
    );
    if (row?.bytes) files.push({ name: `${relname} (${path})`, bytes: Buffer.from(row.bytes) });
  }
  return files;
}

function found(files: { name: string; bytes: Buffer }[], needles: Map<string, Buffer>) {
  const hits: string[] = [];
  for (const [what, needle] of needles) {
    for (const file of files) if (file.bytes.includes(needle)) hits.push(`${what} in ${file.name}`);
  }
  return hits;
}

/**
 * Writes two events of a marked subject and one of someone else, and reads every stored
 * value of the subject's events (checking that the search finds them before the erasure).
 */
async function markedSubject() {
  const { projectId, secret } = await server.provision();
  const marker = `zqx${randomBytes(6).toString("hex")}`;
  const subject = `subject-${marker}`;
  await createEvents(
    server,
    secret,
    [
      validEvent({
        actorId: subject,
        actorDisplay: `Name ${marker}`,
        tenantId: `tenant-${marker}`,
        context: { note: `context ${marker}` },
        changes: [{ op: "set", path: "email", before: `old-${marker}`, after: `new-${marker}` }],
      }),
      validEvent({ actorId: "someone-else", entityId: "other" }),
      validEvent({ actorId: subject, tenantId: `tenant-${marker}`, entityId: `doc-${marker}` }),
    ],
    1,
  );
  const listed = await listedEvents(server, bearer(secret), { actorId: subject });
  expect(listed).toHaveLength(2);
  const erasedIds = listed.map((e) => e.eventId);

  // Every stored value of the subject's events, read before the erasure.
  const db = server.app.db;
  const needles = new Map<string, Buffer>([["marker", Buffer.from(marker)]]);
  const journal = await db.query<{ id: string; payload: Buffer }>(
    "select id, payload from events where project_id = $1 and id = any($2::uuid[])",
    [projectId, erasedIds],
  );
  for (const row of journal) needles.set(`payload of ${row.id}`, Buffer.from(row.payload));
  const contexts = await db.query<{ ciphertext: Buffer }>(
    "select ciphertext from event_contexts where project_id = $1 and event_id = any($2::uuid[])",
    [projectId, erasedIds],
  );
  expect(contexts).toHaveLength(1);
  needles.set("context", Buffer.from(contexts[0]?.ciphertext ?? []));
  const index = await db.query<{
    actor_idx: Buffer;
    tenant_idx: Buffer;
    tokens: string[];
  }>(
    `select actor_idx, tenant_idx, to_json(search_tokens::text[]) as tokens from event_index
      where project_id = $1 and id = any($2::uuid[])`,
    [projectId, erasedIds],
  );
  needles.set("actor blind index", Buffer.from(index[0]?.actor_idx ?? []));
  needles.set("tenant blind index", Buffer.from(index[0]?.tenant_idx ?? []));
  const [others] = await db.query<{ tokens: string[] }>(
    `select to_json(coalesce(array_agg(distinct t)::text[], array[]::text[])) as tokens
       from event_index, unnest(search_tokens) as t
      where project_id = $1 and not (id = any($2::uuid[]))`,
    [projectId, erasedIds],
  );
  const shared = new Set(others?.tokens ?? []);
  const own = [...new Set(index.flatMap((row) => row.tokens))].filter((t) => !shared.has(t));
  expect(own.length).toBeGreaterThan(3);
  for (const token of own) {
    const bytes = Buffer.alloc(8);
    bytes.writeBigInt64LE(BigInt(token));
    needles.set(`search token ${token}`, bytes);
  }
  for (const event of listed) {
    needles.set(`salt of ${event.eventId}`, Buffer.from(event.salt, "base64"));
  }

  // The search finds what is stored (ciphertext and indexes; not the salt, which only
  // ever exists inside the ciphertext, nor the plaintext marker).
  const before = found(await storedFiles(), needles);
  for (const what of [
    "context",
    "actor blind index",
    "tenant blind index",
    ...journal.map((r) => `payload of ${r.id}`),
  ]) {
    expect(before.some((hit) => hit.startsWith(`${what} in`))).toBe(true);
  }
  expect(before.some((hit) => hit.startsWith("search token"))).toBe(true);

  return { projectId, secret, subject, needles };
}

describe("an erased event leaves nothing in storage", () => {
  it("holds no ciphertext, blind index, search token, salt or plaintext of it", async () => {
    const { projectId, secret, subject, needles } = await markedSubject();
    const result = await server.admin.eraseEvents({
      projectId,
      environment: Environment.TEST,
      actorId: subject,
    });
    expect([result.matched, result.erased]).toEqual([2n, 2n]);

    expect(found(await storedFiles(), needles)).toEqual([]);
    // The other event is intact and readable.
    expect((await listedEvents(server, bearer(secret))).map((e) => e.actorId)).toEqual([
      "someone-else",
    ]);
  });

  // VACUUM keeps the rows a snapshot older than their deletion can still see: the clean-up
  // waits for such snapshots (a report, an export, an autovacuum ANALYZE) to end first.
  it.skipIf(!usingPostgres)(
    "waits for a snapshot taken before the erasure, then leaves nothing either",
    async () => {
      const { projectId, subject, needles } = await markedSubject();
      const reader = postgres(server.env.DATABASE_URL ?? "", { max: 1, onnotice: () => {} });
      try {
        // The reader's snapshot, taken on a table erasure does not lock: nothing makes
        // VACUUM wait for it but the snapshot itself.
        const { erasure } = await reader.begin("isolation level repeatable read", async (sql) => {
          await sql`select count(*) from projects`;
          const erasure = server.admin.eraseEvents({
            projectId,
            environment: Environment.TEST,
            actorId: subject,
          });
          // The erasure deletes, then waits for this older snapshot before its clean-up.
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          return { erasure };
        });
        const erased = await erasure;
        expect([erased.matched, erased.erased]).toEqual([2n, 2n]);
      } finally {
        await reader.end();
      }
      expect(found(await storedFiles(), needles)).toEqual([]);
    },
  );
});
