/**
 * IngestEvents' rate limit, with the bulk service called directly on the suite's driver:
 * a stream is charged once more every STREAM_EVENTS_PER_ADMISSION events, and a refusal
 * refuses the event that crossed the mark and every event sent after it, including those
 * of groups given while the mark was being checked (they counted past the mark without
 * being charged, and must not be stored behind a refused event).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Messages, ServiceError } from "../../src/errors.js";
import {
  type BulkIngestService,
  createBulkIngestService,
  STREAM_EVENTS_PER_ADMISSION,
} from "../../src/ingest/bulk-ingest.js";
import { createBatchAppender } from "../../src/store/batch-append.js";
import type { WriteResult } from "../../src/store/events.js";
import { createEventStore } from "../../src/store/events.js";
import { createDirectServices, type DirectServices } from "../support/direct-services.js";
import { validEvent } from "../support/test-server.js";

let services: DirectServices;
let bulk: BulkIngestService;
// How many more admissions the limiter grants; each answer takes a while, as Redis's would.
let grants = 0;

beforeAll(async () => {
  services = await createDirectServices();
  const quota = {
    limits: { pro: 1_000_000, free: 1_000 },
    refuse: () => new ServiceError("quota_exceeded", "Monthly event limit reached"),
  };
  bulk = createBulkIngestService({
    authenticator: services.authenticator,
    keyring: services.keyring,
    events: createEventStore(services.db, { quota }),
    batches: createBatchAppender(services.db, { quota }),
    idempotencyTtlSeconds: 3600,
    admission: [
      {
        async admit() {
          await new Promise((resolve) => setTimeout(resolve, 50));
          if (grants-- <= 0) throw new ServiceError("rate_limited", Messages.rateLimited);
        },
      },
    ],
  });
});

afterAll(async () => {
  await services?.close();
});

/** Each write's outcome: the event id, or the refusal's message. */
function outcomes(writes: Promise<WriteResult>[]): Promise<string[]> {
  return Promise.all(
    writes.map((write) =>
      write.then(
        () => "stored",
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      ),
    ),
  );
}

describe("IngestEvents and the rate limit", () => {
  it("a refusal at a mark refuses that event and every later one, in the groups given meanwhile too", async () => {
    const { projectId, secret } = await services.provision();
    grants = 1; // the stream's opening; the first mark is refused
    const stream = await bulk.openStream({ kind: "api_key", value: secret, via: "bearer" });
    const item = (i: number) => ({
      event: validEvent({ entityId: `e${i}` }),
      idempotencyKey: undefined,
    });
    const marked = STREAM_EVENTS_PER_ADMISSION + 1;
    // The group crossing the mark, then two more given while its charge is checked.
    const first = stream.ingest(Array.from({ length: marked }, (_, i) => item(i)));
    const second = stream.ingest(Array.from({ length: 20 }, (_, i) => item(marked + i)));
    const third = stream.ingest([item(marked + 20)]);
    const [a, b, c] = await Promise.all([outcomes(first), outcomes(second), outcomes(third)]);

    expect(a.slice(0, STREAM_EVENTS_PER_ADMISSION).every((o) => o === "stored")).toBe(true);
    expect(a.slice(STREAM_EVENTS_PER_ADMISSION)).toEqual([Messages.rateLimited]);
    expect(new Set([...b, ...c])).toEqual(new Set([Messages.rateLimited]));
    const [row] = await services.db.query<{ n: number }>(
      "select count(*)::int as n from events where project_id = $1",
      [projectId],
    );
    expect(row?.n).toBe(STREAM_EVENTS_PER_ADMISSION);
  });

  it("events before a granted mark and after it are all stored", async () => {
    const { projectId, secret } = await services.provision();
    grants = 2; // the opening and the first mark
    const stream = await bulk.openStream({ kind: "api_key", value: secret, via: "bearer" });
    const item = (i: number) => ({
      event: validEvent({ entityId: `g${i}` }),
      idempotencyKey: undefined,
    });
    const first = stream.ingest(
      Array.from({ length: STREAM_EVENTS_PER_ADMISSION + 1 }, (_, i) => item(i)),
    );
    const second = stream.ingest(Array.from({ length: 5 }, (_, i) => item(1_000 + i)));
    const all = [...(await outcomes(first)), ...(await outcomes(second))];
    expect(all.every((o) => o === "stored")).toBe(true);
    const [row] = await services.db.query<{ n: number }>(
      "select count(*)::int as n from events where project_id = $1",
      [projectId],
    );
    expect(row?.n).toBe(STREAM_EVENTS_PER_ADMISSION + 6);
  });
});
