/**
 * The IngestEvents operation called directly, with a bulk service whose writes are held:
 * its flow control (at most STREAM_WINDOW events read ahead of their acknowledgements),
 * the groups it writes events in, and the order of its acknowledgements, whatever order
 * the writes commit in.
 */
import type { Message } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type IngestEventsResponse, IngestService } from "../../gen/audit/v1/ingest_pb.js";
import {
  ingestStreamOperations,
  STREAM_BATCH,
  STREAM_WINDOW,
} from "../../src/api/ingest-operations.js";
import type { StreamCall } from "../../src/api/operation.js";
import { requestFacts } from "../../src/api/request-facts.js";
import { ServiceError } from "../../src/errors.js";
import type { BulkIngestService } from "../../src/ingest/bulk-ingest.js";
import type { WriteResult } from "../../src/store/events.js";

/**
 * A bulk service whose stream writes wait until the test settles them; `groups` has the
 * size of each group the operation wrote.
 */
function heldWrites(ready: () => Promise<void> | undefined = () => undefined) {
  const held: { n: number; resolve: (result: WriteResult) => void }[] = [];
  const groups: number[] = [];
  let n = 0;
  const bulk: BulkIngestService = {
    createEvents: () => Promise.reject(new Error("not used")),
    openStream: async () => ({
      ready,
      ingest: (items) => {
        groups.push(items.length);
        return items.map(() => {
          const mine = n++;
          return new Promise<WriteResult>((resolve) => held.push({ n: mine, resolve }));
        });
      },
    }),
  };
  return { bulk, held, groups };
}

/** The IngestEvents operation called directly on `requests`. */
function openOperation(bulk: BulkIngestService, requests: AsyncIterable<() => unknown>) {
  const operation = ingestStreamOperations(bulk).get(IngestService.method.ingestEvents);
  if (!operation) throw new Error("IngestEvents has no operation");
  const call: StreamCall = {
    facts: requestFacts(
      { requestId: "r", secure: false, peer: undefined, repeatedHeaders: new Set() },
      () => undefined,
    ),
    header: () => undefined,
    requests,
  };
  return operation(call)[Symbol.asyncIterator]();
}

/** Requests that count how many were pulled; `total` of them, then the end. */
function countedRequests(total: number) {
  const state = { pulled: 0 };
  const requests = (async function* () {
    for (let i = 0; i < total; i++) {
      state.pulled++;
      yield () => ({ event: { entityId: `e${i}` } });
    }
  })();
  return { requests, state };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("IngestEvents flow control", () => {
  it("reads at most STREAM_WINDOW events ahead of their acknowledgements, then answers each in the order sent", async () => {
    const { bulk, held, groups } = heldWrites();
    const { requests, state } = countedRequests(1000);
    const replies = openOperation(bulk, requests);
    const first = replies.next();
    for (let i = 0; i < 20; i++) await tick();
    // Nothing acknowledged yet: the window is full and no more is read.
    expect(held).toHaveLength(STREAM_WINDOW);
    expect(state.pulled).toBeLessThanOrEqual(STREAM_WINDOW + 1);
    // Read as fast as they came: written in groups of STREAM_BATCH, the rest when the
    // window filled.
    expect(groups).toEqual([STREAM_BATCH, STREAM_BATCH, STREAM_WINDOW - 2 * STREAM_BATCH]);

    // Writes commit in reverse order; acknowledgements still go out in the order sent.
    for (const write of [...held].reverse()) {
      write.resolve({ eventId: `id-${write.n}`, receivedAt: new Date(0), replayed: false });
    }
    const acks: IngestEventsResponse[] = [];
    const take = async (result: IteratorResult<Message>) => {
      if (!result.done) acks.push(result.value as IngestEventsResponse);
      return result.done;
    };
    await take(await first);
    while (acks.length < STREAM_WINDOW) await take(await replies.next());
    expect(acks.map((ack) => Number(ack.sequence))).toEqual(
      Array.from({ length: STREAM_WINDOW }, (_, i) => i),
    );
    expect(acks.map((ack) => ack.result?.eventId)).toEqual(
      Array.from({ length: STREAM_WINDOW }, (_, i) => `id-${i}`),
    );
    // Room again once the next reply is asked for (the transport asks after writing one):
    // the next events are read, never more than the window in flight.
    void replies.next();
    for (let i = 0; i < 20; i++) await tick();
    expect(held.length).toBeGreaterThan(STREAM_WINDOW);
    expect(held.length - acks.length).toBeLessThanOrEqual(STREAM_WINDOW);
  });
});

describe("IngestEvents while its log is behind (the pushback)", () => {
  it("reads nothing while the log is behind, then reads on; a refusal answers what was read and ends the stream", async () => {
    // The log's state as the stream sees it: a wait that the test ends.
    const hold = () => {
      let resolve = () => {};
      let reject: (e: unknown) => void = () => {};
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(() => {});
      return { promise, resolve, reject };
    };
    let behind = hold();
    const { bulk, held } = heldWrites(() => behind.promise);
    const { requests, state } = countedRequests(3);
    const replies = openOperation(bulk, requests);
    const first = replies.next();
    for (let i = 0; i < 10; i++) await tick();
    // Nothing read, so no slot taken and nothing written.
    expect(state.pulled).toBe(0);
    expect(held).toHaveLength(0);

    // Caught up for one read, then behind again.
    const caughtUp = behind;
    behind = hold();
    caughtUp.resolve();
    for (let i = 0; i < 10 && held.length === 0; i++) await tick();
    for (let i = 0; i < 5; i++) await tick();
    expect(state.pulled).toBe(1);
    expect(held).toHaveLength(1);
    for (const write of held) {
      write.resolve({ eventId: `id-${write.n}`, receivedAt: new Date(0), replayed: false });
    }
    const refusal = new ServiceError("unavailable", "behind");
    behind.reject(refusal);
    const acks = [(await first).value as IngestEventsResponse];
    let ended: unknown;
    try {
      for (let r = await replies.next(); !r.done; r = await replies.next()) {
        acks.push(r.value as IngestEventsResponse);
      }
    } catch (error) {
      ended = error;
    }
    // What was read was answered; nothing more was read; the stream ends refused.
    expect(acks.map((ack) => ack.result?.eventId)).toEqual(["id-0"]);
    expect(state.pulled).toBe(1);
    expect(ended).toBe(refusal);
  });
});

describe("IngestEvents groups", () => {
  it("writes the events read within STREAM_GATHER_MS together, and a lone event without waiting for more", async () => {
    const { bulk, held, groups } = heldWrites();
    let next = () => {};
    const more = new Promise<void>((resolve) => {
      next = resolve;
    });
    const requests = (async function* () {
      for (let i = 0; i < 3; i++) yield () => ({ event: { entityId: `a${i}` } });
      // The client pauses: what was read is written meanwhile.
      await more;
      yield () => ({ event: { entityId: "b" } });
    })();
    const replies = openOperation(bulk, requests);
    const first = replies.next();
    for (let i = 0; i < 10 && groups.length === 0; i++) await tick();
    expect(groups).toEqual([3]);
    next();
    for (let i = 0; i < 10 && groups.length === 1; i++) await tick();
    expect(groups).toEqual([3, 1]);
    for (const write of held) {
      write.resolve({ eventId: `id-${write.n}`, receivedAt: new Date(0), replayed: false });
    }
    const acks = [(await first).value as IngestEventsResponse];
    for (let r = await replies.next(); !r.done; r = await replies.next()) {
      acks.push(r.value as IngestEventsResponse);
    }
    expect(acks.map((ack) => [Number(ack.sequence), ack.result?.eventId])).toEqual([
      [0, "id-0"],
      [1, "id-1"],
      [2, "id-2"],
      [3, "id-3"],
    ]);
  });

  it("answers a request that cannot be read alone, in its place, and writes the others of its group", async () => {
    const { bulk, held, groups } = heldWrites();
    const requests = (async function* () {
      yield () => ({ event: { entityId: "a" } });
      yield () => {
        throw new ServiceError("bad_request", "Invalid request: unreadable");
      };
      yield () => ({ event: { entityId: "c" } });
    })();
    const replies = openOperation(bulk, requests);
    const first = replies.next();
    for (let i = 0; i < 10 && held.length < 2; i++) await tick();
    expect(groups).toEqual([2]);
    for (const write of held) {
      write.resolve({ eventId: `id-${write.n}`, receivedAt: new Date(0), replayed: false });
    }
    const acks = [(await first).value as IngestEventsResponse];
    for (let r = await replies.next(); !r.done; r = await replies.next()) {
      acks.push(r.value as IngestEventsResponse);
    }
    expect(
      acks.map((ack) => [Number(ack.sequence), ack.result?.eventId ?? ack.result?.error]),
    ).toEqual([
      [0, "id-0"],
      [1, "Invalid request: unreadable"],
      [2, "id-1"],
    ]);
  });
});
