/**
 * The pushback's decisions (src/log/ingest-pushback.ts) on a made-up database: which
 * logs it refuses after a sample, that a stream's wait ends with the sample that finds its
 * log caught up, and that a wait past its bound is refused.
 */
import { describe, expect, it } from "vitest";
import type { KeyPrincipal } from "../../src/auth/authenticator.js";
import { ServiceError } from "../../src/errors.js";
import {
  BacklogEstimate,
  backlogBudget,
  createIngestPushback,
  createPassMeter,
  createRateMeter,
  MIN_BACKLOG_BUDGET,
} from "../../src/log/ingest-pushback.js";
import type { Queryable } from "../../src/store/db.js";

const principal = (projectId: string): KeyPrincipal => ({
  kind: "api_key",
  keyId: "k",
  projectId,
  environment: "test",
  plan: "free",
});

interface FakeBacklog {
  projectId: string;
  /** Seconds since its oldest pending event was received (default: 10, over any bound here). */
  age?: number;
  pending?: number;
}

/**
 * A database whose backlogs are whatever `backlogs` holds when queried, and whose logs have
 * integrated `figures.integrated` events in all.
 */
function fakeDb(backlogs: FakeBacklog[], figures = { integrated: 0 }) {
  const asked: unknown[][] = [];
  const db: Queryable = {
    async query<Row>(_sql: string, params: readonly unknown[] = []) {
      asked.push([...params]);
      const integrated = String(figures.integrated);
      if (backlogs.length === 0) {
        return [
          { project_id: null, environment: null, age: null, pending: null, integrated },
        ] as Row[];
      }
      return backlogs.map((log) => ({
        project_id: log.projectId,
        environment: "test",
        age: log.age ?? 10,
        pending: log.pending ?? 1,
        integrated,
      })) as Row[];
    },
  };
  return { db, asked };
}

const logger = { warn() {} };
const refusedWith = async (work: Promise<unknown>) => {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
};

describe("ingest pushback", () => {
  it("refuses only the logs the last sample found over the bound, with Retry-After 1, and takes events once the lag is stale", async () => {
    const lagging = [{ projectId: "p1" }];
    const { db, asked } = fakeDb(lagging);
    let refused = 0;
    let clock = 10_000;
    const pushback = createIngestPushback({
      db,
      logger,
      maxLagMs: 3_000,
      now: () => clock,
      requestWaitMs: 0,
      onRefused: () => refused++,
    });
    await pushback.admit(principal("p1")); // nothing sampled yet
    await pushback.sample();
    // The count's cap, and the stall threshold (max(10 s, 3 × bound)) in seconds.
    expect(asked[0]).toEqual([100_000, 10]);
    const error = await refusedWith(pushback.admit(principal("p1")));
    expect(error.kind).toBe("unavailable");
    expect(error.message).toBe(
      "Service temporarily unavailable: recent events are still being indexed",
    );
    expect(error.facts.retryAfterSeconds).toBe(1);
    expect(pushback.accepting(principal("p1"))).toBe(false);
    await pushback.admit(principal("p2"));
    await pushback.admit({ ...principal("p1"), environment: "live" });
    expect(refused).toBe(1);

    // No sample for over three intervals (the database away): the lag is not known.
    clock += 1_501;
    expect(pushback.accepting(principal("p1"))).toBe(true);
    await pushback.sample();
    expect(pushback.accepting(principal("p1"))).toBe(false);

    lagging.length = 0;
    await pushback.sample();
    await pushback.admit(principal("p1"));
  });

  it("holds a call for a log behind until a sample finds its log caught up, and reports the wait", async () => {
    const lagging = [{ projectId: "p1" }];
    const { db } = fakeDb(lagging);
    const waits: number[] = [];
    let refused = 0;
    const pushback = createIngestPushback({
      db,
      logger,
      maxLagMs: 1_000,
      requestWaitMs: 30_000,
      onWaited: (seconds) => waits.push(seconds),
      onRefused: () => refused++,
    });
    await pushback.sample();
    let taken = false;
    const waiting = pushback.admit(principal("p1")).then(() => {
      taken = true;
    });
    // Looked at again every 25 ms: still behind, still waiting.
    await new Promise((resolve) => setTimeout(resolve, 120));
    await pushback.sample();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(taken).toBe(false);
    // Other logs are taken at once meanwhile.
    await pushback.admit(principal("p2"));
    lagging.length = 0;
    await pushback.sample();
    await waiting;
    expect(taken).toBe(true);
    expect(refused).toBe(0);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(0.15);
  });

  it("takes a waiting call once the integrators' drain brings its log under the budget, without a new sample", async () => {
    // Oldest pending event 2 s old (over half the 3 s bound) and 40,000 pending, against
    // 10,000 events/s: a budget of 30,000.
    const { db } = fakeDb([{ projectId: "p1", age: 2, pending: 40_000 }]);
    let clock = 0;
    const pushback = createIngestPushback({
      db,
      logger,
      maxLagMs: 3_000,
      now: () => clock,
      warmUpMs: 0,
      requestWaitMs: 5_000,
    });
    pushback.passed(10_000, 1_000);
    await pushback.sample();
    let taken = false;
    const waiting = pushback.admit(principal("p1")).then(() => {
      taken = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(taken).toBe(false);
    // 1.1 s later 11,000 are drained: 29,000 pending, under the budget (and the sample is
    // still fresh: under three intervals old).
    clock = 1_100;
    await waiting;
    expect(taken).toBe(true);
  });

  it("refuses a call still behind after its wait, and at once beyond the calls allowed to wait", async () => {
    const { db } = fakeDb([{ projectId: "p1" }]);
    let refused = 0;
    const pushback = createIngestPushback({
      db,
      logger,
      maxLagMs: 1_000,
      requestWaitMs: 200,
      maxWaiting: 1,
      onRefused: () => refused++,
    });
    await pushback.sample();
    const started = performance.now();
    const first = refusedWith(pushback.admit(principal("p1")));
    // The one waiting place is taken: the second call is refused without waiting.
    const second = await refusedWith(pushback.admit(principal("p1")));
    expect(second.message).toBe(
      "Service temporarily unavailable: recent events are still being indexed",
    );
    expect(performance.now() - started).toBeLessThan(150);
    expect(refused).toBe(1);
    const error = await first;
    expect(error.kind).toBe("unavailable");
    expect(error.facts.retryAfterSeconds).toBe(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    expect(refused).toBe(2);
    // Its place given back: a call waits again (and is refused after its wait).
    const third = pushback.admit(principal("p1"));
    const thirdStarted = performance.now();
    await refusedWith(third);
    expect(performance.now() - thirdStarted).toBeGreaterThanOrEqual(150);
  });

  it("holds a stream's group until a sample finds its log caught up", async () => {
    const lagging = [{ projectId: "p1" }];
    const { db } = fakeDb(lagging);
    const pushback = createIngestPushback({ db, logger, maxLagMs: 1_000 });
    await pushback.sample();
    let accepted = false;
    const waiting = pushback.whenAccepting(principal("p1")).then(() => {
      accepted = true;
    });
    await pushback.sample(); // still behind
    await new Promise((resolve) => setImmediate(resolve));
    expect(accepted).toBe(false);
    lagging.length = 0;
    await pushback.sample();
    await waiting;
    expect(accepted).toBe(true);
  });

  it("refuses a stream whose log stays behind past the wait", async () => {
    const { db } = fakeDb([{ projectId: "p1" }]);
    const pushback = createIngestPushback({ db, logger, maxLagMs: 1_000, streamWaitMs: 50 });
    await pushback.sample();
    const error = await refusedWith(pushback.whenAccepting(principal("p1")));
    expect(error.kind).toBe("unavailable");
    await pushback.whenAccepting(principal("p2"));
  });

  it("bounds the backlog by what the integrators drain within the bound, refusing the logs over their share", () => {
    const log = (projectId: string, pending: number, oldestAgeSeconds = 2) => ({
      projectId,
      environment: "test",
      pending,
      oldestAgeSeconds,
    });
    // 2,000 events/s for 3 s.
    expect(backlogBudget(2_000, 3_000)).toBe(6_000);
    expect(backlogBudget(10, 3_000)).toBe(MIN_BACKLOG_BUDGET);
    const key = (projectId: string) => `${projectId}\u0000test`;
    const refusedAt = (estimate: BacklogEstimate, now: number, ...projects: string[]) =>
      projects.filter((projectId) => estimate.refuses(key(projectId), now));
    const sampled = (logs: ReturnType<typeof log>[], rate: number | undefined) =>
      new BacklogEstimate(logs, 3_000, rate, 1_000);

    // Under the budget together: only age refuses.
    const under = sampled([log("a", 5_000), log("b", 900, 3.5)], 2_000);
    expect(refusedAt(under, 1_000, "a", "b", "c")).toEqual(["b"]);
    // Over it: the logs holding more than an equal share (3,000 each) are refused.
    const over = sampled([log("a", 5_500), log("b", 900)], 2_000);
    expect(refusedAt(over, 1_000, "a", "b")).toEqual(["a"]);
    expect(refusedAt(sampled([log("a", 5_500), log("b", 3_500)], 2_000), 1_000, "a", "b")).toEqual([
      "a",
      "b",
    ]);
    // A young backlog (its oldest event under half the bound) is not refused for its size,
    // until it ages past half the bound.
    const young = sampled([log("a", 90_000, 1.2)], 2_000);
    expect(refusedAt(young, 1_000, "a")).toEqual([]);
    expect(refusedAt(young, 1_400, "a")).toEqual(["a"]);
    // No rate measured yet: age alone.
    expect(refusedAt(sampled([log("a", 90_000)], undefined), 1_000, "a")).toEqual([]);
    // Between samples the integrators drain at their rate: 400 events in 200 ms bring
    // 6,400 back to the budget.
    const draining = sampled([log("a", 6_400)], 2_000);
    expect(refusedAt(draining, 1_100, "a")).toEqual(["a"]);
    expect(refusedAt(draining, 1_200, "a")).toEqual([]);

    // Appended since the sample: counted at once. 5,000 + 1,000 stays within the budget;
    // the next event crosses it, and "a" is over its share (3,000 each).
    const counting = sampled([log("a", 4_000), log("b", 1_000)], 2_000);
    for (let n = 0; n < 1_000; n++) counting.appended(key("a"));
    expect(refusedAt(counting, 1_000, "a", "b")).toEqual([]);
    counting.appended(key("a"));
    expect(refusedAt(counting, 1_000, "a", "b")).toEqual(["a"]);
  });

  it("measures the integrators' rate only while they are busy, and refuses a backlog the rate cannot drain within the bound", async () => {
    const backlogs: FakeBacklog[] = [];
    const figures = { integrated: 0 };
    const { db } = fakeDb(backlogs, figures);
    let clock = 0;
    const pushback = createIngestPushback({
      db,
      logger,
      maxLagMs: 2_000,
      now: () => clock,
      warmUpMs: 0,
    });
    const sampleAt = async (ms: number, integrated: number) => {
      clock = ms;
      figures.integrated = integrated;
      await pushback.sample();
    };
    // Idle, then busy: nothing measured across the idle sample (its 10,000 events would
    // otherwise read as a rate), nor before 2 s of busy samples, so a young backlog of
    // 50,000 is not refused yet.
    await sampleAt(0, 0);
    backlogs.push({ projectId: "p1", age: 1.2, pending: 50_000 });
    for (let at = 500; at < 2_500; at += 500) {
      await sampleAt(at, 10_000 + 3 * (at - 500));
      expect(pushback.accepting(principal("p1"))).toBe(true);
    }
    // Busy for 2 s while 6,000 events were integrated: 3,000/s, so the budget is 6,000
    // events (2 s of it) and 50,000 pending is refused, the oldest only 1.2 s old (over
    // half the bound, not over it).
    await sampleAt(2_500, 16_000);
    expect(pushback.accepting(principal("p1"))).toBe(false);
    // Drained to under the budget: taken again.
    backlogs[0] = { projectId: "p1", age: 1.2, pending: 5_000 };
    await sampleAt(3_000, 17_500);
    expect(pushback.accepting(principal("p1"))).toBe(true);
    // What this instance appends before the next sample counts: 1,001 more cross the budget.
    for (let n = 0; n < 1_000; n++) pushback.appended(principal("p1"));
    expect(pushback.accepting(principal("p1"))).toBe(true);
    pushback.appended(principal("p1"));
    expect(pushback.accepting(principal("p1"))).toBe(false);
    // ...until the integrators have drained one more event at their rate (1 ms at 3,000/s).
    clock += 1;
    expect(pushback.accepting(principal("p1"))).toBe(true);
  });

  it("goes by age alone for its first 10 s: the first passes after a start run cold", async () => {
    const backlogs: FakeBacklog[] = [{ projectId: "p1", age: 1.2, pending: 50_000 }];
    const { db } = fakeDb(backlogs, { integrated: 0 });
    let clock = 0;
    const pushback = createIngestPushback({ db, logger, maxLagMs: 2_000, now: () => clock });
    clock = 5_000;
    pushback.passed(3_000, 1_000); // 3,000 events/s: a budget of 6,000 once it counts
    await pushback.sample();
    expect(pushback.accepting(principal("p1"))).toBe(true);
    clock = 10_000;
    await pushback.sample();
    expect(pushback.accepting(principal("p1"))).toBe(false);
  });

  it("rates the integrators over the last 2 s of busy samples, starts again after an idle sample, and forgets a rate after 10 s", () => {
    let clock = 0;
    const meter = createRateMeter(() => clock);
    const at = (ms: number, integrated: number, busy = true) => {
      clock = ms;
      return meter.record(BigInt(integrated), busy);
    };
    expect(at(0, 0)).toBeUndefined();
    expect(at(500, 0)).toBeUndefined();
    expect(at(1_000, 4_000)).toBeUndefined(); // a pass's lump: 8,000/s over 500 ms
    expect(at(1_500, 4_000)).toBeUndefined();
    expect(at(2_000, 4_000)).toBe(2_000); // 4,000 over 2 s
    expect(at(2_500, 4_500)).toBe(2_250);
    expect(at(3_000, 4_500)).toBe(250);
    // An idle sample ends the span: nothing new is measured until 2 s of busy samples.
    expect(at(3_500, 4_500, false)).toBe(250);
    expect(at(4_000, 4_500)).toBe(250);
    expect(at(6_000, 5_500)).toBe(500); // 1,000 over 2 s
    expect(at(16_100, 5_500, false)).toBeUndefined(); // nothing measured for over 10 s
  });

  it("rates this instance's integrator by its passes' events over their time, for 10 s", () => {
    let clock = 0;
    const meter = createPassMeter(() => clock);
    expect(meter.capacity()).toBeUndefined();
    meter.passed(0, 5); // nothing integrated: says nothing
    expect(meter.capacity()).toBeUndefined();
    meter.passed(1_000, 400);
    clock = 2_000;
    meter.passed(3_000, 600);
    expect(meter.capacity()).toBe(4_000); // 4,000 events in 1 s of passes
    clock = 10_500;
    expect(meter.capacity()).toBe(5_000); // the first pass forgotten
    clock = 12_001;
    expect(meter.capacity()).toBeUndefined();
  });
});
