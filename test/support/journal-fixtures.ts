/**
 * A store with real keys for the journal's tests: projects made by the project store
 * (their logs with them), events sealed as ingestion seals them, the group-commit
 * store to append them, an integrator, and the reader's view of what it derived.
 */
import { randomBytes, randomUUID } from "node:crypto";
import pino from "pino";
import { type EventPayload, filterIndex, sealEvent } from "../../src/crypto/event-cipher.js";
import { createKeyring, type Keyring } from "../../src/crypto/keyring.js";
import { ServiceError } from "../../src/errors.js";
import { encodeHtml } from "../../src/ingest/html-encoding.js";
import { createIntegrator, type IntegratorOptions } from "../../src/log/integrator.js";
import type { Db } from "../../src/store/db.js";
import { createEventReader } from "../../src/store/event-reads.js";
import { createEventStore, type EventStore, type NewEvent } from "../../src/store/events.js";
import { createProjectStore } from "../../src/store/projects.js";

/** What the journal's tests build on one database. */
export interface JournalFixture {
  db: Db;
  keyring: Keyring;
  store: EventStore;
  newProject(): Promise<string>;
  /** An event of `projectId`'s live log, sealed; `actorId` defaults to a random one. */
  newEvent(projectId: string, fields?: Partial<EventPayload>): Promise<NewEvent>;
  integrator(options?: Partial<IntegratorOptions>): ReturnType<typeof createIntegrator>;
  /** The integrated events of a log: (eventId, logIndex), by log index. */
  indexed(projectId: string): Promise<{ eventId: string; logIndex: number }[]>;
  /** Event ids a filter on actorId finds through the reader. */
  findByActor(projectId: string, actorId: string): Promise<string[]>;
}

/** A fixture on `db` (migrated); every instance of a test shares `masterKey`. */
export function journalFixture(db: Db, masterKey: Buffer): JournalFixture {
  const keyring = createKeyring({ db, masterKey });
  const projects = createProjectStore(db, keyring);
  const store = createEventStore(db, {
    quota: { limits: { pro: 1_000_000 }, refuse: () => new ServiceError("quota_exceeded", "") },
  });
  const reader = createEventReader(db);
  return {
    db,
    keyring,
    store,
    async newProject() {
      return (await projects.createProject("journal", "pro")).id;
    },
    async newEvent(projectId, fields = {}) {
      const keys = await keyring.forProject(projectId);
      const eventId = randomUUID();
      const receivedAt = new Date();
      const payload: EventPayload = {
        entityType: "invoice",
        entityId: `inv_${randomBytes(3).toString("hex")}`,
        actorType: "user",
        actorId: `user_${randomBytes(3).toString("hex")}`,
        actionKey: "invoice.updated",
        ...fields,
      };
      return {
        projectId,
        environment: "live",
        eventId,
        occurredAt: receivedAt,
        receivedAt,
        sealed: await sealEvent(keys, { projectId, environment: "live", eventId }, payload, {
          note: "context",
        }),
        idempotency: undefined,
      };
    },
    integrator(options = {}) {
      return createIntegrator({ db, keyring, logger: pino({ level: "silent" }), ...options });
    },
    async indexed(projectId) {
      const rows = await db.query<{ id: string; log_index: string }>(
        `select id, log_index::text as log_index from event_index
          where project_id = $1 and environment = 'live' order by event_index.log_index`,
        [projectId],
      );
      return rows.map((row) => ({ eventId: row.id, logIndex: Number(row.log_index) }));
    },
    async findByActor(projectId, actorId) {
      const keys = await keyring.forProject(projectId);
      const page = await reader.page({
        projectId,
        environment: "live",
        actorIdx: filterIndex(keys, "actorId", actorId),
        limit: 200,
        maxBytes: 1 << 30,
      });
      return page.rows.map((row) => row.eventId);
    },
  };
}

/** `text` as ingestion stores it (HTML-encoded). */
export const stored = encodeHtml;
