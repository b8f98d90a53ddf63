/**
 * Migration 7 (the journal) on a database written by version 6, the schema before it:
 * every event stays readable, filterable and searchable, gets its log index in
 * receivedAt order (ties by id), has a salt (derived, the same at every read), and the
 * events appended after the upgrade continue each log's sequence. Runs on the suite's
 * driver (PostgreSQL with DATABASE_URL, PGlite otherwise).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seal } from "../../src/crypto/aead.js";
import { queryToken } from "../../src/crypto/blind-index.js";
import {
  type EventPayload,
  filterIndex,
  indexesOf,
  openEvent,
  searchTokenId,
} from "../../src/crypto/event-cipher.js";
import { createKeyring } from "../../src/crypto/keyring.js";
import { indexedValuesOf } from "../../src/log/derive.js";
import type { Db } from "../../src/store/db.js";
import { createEventReader } from "../../src/store/event-reads.js";
import { migrate, migrations } from "../../src/store/migrations.js";
import { createProjectStore } from "../../src/store/projects.js";
import { createIsolatedDb } from "../support/isolated-storage.js";
import { journalFixture } from "../support/journal-fixtures.js";

let db: Db;
let cleanup: () => Promise<void>;
const masterKey = randomBytes(32);

beforeAll(async () => {
  ({ db, cleanup } = await createIsolatedDb());
});

afterAll(async () => {
  await cleanup();
});

/** Writes an event as version 6 stored it: no salt, its indexes on its row. */
async function writeVersion6Event(
  projectId: string,
  environment: string,
  receivedAt: Date,
  payload: EventPayload,
): Promise<string> {
  const keyring = createKeyring({ db, masterKey });
  const keys = await keyring.forProject(projectId);
  const id = randomUUID();
  const aad = (column: string) => `event:${projectId}:${environment}:${id}:${column}`;
  const dataKey = await keys.dataKey(1);
  const indexes = indexesOf(keys, indexedValuesOf(payload));
  await db.query(
    `insert into events (project_id, environment, id, occurred_at, received_at, key_version,
                         payload, actor_idx, entity_type_idx, entity_id_idx, action_idx,
                         tenant_idx, legacy_action_idx, search_tokens)
     values ($1, $2, $3, $4, $4, 1, $5, $6, $7, $8, $9, $10, $11, $12::int8[])`,
    [
      projectId,
      environment,
      id,
      receivedAt,
      seal(dataKey, Buffer.from(JSON.stringify(payload)), aad("payload")),
      indexes.actorIdx,
      indexes.entityTypeIdx,
      indexes.entityIdIdx,
      indexes.actionIdx,
      indexes.tenantIdx ?? null,
      indexes.legacyActionIdx ?? null,
      indexes.searchTokenText.split(","),
    ],
  );
  await db.query(
    `insert into event_contexts (project_id, environment, event_id, key_version, ciphertext)
     values ($1, $2, $3, 1, $4)`,
    [
      projectId,
      environment,
      id,
      seal(dataKey, Buffer.from('{"ip":"203.0.113.9"}'), aad("context")),
    ],
  );
  return id;
}

const payloadOf = (actorId: string, description: string): EventPayload => ({
  actionKey: "invoice.updated",
  action: "update",
  actionDescription: description,
  entityType: "invoice",
  entityId: "inv_1",
  actorType: "user",
  actorId,
});

describe("migration 7: the journal", () => {
  it("numbers existing events in receivedAt order and keeps them readable, filterable and searchable", async () => {
    expect(await migrate(db, migrations.slice(0, 6))).toEqual([1, 2, 3, 4, 5, 6]);
    const keyring = createKeyring({ db, masterKey });
    const projects = createProjectStore(db, keyring);
    const projectId = (await projects.createProject("before the journal", "pro")).id;
    const other = (await projects.createProject("another", "pro")).id;

    // Written out of receivedAt order, in two environments and two projects.
    const at = (second: number) => new Date(Date.UTC(2026, 10, 1, 12, 0, second));
    const third = await writeVersion6Event(projectId, "live", at(3), payloadOf("ann", "third"));
    const first = await writeVersion6Event(projectId, "live", at(1), payloadOf("bob", "first"));
    const second = await writeVersion6Event(projectId, "live", at(2), payloadOf("ann", "second"));
    const test = await writeVersion6Event(projectId, "test", at(0), payloadOf("ann", "test"));
    const elsewhere = await writeVersion6Event(other, "live", at(5), payloadOf("ann", "other"));

    expect(await migrate(db, migrations.slice(0, 7))).toEqual([7]);

    const indexed = await db.query<{
      id: string;
      project_id: string;
      environment: string;
      n: string;
    }>(
      `select id, project_id, environment, log_index::text as n from event_index
        order by project_id, environment, event_index.log_index`,
    );
    const positions = new Map(indexed.map((row) => [row.id, Number(row.n)]));
    expect([first, second, third].map((id) => positions.get(id))).toEqual([0, 1, 2]);
    expect(positions.get(test)).toBe(0);
    expect(positions.get(elsewhere)).toBe(0);
    const sizes = await db.query<{ project_id: string; environment: string; size: string }>(
      "select project_id, environment, size::text as size from event_logs where size > 0",
    );
    expect(sizes).toHaveLength(3);

    // Filters and search find what they found before.
    // Read with today's reader, so on today's schema: every later migration (12 moves the
    // rows into partitioned tables) keeps them readable, filterable and searchable too.
    expect(await migrate(db)).toEqual(migrations.slice(7).map((m) => m.version));
    const reader = createEventReader(db);
    const keys = await keyring.forProject(projectId);
    const page = await reader.page({
      projectId,
      environment: "live",
      actorIdx: filterIndex(keys, "actorId", "ann"),
      searchTokens: [searchTokenId(keys, queryToken("seco"))],
      limit: 50,
      maxBytes: 1 << 20,
    });
    expect(page.rows.map((row) => [row.eventId, row.logIndex])).toEqual([[second, 1n]]);
    const action = await reader.page({
      projectId,
      environment: "live",
      actionIdx: filterIndex(keys, "action", "update"),
      limit: 50,
      maxBytes: 1 << 20,
    });
    expect(action.rows.map((row) => row.eventId)).toEqual([third, second, first]);

    // The events still open, with a salt that is the same at every read.
    const [row] = page.rows;
    if (!row) throw new Error("no row");
    const address = { projectId, environment: "live", eventId: row.eventId };
    const opened = await openEvent(keys, address, row.keyVersion, row.payload, row.context);
    expect(opened.payload.actionDescription).toBe("second");
    expect(opened.context).toEqual({ ip: "203.0.113.9" });
    expect(opened.salt).toHaveLength(32);
    const again = await openEvent(keys, address, row.keyVersion, row.payload, row.context);
    expect(again.salt).toEqual(opened.salt);

    // New events continue the log after the migrated ones (with every later migration).
    const fixture = journalFixture(db, masterKey);
    const next = await fixture.store.createEvent(await fixture.newEvent(projectId));
    const integrator = fixture.integrator();
    // A transaction elsewhere in the cluster may hold the horizon back for a moment.
    while ((await integrator.runPass()).integrated === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await fixture.indexed(projectId)).at(-1)).toEqual({
      eventId: next.eventId,
      logIndex: 3,
    });
  });
});
