/**
 * The gate of admission control (src/transport/admission.ts): what a stream event waits
 * on when no slot is free. Slots given back go to those waiting, first come first served;
 * a request's tryEnter finds none while any waits; a wait its client abandons takes no
 * slot and leaves the queue.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { IngestEventsResponseSchema, IngestService } from "../../gen/audit/v1/ingest_pb.js";
import type { StreamCall, StreamOperation } from "../../src/api/operation.js";
import { requestFacts } from "../../src/api/request-facts.js";
import { createAdmission, createGate } from "../../src/transport/admission.js";

const settledOrder = (order: string[], name: string) => () => {
  order.push(name);
};

describe("admission gate", () => {
  it("hands slots given back to the waiting, in order, and refuses requests meanwhile", async () => {
    const gate = createGate(2);
    expect(gate.tryEnter()).toBe(true);
    await gate.enter();
    expect(gate.inFlight).toBe(2);
    const order: string[] = [];
    const first = gate.enter().then(settledOrder(order, "first"));
    const second = gate.enter().then(settledOrder(order, "second"));
    await Promise.resolve();
    expect(order).toEqual([]);
    expect(gate.full).toBe(true);
    expect(gate.tryEnter()).toBe(false);

    gate.leave();
    await first;
    expect(order).toEqual(["first"]);
    expect(gate.inFlight).toBe(2);
    // Still one waiting: a request is refused, not let in ahead of it.
    expect(gate.tryEnter()).toBe(false);
    gate.leave();
    await second;
    expect(order).toEqual(["first", "second"]);
    gate.leave();
    gate.leave();
    expect(gate.inFlight).toBe(0);
    expect(gate.full).toBe(false);
    expect(gate.tryEnter()).toBe(true);
  });

  it("a wait aborted takes no slot and leaves the queue; the next waiting gets the slot", async () => {
    const gate = createGate(1);
    await gate.enter();
    const abandoned = new AbortController();
    const gone = gate.enter(abandoned.signal);
    const next = gate.enter();
    abandoned.abort();
    const error = await gone.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Canceled);
    gate.leave();
    await next;
    expect(gate.inFlight).toBe(1);
    gate.leave();
    expect(gate.inFlight).toBe(0);
    // Already aborted: refused at once when it would have to wait.
    await gate.enter();
    await expect(gate.enter(abandoned.signal)).rejects.toBeInstanceOf(ConnectError);
    gate.leave();
    expect(gate.inFlight).toBe(0);
  });

  it("with no limit, never waits and still counts", async () => {
    const gate = createGate(0);
    for (let i = 0; i < 1000; i++) await gate.enter();
    expect(gate.tryEnter()).toBe(true);
    expect(gate.inFlight).toBe(1001);
  });
});

/** An IngestEvents stream admitted with an ingest limit of `limit`: answers each request read. */
function admittedStream(limit: number) {
  const admission = createAdmission({ limits: { ingest: limit, read: 0 } });
  const answering: StreamOperation = async function* (call) {
    for await (const read of call.requests) {
      read();
      yield create(IngestEventsResponseSchema, {});
    }
  };
  const stream = admission
    .streams(new Map([[IngestService.method.ingestEvents, answering]]))
    .get(IngestService.method.ingestEvents);
  if (!stream) throw new Error("no stream operation");
  const open = (requests: number, signal?: AbortSignal) => {
    const call: StreamCall = {
      facts: requestFacts(
        { requestId: "r", secure: false, peer: undefined, repeatedHeaders: new Set() },
        () => undefined,
      ),
      header: () => undefined,
      requests: (async function* () {
        for (let i = 0; i < requests; i++) yield () => ({ event: {} });
      })(),
      ...(signal ? { signal } : {}),
    };
    return stream(call)[Symbol.asyncIterator]();
  };
  return { gate: admission.gates.ingest, open };
}

describe("admission of a stream", () => {
  it("answers every event of a stream pipelining past the limit, and gives every slot back", async () => {
    const { gate, open } = admittedStream(2);
    const replies = open(25);
    let answered = 0;
    for (let next = await replies.next(); !next.done; next = await replies.next()) {
      expect(gate.inFlight).toBeLessThanOrEqual(2);
      answered++;
    }
    expect(answered).toBe(25);
    expect(gate.inFlight).toBe(0);
  });

  it("ends a stream whose client goes away while its event waits: no slot taken, none left waiting", async () => {
    const { gate, open } = admittedStream(1);
    expect(gate.tryEnter()).toBe(true); // another request holds the only slot
    const client = new AbortController();
    const replies = open(3, client.signal);
    const first = replies.next();
    await new Promise((resolve) => setTimeout(resolve, 10));
    client.abort();
    expect(await first).toEqual({ done: true, value: undefined });
    expect(gate.inFlight).toBe(1);
    gate.leave();
    expect(gate.inFlight).toBe(0);
    // Nothing is left in the queue to take the slot given back.
    expect(gate.tryEnter()).toBe(true);
    gate.leave();
  });
});
