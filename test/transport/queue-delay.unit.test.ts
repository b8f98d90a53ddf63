/**
 * Shedding by queueing delay (src/transport/queue-delay.ts): the CoDel decision fed with
 * made-up samples, the drift sampler on a fake clock, and admission (admission.ts) with a
 * shedder set by hand. Nothing here depends on how fast the machine is.
 */
import { create, type DescMethod } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AdminService } from "../../gen/audit/v1/admin_pb.js";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import {
  CreateEventResponseSchema,
  IngestEventsResponseSchema,
  IngestService,
} from "../../gen/audit/v1/ingest_pb.js";
import type {
  Operation,
  OperationCall,
  StreamCall,
  StreamOperation,
} from "../../src/api/operation.js";
import { requestFacts } from "../../src/api/request-facts.js";
import { Messages, ServiceError } from "../../src/errors.js";
import {
  type AdmissionClass,
  createAdmission,
  type RefusalReason,
} from "../../src/transport/admission.js";
import {
  createDelayShedder,
  LOOP_DELAY_SAMPLE_MS,
  type LoadShedder,
  type SamplerClock,
  sampleLoopDelay,
  watchLoopDelay,
} from "../../src/transport/queue-delay.js";

const TARGET = 500;
const INTERVAL = 1_000;

/** Feeds `[delayMs, atMs]` samples and returns whether it sheds after each. */
function feed(samples: [number, number][]) {
  const shedder = createDelayShedder({ targetMs: TARGET, intervalMs: INTERVAL });
  return samples.map(([delay, at]) => {
    shedder.observe(delay, at);
    return shedder.shedding;
  });
}

describe("the delay decision (CoDel)", () => {
  it("sheds nothing for a delay above the target that lasts less than an interval (a burst)", () => {
    expect(
      feed([
        [5, 0],
        // One turn blocked for 3 s: one sample, however large.
        [3_000, 3_050],
        [4, 3_100],
        // Above the target for 950 ms, then under it: not standing.
        [800, 4_000],
        [900, 4_600],
        [700, 4_950],
        [499, 5_000],
        [900, 5_600],
      ]),
    ).toEqual([false, false, false, false, false, false, false, false]);
  });

  it("sheds once every sample over an interval was at or above the target, and stops at the first under it", () => {
    expect(
      feed([
        [500, 0],
        [700, 600],
        [800, 999],
        [600, 1_000],
        [2_000, 3_000],
        [499, 3_050],
      ]),
    ).toEqual([false, false, false, true, true, false]);
  });

  it("back above the target within an interval of stopping sheds again at once; after that, a whole interval again", () => {
    expect(
      feed([
        [600, 0],
        [600, 1_000],
        [100, 1_050],
        // The same overload coming back: shed at once.
        [600, 1_600],
        [100, 1_650],
        // An interval after it stopped: a new run, which must stand for an interval.
        [600, 2_650],
        [600, 3_000],
        [600, 3_650],
      ]),
    ).toEqual([false, true, false, true, false, false, false, true]);
  });

  it("with a target of 0 never sheds", () => {
    const shedder = createDelayShedder({ targetMs: 0, intervalMs: 1 });
    for (let at = 0; at < 10_000; at += 100) shedder.observe(60_000, at);
    expect(shedder.shedding).toBe(false);
  });

  it("cleared() resolves at once when not shedding, else at the first sample under the target; an abort leaves the wait", async () => {
    const shedder = createDelayShedder({ targetMs: TARGET, intervalMs: INTERVAL });
    await shedder.cleared();
    shedder.observe(600, 0);
    shedder.observe(600, 1_000);
    expect(shedder.shedding).toBe(true);

    const order: string[] = [];
    const waited = shedder.cleared().then(() => order.push("cleared"));
    const abandoned = new AbortController();
    const gone = shedder.cleared(abandoned.signal).catch(() => order.push("aborted"));
    abandoned.abort();
    await gone;
    shedder.observe(700, 1_100);
    await Promise.resolve();
    expect(order).toEqual(["aborted"]);
    shedder.observe(10, 1_150);
    await waited;
    expect(order).toEqual(["aborted", "cleared"]);
    // Already aborted: rejects at once while shedding.
    shedder.observe(600, 1_200);
    expect(shedder.shedding).toBe(true);
    await expect(shedder.cleared(abandoned.signal)).rejects.toBeDefined();
  });
});

/** A clock whose time and timer the test moves. */
function fakeClock() {
  let time = 0;
  let pending: { at: number; callback: () => void } | undefined;
  const clock: SamplerClock = {
    now: () => time,
    after(ms, callback) {
      const timer = { at: time + ms, callback };
      pending = timer;
      return () => {
        if (pending === timer) pending = undefined;
      };
    },
  };
  return {
    clock,
    /** The timer fires late by `lateMs` (the loop was busy when it was due). */
    fire(lateMs: number) {
      const timer = pending;
      if (!timer) throw new Error("no timer pending");
      pending = undefined;
      time = timer.at + lateMs;
      timer.callback();
    },
    get pending() {
      return pending !== undefined;
    },
  };
}

describe("the loop delay sampler", () => {
  it("samples how late its timer fires, every period, until stopped", () => {
    const fake = fakeClock();
    const samples: [number, number][] = [];
    const sampler = sampleLoopDelay((delay, at) => samples.push([delay, at]), 50, fake.clock);
    fake.fire(0);
    fake.fire(700);
    fake.fire(3);
    expect(samples).toEqual([
      [0, 50],
      [700, 800],
      [3, 853],
    ]);
    sampler.stop();
    expect(fake.pending).toBe(false);
  });

  it("watchLoopDelay sheds on a standing delay, and stopping it ends shedding and its waits", async () => {
    expect(watchLoopDelay({ targetMs: 0, intervalMs: INTERVAL })).toBeUndefined();
    const fake = fakeClock();
    const watched = watchLoopDelay({ targetMs: TARGET, intervalMs: INTERVAL }, fake.clock);
    if (!watched) throw new Error("shedding is on");
    fake.fire(0);
    expect(watched.shedding).toBe(false);
    // Each turn about 600 ms long: samples every ~650 ms, each ~600 late.
    for (let turn = 0; turn < 3; turn++) fake.fire(600);
    expect(watched.shedding).toBe(true);
    const waited = watched.cleared();
    watched.stop();
    await waited;
    expect(watched.shedding).toBe(false);
    expect(fake.pending).toBe(false);
    expect(LOOP_DELAY_SAMPLE_MS).toBeLessThan(TARGET);
  });
});

/** A shedder the test switches by hand. */
function manualShedder() {
  let shedding = false;
  let waiting: (() => void)[] = [];
  const shedder: LoadShedder = {
    get shedding() {
      return shedding;
    },
    cleared: () =>
      shedding ? new Promise<void>((resolve) => waiting.push(resolve)) : Promise.resolve(),
  };
  return {
    shedder,
    set(on: boolean) {
      shedding = on;
      if (!on) {
        for (const resume of waiting) resume();
        waiting = [];
      }
    },
    get waiting() {
      return waiting.length;
    },
  };
}

const facts = () =>
  requestFacts(
    { requestId: "r", secure: false, peer: undefined, repeatedHeaders: new Set() },
    () => undefined,
  );
const call: OperationCall = { facts: facts(), header: () => undefined, readJson: () => ({}) };

describe("admission with shedding by delay", () => {
  const setUp = (ingestLimit: number) => {
    const manual = manualShedder();
    const refused: [AdmissionClass, RefusalReason][] = [];
    const admission = createAdmission({
      limits: { ingest: ingestLimit, read: 0 },
      shedder: manual.shedder,
      onRefused: (admissionClass, reason) => refused.push([admissionClass, reason]),
    });
    let served = 0;
    const serve: Operation = async () => {
      served++;
      return { message: create(CreateEventResponseSchema, {}) };
    };
    const operations = admission.operations(
      new Map<DescMethod, Operation>([
        [IngestService.method.createEvent, serve],
        [EventService.method.listEvents, serve],
        [AdminService.method.createProject, serve],
      ]),
    );
    const operation = (method: DescMethod) => {
      const found = operations.get(method);
      if (!found) throw new Error("no operation");
      return found;
    };
    return { manual, refused, admission, operation, served: () => served };
  };

  it("refuses calls of the limited classes with the count's answer while shedding, before taking a slot", async () => {
    const { manual, refused, admission, operation, served } = setUp(4);
    manual.set(true);
    for (const method of [IngestService.method.createEvent, EventService.method.listEvents]) {
      const error = await operation(method)(call).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).kind).toBe("unavailable");
      expect((error as ServiceError).message).toBe(Messages.overloaded);
      expect((error as ServiceError).facts.retryAfterSeconds).toBe(1);
    }
    expect(served()).toBe(0);
    expect(admission.gates.ingest.inFlight).toBe(0);
    expect(refused).toEqual([
      ["ingest", "queue_delay"],
      ["read", "queue_delay"],
    ]);
    // AdminService is not limited, so not shed either.
    await operation(AdminService.method.createProject)(call);
    expect(served()).toBe(1);

    manual.set(false);
    await operation(IngestService.method.createEvent)(call);
    expect(served()).toBe(2);
    expect(admission.gates.ingest.inFlight).toBe(0);
  });

  it("the count's refusals are reported as in_flight", async () => {
    const { refused, admission, operation } = setUp(1);
    expect(admission.gates.ingest.tryEnter()).toBe(true);
    await expect(operation(IngestService.method.createEvent)(call)).rejects.toBeInstanceOf(
      ServiceError,
    );
    expect(refused).toEqual([["ingest", "in_flight"]]);
    admission.gates.ingest.leave();
  });

  it("holds a stream's event read while shedding until it ends, then answers it; no slot taken meanwhile", async () => {
    const manual = manualShedder();
    const admission = createAdmission({ limits: { ingest: 2, read: 0 }, shedder: manual.shedder });
    const answering: StreamOperation = async function* (streamCall) {
      for await (const read of streamCall.requests) {
        read();
        yield create(IngestEventsResponseSchema, {});
      }
    };
    const stream = admission
      .streams(new Map([[IngestService.method.ingestEvents, answering]]))
      .get(IngestService.method.ingestEvents);
    if (!stream) throw new Error("no stream operation");
    const streamCall: StreamCall = {
      facts: facts(),
      header: () => undefined,
      requests: (async function* () {
        for (let i = 0; i < 3; i++) yield () => ({ event: {} });
      })(),
    };
    manual.set(true);
    const replies = stream(streamCall)[Symbol.asyncIterator]();
    let answered = false;
    const first = replies.next().then((next) => {
      answered = true;
      return next;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(answered).toBe(false);
    expect(manual.waiting).toBe(1);
    expect(admission.gates.ingest.inFlight).toBe(0);

    manual.set(false);
    expect((await first).done).toBe(false);
    let count = 1;
    for (let next = await replies.next(); !next.done; next = await replies.next()) count++;
    expect(count).toBe(3);
    expect(admission.gates.ingest.inFlight).toBe(0);
  });
});
