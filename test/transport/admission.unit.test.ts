/**
 * The gate of admission control (src/transport/admission.ts): what a stream event waits
 * on when no slot is free. Slots given back go to those waiting, first come first served;
 * a request's tryEnter finds none while any waits; a wait its client abandons takes no
 * slot and leaves the queue.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createGate } from "../../src/transport/admission.js";

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
