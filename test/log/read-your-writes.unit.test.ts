/**
 * A list's wait for the integrator (log/read-your-writes.ts) reports how long it waited
 * whether it ends in the list or in the 503: the waits that end in a refusal are the
 * longest, and `audit_list_wait_seconds` left them out (found by an outside audit on
 * 2026-11-28).
 */
import { describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import { createReadYourWrites } from "../../src/log/read-your-writes.js";
import type { Queryable } from "../../src/store/db.js";

const HEAD = { xid: "20", id: "00000000-0000-7000-8000-000000000002" };

/** A log whose journal head is HEAD and whose integrated position is `integrated()`. */
function fakeLog(integrated: () => string): Queryable {
  const db = {
    async query(sql: string) {
      if (sql.includes("head_xid")) {
        return [
          {
            size: "1",
            integrated_xid: integrated(),
            integrated_id: HEAD.id,
            integrated_at: null,
            head_xid: HEAD.xid,
            head_id: HEAD.id,
          },
        ];
      }
      return [{ xid: integrated(), id: HEAD.id }];
    },
  };
  return db as unknown as Queryable;
}

describe("read-your-writes", () => {
  it("reports the wait of a list that the integrator caught up with", async () => {
    let xid = "10";
    const waits: number[] = [];
    const wait = createReadYourWrites({
      db: fakeLog(() => xid),
      nudge: () => setTimeout(() => (xid = HEAD.xid), 30),
      maxWaitMs: 1_000,
      onWaited: (seconds) => waits.push(seconds),
    });
    await wait.awaitIntegrated("p", "live");
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(0.025);
  });

  it("reports the wait of a list refused with 503 after waiting its bound", async () => {
    const waits: number[] = [];
    const wait = createReadYourWrites({
      db: fakeLog(() => "10"),
      nudge: () => {},
      maxWaitMs: 150,
      onWaited: (seconds) => waits.push(seconds),
    });
    const refusal = await wait.awaitIntegrated("p", "live").catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ServiceError);
    expect((refusal as ServiceError).kind).toBe("unavailable");
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(0.15);
  });

  it("reports nothing when the log was already integrated", async () => {
    const waits: number[] = [];
    const wait = createReadYourWrites({
      db: fakeLog(() => HEAD.xid),
      nudge: () => {},
      onWaited: (seconds) => waits.push(seconds),
    });
    await wait.awaitIntegrated("p", "live");
    expect(waits).toEqual([]);
  });
});
