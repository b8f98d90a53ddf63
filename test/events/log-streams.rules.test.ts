/**
 * The export and follow services on a real store (the suite's driver), called directly:
 * pages are read only as the consumer asks for them (backpressure: one read ahead for an
 * export, none for a follow stream), a consumer that stops or aborts stops the reads, a
 * follow stream hands over the backlog then new events exactly once and in order, is
 * woken by the waker (not only by its poll), sends heartbeats when idle, and ends with
 * the credential's error once it stops being valid.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Authenticator, ReaderPrincipal } from "../../src/auth/authenticator.js";
import { ServiceError } from "../../src/errors.js";
import { createExportService, type EventChunk } from "../../src/events/export-service.js";
import { createFollowService } from "../../src/events/follow-service.js";
import { createLogWaker } from "../../src/events/log-wake.js";
import type { Db } from "../../src/store/db.js";
import { createLogReader, type LogReader } from "../../src/store/log-reads.js";
import { migrate } from "../../src/store/migrations.js";
import { createPostgresDb } from "../../src/store/postgres-driver.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { type JournalFixture, journalFixture } from "../support/journal-fixtures.js";

const BACKLOG = 2_500;
const masterKey = randomBytes(32);
let storage: IsolatedStorage;
let db: Db;
let fixture: JournalFixture;
let projectId: string;

/** Appends `count` events to the project's live log and integrates them. */
async function append(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, count - start) }, () => fixture.newEvent(projectId)),
    );
    await Promise.all(batch.map((event) => fixture.store.createEvent(event)));
    ids.push(...batch.map((event) => event.eventId));
  }
  const integrator = fixture.integrator({ maxEventsPerPass: 5_000 });
  while ((await pending()) > 0) {
    const result = await integrator.runPass();
    if (result.integrated === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return ids;
}

/** Journal rows of the project not yet integrated. */
async function pending(): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `select (select count(*) from events where project_id = $1)::int
          - (select count(*) from event_index where project_id = $1)::int as n`,
    [projectId],
  );
  return row?.n ?? 0;
}

/** A reader that counts its page reads. */
function countingReader(reader: LogReader): LogReader & { pages: number } {
  const counting = {
    pages: 0,
    size: reader.size,
    page: (query: Parameters<LogReader["page"]>[0]) => {
      counting.pages++;
      return reader.page(query);
    },
  };
  return counting;
}

/** An authenticator that lets the reader in until `revoke()` is called. */
function switchableAuth() {
  let valid = true;
  const principal: ReaderPrincipal = {
    kind: "token",
    projectId: "",
    environment: "live",
    tenantId: undefined,
  };
  const authenticator: Authenticator = {
    requireApiKey: () => Promise.reject(new Error("not used")),
    requireReader: async () => {
      if (!valid) throw new ServiceError("unauthenticated", "Token expired");
      return { ...principal, projectId };
    },
    invalidate: () => {},
  };
  return { authenticator, revoke: () => (valid = false) };
}

/** The events of an iterator result (none when the stream ended). */
const eventsOf = (result: IteratorResult<EventChunk, unknown>) =>
  result.done ? [] : result.value.events;

const credential = { kind: "token", value: "token" } as const;
const noWait = { awaitIntegrated: async () => {} };

beforeAll(async () => {
  storage = await createIsolatedStorage();
  db =
    storage.kind === "postgres"
      ? createPostgresDb({ url: storage.env.DATABASE_URL ?? "" })
      : await (await import("../../src/store/pglite-driver.js")).createPgliteDb(
          storage.env.DATA_DIR ?? "",
        );
  await migrate(db);
  fixture = journalFixture(db, masterKey);
  projectId = await fixture.newProject();
  await append(BACKLOG);
});

afterAll(async () => {
  await db?.close();
  await storage?.cleanup();
});

describe("export service", () => {
  it("reads a page only when the consumer asks, one ahead at most", async () => {
    const reader = countingReader(createLogReader(db));
    const { authenticator } = switchableAuth();
    const service = createExportService({
      authenticator,
      keyring: fixture.keyring,
      reader,
      readYourWrites: noWait,
    });
    const opened = await service.open({ credential, params: () => ({}) });
    expect(opened.endIndex).toBe(BigInt(BACKLOG));
    const chunks = opened.chunks();
    const first = await chunks.next();
    expect(eventsOf(first)).toHaveLength(1_000);
    // The consumer does not ask for more: nothing more is read, however long it waits.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reader.pages).toBe(2);
    const rest: EventChunk[] = [];
    for await (const chunk of chunks) rest.push(chunk);
    const indexes = [eventsOf(first), ...rest.map((chunk) => chunk.events)].flatMap((events) =>
      events.map((event) => Number(event.logIndex)),
    );
    expect(indexes).toEqual(Array.from({ length: BACKLOG }, (_, i) => i));
    expect(reader.pages).toBe(3);
  });

  it("stops reading when its signal aborts", async () => {
    const reader = countingReader(createLogReader(db));
    const service = createExportService({
      authenticator: switchableAuth().authenticator,
      keyring: fixture.keyring,
      reader,
      readYourWrites: noWait,
    });
    const abort = new AbortController();
    const chunks = (await service.open({ credential, params: () => ({}) })).chunks(abort.signal);
    await chunks.next();
    abort.abort();
    expect((await chunks.next()).done).toBe(true);
    expect(reader.pages).toBeLessThanOrEqual(2);
  });
});

describe("follow service", () => {
  const follow = (options: {
    reader?: LogReader;
    authenticator?: Authenticator;
    heartbeatMs?: number;
    authCheckMs?: number;
    stopping?: AbortSignal;
  }) => {
    const waker = createLogWaker();
    const service = createFollowService({
      authenticator: options.authenticator ?? switchableAuth().authenticator,
      keyring: fixture.keyring,
      reader: options.reader ?? createLogReader(db),
      readYourWrites: noWait,
      wake: waker,
      // Only a wake-up (or a heartbeat) makes it look again.
      pollMs: 600_000,
      heartbeatMs: options.heartbeatMs ?? 600_000,
      authCheckMs: options.authCheckMs ?? 600_000,
      ...(options.stopping ? { stopping: options.stopping } : {}),
    });
    return { waker, service };
  };

  it("hands over the backlog, then each new event once, in order, when woken", async () => {
    const reader = countingReader(createLogReader(db));
    const { waker, service } = follow({ reader });
    const abort = new AbortController();
    const opened = await service.open({ credential, params: () => ({ fromIndex: "2000" }) });
    const chunks = opened.chunks(abort.signal);
    const seen: number[] = [];
    while (seen.length < BACKLOG - 2_000) {
      seen.push(...eventsOf(await chunks.next()).map((event) => Number(event.logIndex)));
    }
    const size = (await fixture.indexed(projectId)).length;
    const pagesBefore = reader.pages;
    const next = chunks.next();
    const ids = await append(3);
    waker.passCommitted();
    const events = eventsOf(await next);
    expect(events.map((event) => event.eventId)).toEqual(
      (await fixture.indexed(projectId)).slice(size).map((row) => row.eventId),
    );
    expect(new Set(events.map((event) => event.eventId))).toEqual(new Set(ids));
    expect(seen).toEqual(Array.from({ length: size - 2_000 }, (_, i) => 2_000 + i));
    expect(events.map((event) => Number(event.logIndex))).toEqual([size, size + 1, size + 2]);
    expect(reader.pages).toBe(pagesBefore + 1);
    abort.abort();
    expect((await chunks.next()).done).toBe(true);
  });

  it("does not read ahead of a consumer that does not read", async () => {
    const reader = countingReader(createLogReader(db));
    const { service } = follow({ reader });
    const chunks = (await service.open({ credential, params: () => ({}) })).chunks();
    await chunks.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reader.pages).toBe(1);
    await chunks.return(undefined);
  });

  it("sends a heartbeat with the resume position when nothing arrives", async () => {
    const { service } = follow({ heartbeatMs: 20 });
    const size = BigInt((await fixture.indexed(projectId)).length);
    const chunks = (
      await service.open({ credential, params: () => ({ fromIndex: String(size) }) })
    ).chunks();
    const beat = await chunks.next();
    expect(beat.value).toEqual({ events: [], erased: [], unreadable: [], nextIndex: size });
    await chunks.return(undefined);
  });

  it("ends with the credential's error once it is no longer valid", async () => {
    const { authenticator, revoke } = switchableAuth();
    const { service } = follow({ authenticator, authCheckMs: 10, heartbeatMs: 600_000 });
    const size = (await fixture.indexed(projectId)).length;
    const chunks = (
      await service.open({ credential, params: () => ({ fromIndex: String(size) }) })
    ).chunks();
    const waiting = chunks.next();
    revoke();
    await expect(waiting).rejects.toThrow("Token expired");
  });

  it("ends a waiting stream with unavailable when the instance stops, and opens no new one", async () => {
    const stopping = new AbortController();
    const { service } = follow({ stopping: stopping.signal });
    const size = (await fixture.indexed(projectId)).length;
    const chunks = (
      await service.open({ credential, params: () => ({ fromIndex: String(size) }) })
    ).chunks();
    const waiting = chunks.next();
    stopping.abort();
    await expect(waiting).rejects.toMatchObject({
      kind: "unavailable",
      message: "Service temporarily unavailable: this instance is shutting down",
    });
    await expect(service.open({ credential, params: () => ({}) })).rejects.toMatchObject({
      kind: "unavailable",
    });
  });

  it("refuses a start beyond the log and a malformed Last-Event-ID", async () => {
    const { service } = follow({});
    const size = (await fixture.indexed(projectId)).length;
    await expect(
      service.open({ credential, params: () => ({ fromIndex: String(size + 1) }) }),
    ).rejects.toThrow(
      `fromIndex ${size + 1} is beyond the end of the log, which holds ${size} events`,
    );
    await expect(
      service.open({ credential, params: () => ({}), lastEventId: "12abc" }),
    ).rejects.toThrow("Last-Event-ID must be the logIndex of an event (a non-negative integer)");
    const resumed = await service.open({
      credential,
      params: () => ({ fromIndex: "0" }),
      lastEventId: String(size - 1),
    });
    expect(resumed.fromIndex).toBe(BigInt(size));
  });
});
