/**
 * The pushback's decisions (src/log/ingest-pushback.ts) on a made-up database: which
 * logs it refuses after a sample, that a stream's wait ends with the sample that finds its
 * log caught up, and that a wait past its bound is refused.
 */
import { describe, expect, it } from "vitest";
import type { KeyPrincipal } from "../../src/auth/authenticator.js";
import { ServiceError } from "../../src/errors.js";
import { createIngestPushback } from "../../src/log/ingest-pushback.js";
import type { Queryable } from "../../src/store/db.js";

const principal = (projectId: string): KeyPrincipal => ({
  kind: "api_key",
  keyId: "k",
  projectId,
  environment: "test",
  plan: "free",
});

/** A database whose lagging logs are whatever `lagging` holds when queried. */
function fakeDb(lagging: { projectId: string }[]) {
  const asked: unknown[][] = [];
  const db: Queryable = {
    async query<Row>(_sql: string, params: readonly unknown[] = []) {
      asked.push([...params]);
      return lagging.map((log) => ({
        project_id: log.projectId,
        environment: "test",
        oldest: new Date(0),
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
      onRefused: () => refused++,
    });
    await pushback.admit(principal("p1")); // nothing sampled yet
    await pushback.sample();
    // The bound and the stall threshold (max(10 s, 3 × bound)) in seconds, for the database.
    expect(asked[0]).toEqual([3, 10]);
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
});
