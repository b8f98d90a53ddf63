/**
 * A batch holding a value that validation lets through but the database refuses. No such
 * value is known today (what validation accepts is sealed before it reaches the
 * database: see bulk-ingest.values.test.ts), so the batch appender is wrapped to give
 * one event an occurredAt of year 10000, which PostgreSQL refuses (SQLSTATE class 22):
 * in the default mode that item is reported as its own error and the rest stored; in
 * atomic mode, or when every valid item is refused, the request is a 422 with nothing
 * stored or counted; never an unexpected error (500). Runs on the suite's driver with
 * the real SQL (PostgreSQL with DATABASE_URL, PGlite otherwise).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import {
  type BulkIngestService,
  createBulkIngestService,
  REFUSED_VALUE,
} from "../../src/ingest/bulk-ingest.js";
import { type BatchAppender, createBatchAppender } from "../../src/store/batch-append.js";
import { createEventStore } from "../../src/store/events.js";
import { utcMonth } from "../../src/store/write-model.js";
import { createDirectServices, type DirectServices } from "../support/direct-services.js";
import { validEvent } from "../support/test-server.js";

let services: DirectServices;
let bulk: BulkIngestService;
// The positions, among the valid events of the next batch, to give the refused value.
let refuseAt = new Set<number>();
const YEAR_10000 = new Date(Date.parse("9999-12-31T23:59:59Z") + 2_000);

beforeAll(async () => {
  services = await createDirectServices();
  const quota = {
    limits: { pro: 1_000_000, free: 1_000 },
    refuse: () => new ServiceError("quota_exceeded", "Monthly event limit reached"),
  };
  const real = createBatchAppender(services.db, { quota });
  const batches: BatchAppender = {
    ...real,
    append: (batch) =>
      real.append({
        ...batch,
        events: batch.events.map((event, i) =>
          refuseAt.has(i) ? { ...event, occurredAt: YEAR_10000 } : event,
        ),
      }),
  };
  bulk = createBulkIngestService({
    authenticator: services.authenticator,
    keyring: services.keyring,
    events: createEventStore(services.db, { quota }),
    batches,
    idempotencyTtlSeconds: 3600,
  });
});

afterAll(async () => {
  await services?.close();
});

const stored = async (projectId: string) => {
  const [events] = await services.db.query<{ n: number }>(
    "select count(*)::int as n from events where project_id = $1",
    [projectId],
  );
  const [usage] = await services.db.query<{ n: number }>(
    "select coalesce(sum(count), 0)::int as n from usage_counters where project_id = $1 and month = $2",
    [projectId, utcMonth(new Date())],
  );
  return { events: events?.n, counted: usage?.n };
};

const send = (
  secret: string,
  events: unknown[],
  options: { atomic?: boolean; idempotencyKey?: string } = {},
) =>
  bulk.createEvents({
    credential: { kind: "api_key", value: secret, via: "bearer" },
    idempotencyKey: options.idempotencyKey,
    readBody: () => ({ events, atomic: options.atomic ?? false }),
  });

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("a value the database refuses in a batch", () => {
  it("is that item's error and the other events are stored and counted", async () => {
    const key = await services.provision();
    refuseAt = new Set([1]);
    const { results, replayed } = await send(key.secret, [
      validEvent({ entityId: "a" }),
      validEvent({ entityId: "refused" }),
      { entityType: "invalid" },
      validEvent({ entityId: "c" }),
    ]);
    expect(replayed).toBe(false);
    expect(results.map((r) => r.stored)).toEqual([true, false, false, true]);
    expect(results[1]).toEqual({
      stored: false,
      error: "Validation failed",
      details: [{ path: [1], message: REFUSED_VALUE, code: "custom" }],
    });
    expect(results[2]).toMatchObject({ stored: false, error: "Validation failed" });
    expect(await stored(key.projectId)).toEqual({ events: 2, counted: 2 });
  });

  it("in atomic mode refuses the batch with 422 (validation) and stores nothing", async () => {
    const key = await services.provision();
    refuseAt = new Set([2]);
    const error = await refusal(
      send(key.secret, [validEvent(), validEvent(), validEvent()], { atomic: true }),
    );
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).kind).toBe("validation");
    expect((error as ServiceError).facts.issues).toEqual([
      { path: [2], message: REFUSED_VALUE, code: "custom" },
    ]);
    expect(await stored(key.projectId)).toEqual({ events: 0, counted: 0 });
  });

  it("when every valid item is refused, is a 422 with every item's issues and nothing stored", async () => {
    const key = await services.provision();
    refuseAt = new Set([0]);
    const error = await refusal(send(key.secret, [{ entityType: "invalid" }, validEvent()]));
    expect((error as ServiceError).kind).toBe("validation");
    expect((error as ServiceError).facts.issues?.map((issue) => issue.path[0])).toEqual([
      0, 0, 0, 1,
    ]);
    expect((error as ServiceError).facts.issues?.at(-1)).toEqual({
      path: [1],
      message: REFUSED_VALUE,
      code: "custom",
    });
    expect(await stored(key.projectId)).toEqual({ events: 0, counted: 0 });
  });

  it("with an Idempotency-Key, the claim holds the stored ids: a replay answers them and stores nothing", async () => {
    const key = await services.provision();
    refuseAt = new Set([0]);
    const events = [validEvent({ entityId: "x" }), validEvent({ entityId: "y" })];
    const first = await send(key.secret, events, { idempotencyKey: "refused-batch" });
    expect(first.results.map((r) => r.stored)).toEqual([false, true]);
    refuseAt = new Set();
    const again = await send(key.secret, events, { idempotencyKey: "refused-batch" });
    expect(again.replayed).toBe(true);
    expect(again.results[1]).toEqual(first.results[1]);
    expect(again.results[0]).toMatchObject({ stored: false, error: "Validation failed" });
    expect(await stored(key.projectId)).toEqual({ events: 1, counted: 1 });
  });
});
