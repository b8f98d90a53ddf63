/**
 * The integrator's plaintext cache (log/plaintext-cache.ts): an entry is taken once,
 * the oldest goes first when full, values sealed elsewhere (no plaintext) are not kept.
 */
import { describe, expect, it } from "vitest";
import type { SealedEvent } from "../../src/crypto/event-cipher.js";
import { createPlaintextCache } from "../../src/log/plaintext-cache.js";

const sealed = (text: string, withPlaintext = true): SealedEvent => ({
  keyVersion: 1,
  payload: Buffer.from("sealed"),
  context: undefined,
  ...(withPlaintext ? { plaintext: { payload: text, context: undefined } } : {}),
});

describe("the plaintext cache", () => {
  it("gives an entry once, and nothing for an event it never held", () => {
    const cache = createPlaintextCache();
    cache.remember([{ eventId: "a", sealed: sealed("A") }]);
    expect(cache.take("b")).toBeUndefined();
    expect(cache.take("a")).toEqual({ payload: "A", context: undefined });
    expect(cache.take("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("pushes the oldest entries out when full, and keeps nothing sealed elsewhere", () => {
    const cache = createPlaintextCache(3);
    cache.remember(["a", "b", "c", "d"].map((id) => ({ eventId: id, sealed: sealed(id) })));
    cache.remember([{ eventId: "e", sealed: sealed("e", false) }]);
    expect(cache.size).toBe(3);
    expect(cache.take("a")).toBeUndefined();
    expect(cache.take("e")).toBeUndefined();
    expect(["b", "c", "d"].map((id) => cache.take(id)?.payload)).toEqual(["b", "c", "d"]);
  });

  it("stays within its capacity over many rounds, entries taken or not, and keeps the newest", () => {
    const cache = createPlaintextCache(5);
    for (let i = 0; i < 1_000; i++) {
      cache.remember([{ eventId: `e${i}`, sealed: sealed(`e${i}`) }]);
      // Every third entry is taken at once, as the integrator takes most of them.
      if (i % 3 === 0) expect(cache.take(`e${i}`)?.payload).toBe(`e${i}`);
      expect(cache.size).toBeLessThanOrEqual(5);
    }
    expect(cache.take("e994")).toBeUndefined();
    expect(["e995", "e997", "e998"].map((id) => cache.take(id)?.payload)).toEqual([
      "e995",
      "e997",
      "e998",
    ]);
    // An id remembered twice is given once.
    cache.remember(["x", "x"].map((id) => ({ eventId: id, sealed: sealed(id) })));
    expect(cache.take("x")?.payload).toBe("x");
    expect(cache.take("x")).toBeUndefined();
  });

  it("keeps nothing with a capacity of 0", () => {
    const cache = createPlaintextCache(0);
    cache.remember([{ eventId: "a", sealed: sealed("A") }]);
    expect(cache.size).toBe(0);
  });
});
