/**
 * The service process killed with SIGKILL in the middle of sustained ingestion, then
 * started again on the same storage: every event acknowledged with 201 is stored and
 * readable, no request is stored twice, and retrying each request with its
 * Idempotency-Key gives back the original event (200) or creates it once (201).
 *
 * Storage follows the suite: a fresh PostgreSQL database when DATABASE_URL is set,
 * otherwise the embedded PGlite in a temporary DATA_DIR (read directly after the crash,
 * before the restart reopens it). One crash per storage: the scenario runs in beforeAll
 * and each test asserts one part of what it saw.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createStorage,
  exitWithin,
  listAllEvents,
  provision,
  recordFigures,
  retryAll,
  type Sent,
  type Service,
  type Storage,
  startLoad,
  startService,
  storedRows,
} from "./harness.js";

const ACKS_BEFORE_KILL = 1500;
const CONCURRENCY = 48;
const ENV = { RATE_LIMIT_MAX: "1000000000" };

interface Observed {
  kind: Storage["kind"];
  sent: Sent[];
  acked: Sent[];
  inFlightAtKill: number;
  killExit: { code: number | null; signal: NodeJS.Signals | null };
  afterCrash: { ids: Set<string>; rows: number };
  listedAfterRestart: { eventId: string; entityId: string; logIndex: number }[];
  retries: Awaited<ReturnType<typeof retryAll>>;
  listedAfterRetries: { eventId: string; entityId: string; logIndex: number }[];
  afterRetries: { ids: Set<string>; rows: number };
  restartedExit: { code: number | null; signal: NodeJS.Signals | null } | "timeout";
}

describe(`SIGKILL during sustained ingestion, then restart on the same storage (${
  process.env.DATABASE_URL ? "PostgreSQL" : "embedded PGlite"
})`, () => {
  let storage: Storage | undefined;
  const services: Service[] = [];
  let observed: Observed;

  beforeAll(async () => {
    storage = await createStorage();
    const adminToken = randomBytes(24).toString("hex");
    const first = await startService(storage, adminToken, ENV);
    services.push(first);
    const { projectId, secret } = await provision(first.url, adminToken);

    const load = startLoad(first.url, secret, { concurrency: CONCURRENCY });
    await load.untilAcked(ACKS_BEFORE_KILL, 60_000);
    // Frozen first: the answers it had already written still arrive, the workers send on,
    // and what they send now waits unanswered in its sockets. Without the freeze, on a fast
    // machine the answers of a whole group commit can all be out before the kill lands,
    // leaving none in flight to meet it.
    first.child.kill("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const inFlightAtKill = load.inFlight();
    // No new request from here; those in flight meet the kill.
    const settled = load.stop();
    first.child.kill("SIGKILL");
    const killExit = await first.exited;
    await settled;

    // Read straight from the storage before anything reopens it.
    const afterCrash = await storedRows(storage, projectId);

    const second = await startService(storage, adminToken, ENV);
    services.push(second);
    const listedAfterRestart = await listAllEvents(second.url, secret);
    const retries = await retryAll(second.url, secret, load.sent);
    const listedAfterRetries = await listAllEvents(second.url, secret);
    second.child.kill("SIGTERM");
    const restartedExit = await exitWithin(second, 30_000);
    const afterRetries = await storedRows(storage, projectId);

    observed = {
      kind: storage.kind,
      sent: load.sent,
      acked: load.acked(),
      inFlightAtKill,
      killExit,
      afterCrash,
      listedAfterRestart,
      retries,
      listedAfterRetries,
      afterRetries,
      restartedExit,
    };
    const unacked = observed.sent.filter((request) => request.status !== 201);
    recordFigures(`crash (${storage.kind})`, {
      requests: observed.sent.length,
      acknowledged: observed.acked.length,
      inFlightAtKill,
      foundAfterCrash: afterCrash.rows,
      acknowledgedFound: observed.acked.filter((r) => afterCrash.ids.has(r.eventId ?? "")).length,
      unacknowledgedButStored: unacked.filter((r) => retries.get(r.index)?.status === 200).length,
      unacknowledgedCreatedOnRetry: unacked.filter((r) => retries.get(r.index)?.status === 201)
        .length,
      rowsAfterRetries: afterRetries.rows,
    });
  });

  afterAll(async () => {
    for (const service of services) await service.kill();
    await storage?.cleanup();
  });

  it("the process died by SIGKILL with requests in flight, which got no answer", () => {
    expect(observed.killExit).toEqual({ code: null, signal: "SIGKILL" });
    expect(observed.inFlightAtKill).toBeGreaterThan(0);
    expect(observed.acked.length).toBeGreaterThanOrEqual(ACKS_BEFORE_KILL);
    const statuses = new Set(observed.sent.map((request) => request.status));
    expect([...statuses].sort()).toEqual([0, 201]);
  });

  it("every acknowledged event is stored after the crash and listed after the restart", () => {
    const ackedIds = observed.acked.map((request) => request.eventId ?? "");
    expect(ackedIds.filter((id) => !observed.afterCrash.ids.has(id))).toEqual([]);
    const listed = new Set(observed.listedAfterRestart.map((event) => event.eventId));
    expect(ackedIds.filter((id) => !listed.has(id))).toEqual([]);
    expect(observed.listedAfterRestart).toHaveLength(observed.afterCrash.rows);
  });

  it("no request is stored twice, before or after the retries", () => {
    // Each request has an entityId of its own: what is listed is each request once.
    const before = observed.listedAfterRestart.map((event) => event.entityId);
    expect(new Set(before).size).toBe(observed.afterCrash.rows);
    // Every request was retried to success: exactly one row per request.
    expect(observed.afterRetries.rows).toBe(observed.sent.length);
    const entities = observed.listedAfterRetries.map((event) => event.entityId);
    expect(new Set(entities).size).toBe(entities.length);
    expect(entities).toHaveLength(observed.sent.length);
  });

  it("every event is listed once, at a log index gapless from 0, before and after the retries", () => {
    for (const listed of [observed.listedAfterRestart, observed.listedAfterRetries]) {
      const indexes = listed.map((event) => event.logIndex).sort((a, b) => a - b);
      expect(indexes).toEqual(Array.from({ length: listed.length }, (_, i) => i));
      expect(new Set(listed.map((event) => event.eventId)).size).toBe(listed.length);
    }
    // The retries only appended: what was listed after the restart kept its place.
    const after = new Map(observed.listedAfterRetries.map((e) => [e.eventId, e.logIndex]));
    for (const event of observed.listedAfterRestart) {
      expect(after.get(event.eventId)).toBe(event.logIndex);
    }
  });

  it("a retry of an acknowledged request answers 200 with the original eventId", () => {
    const wrong = observed.acked
      .map((request) => ({ request, retry: observed.retries.get(request.index) }))
      .filter(({ request, retry }) => retry?.status !== 200 || retry.eventId !== request.eventId)
      .map(({ request, retry }) => ({ key: request.key, retry: retry?.status }));
    expect(wrong).toEqual([]);
  });

  it("a retry of an unanswered request creates it (201) or finds it stored before the crash (200)", () => {
    const unacked = observed.sent.filter((request) => request.status !== 201);
    expect(unacked.length).toBeGreaterThan(0);
    for (const request of unacked) {
      const retry = observed.retries.get(request.index);
      expect([200, 201]).toContain(retry?.status);
      if (retry?.status === 200)
        expect(observed.afterCrash.ids.has(retry.eventId ?? "")).toBe(true);
      if (retry?.status === 201) {
        expect(observed.afterCrash.ids.has(retry.eventId ?? "")).toBe(false);
      }
    }
    // What the crash left stored is exactly the acknowledged events plus the unanswered
    // ones whose commit landed before the kill.
    const storedUnanswered = unacked.filter((r) => observed.retries.get(r.index)?.status === 200);
    expect(observed.afterCrash.rows).toBe(observed.acked.length + storedUnanswered.length);
  });

  it("the restarted process stops cleanly", () => {
    expect(observed.restartedExit).toEqual({ code: 0, signal: null });
  });
});
