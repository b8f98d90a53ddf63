/**
 * Migration 6 turns the stored 16-byte search indexes of existing events into the
 * bigint ids new events get: an event written before the upgrade must be found by the
 * same search after it. Runs on the suite's driver (PostgreSQL with DATABASE_URL,
 * PGlite otherwise).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blindIndexBlock, searchTokenIds, searchTokens } from "../../src/crypto/blind-index.js";
import type { Db } from "../../src/store/db.js";
import { migrate, migrations } from "../../src/store/migrations.js";
import { createIsolatedDb } from "../support/isolated-storage.js";

let db: Db;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
});

afterAll(async () => {
  await cleanup();
});

describe("migration 6: search tokens as bigint ids", () => {
  it("converts the search indexes of events stored before it, so that search still finds them", async () => {
    expect(await migrate(db, migrations.slice(0, 5))).toEqual([1, 2, 3, 4, 5]);

    const indexKey = randomBytes(32);
    const projectId = randomUUID();
    const texts = ["Invoice updated from the billing dashboard", "Jane Cooper", "inv_100042"];
    const tokens = searchTokens(texts);
    const stored = blindIndexBlock(indexKey, "search", tokens);
    const oldIndexes = Array.from({ length: tokens.length }, (_, i) =>
      stored.subarray(i * 16, (i + 1) * 16),
    );
    await db.query(
      "insert into projects (id, name, plan, wrapped_index_key) values ($1, 'p', 'pro', $2)",
      [projectId, randomBytes(60)],
    );
    const eventIds = [randomUUID(), randomUUID()];
    for (const [i, id] of eventIds.entries()) {
      await db.query(
        `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                             payload, actor_idx, entity_type_idx, entity_id_idx, action_idx,
                             search_idx)
         values ($1, 'live', $2, now(), now(), 1, $3, $3, $3, $3, $3, $4::bytea[])`,
        // The second event has no tokens: search must not find it.
        [projectId, id, randomBytes(16), i === 0 ? oldIndexes : []],
      );
    }

    expect(await migrate(db, migrations.slice(0, 6))).toEqual([6]);

    const ids = searchTokenIds(indexKey, tokens);
    // Both signs occur, so the conversion's two's complement is checked too.
    expect(ids.some((id) => id < 0n) && ids.some((id) => id > 0n)).toBe(true);
    const [row] = await db.query<{ tokens: string }>(
      "select search_tokens::text as tokens from events where id = $1",
      [eventIds[0]],
    );
    expect(row?.tokens).toBe(`{${ids.join(",")}}`);

    const search = (words: string[]) =>
      db.query<{ id: string }>(
        "select id from events where project_id = $1 and search_tokens @> $2::int8[]",
        [projectId, searchTokenIds(indexKey, words).map(String)],
      );
    expect(await search(["p:inv", "p:billin", "p:coo"])).toEqual([{ id: eventIds[0] }]);
    expect(await search(["p:inv", "p:nothing"])).toEqual([]);
  });
});
