/**
 * The viewer's token source on its own (it has no DOM): one provider call at a time, a
 * refresh before expiry measured on its own clock, short tokens not refreshed in a
 * loop, and provider failures.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  createTokenSource,
  TokenProviderError,
  tokenTimes,
} from "../../viewer/src/token-source.js";

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
/** An unsigned JWT with these claims (the source reads, never verifies). */
const jwt = (claims: Record<string, unknown>) =>
  `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url(claims)}.c2lnbmF0dXJl`;

/** A provider of tokens issued now (by `clock`) for `lifetime` seconds; counts calls. */
function provider(lifetime: number, clock: () => number = () => Date.now()) {
  let calls = 0;
  const next = async () => {
    calls++;
    const iat = Math.floor(clock() / 1000);
    return jwt({ iat, exp: iat + lifetime, jti: String(calls) });
  };
  return { next, calls: () => calls };
}

describe("token source", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse("2024-05-01T12:00:00Z") });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("reads iat and exp from a JWT's payload, and nothing from other strings", () => {
    expect(tokenTimes(jwt({ iat: 10, exp: 100 }))).toEqual({ issuedAt: 10, expiresAt: 100 });
    expect(tokenTimes("not-a-token")).toEqual({});
    expect(tokenTimes("a.%%%.c")).toEqual({});
  });

  it("asks the provider once however many requests want a token at the same time", async () => {
    const tokens = provider(90);
    const source = createTokenSource(tokens.next);
    const got = await Promise.all([source.get(), source.get(), source.get()]);
    expect(new Set(got).size).toBe(1);
    expect(tokens.calls()).toBe(1);
    expect(await source.get()).toBe(got[0]);
    expect(tokens.calls()).toBe(1);
    source.stop();
  });

  it("replaces a 90 s token 15 s before it expires, without a request asking", async () => {
    const tokens = provider(90);
    const source = createTokenSource(tokens.next);
    const first = await source.get();
    await vi.advanceTimersByTimeAsync(74_000);
    expect(tokens.calls()).toBe(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(tokens.calls()).toBe(2);
    expect(await source.get()).not.toBe(first);
    source.stop();
  });

  it("replaces a 3 s token halfway through its life, not in a loop", async () => {
    const tokens = provider(3);
    const source = createTokenSource(tokens.next);
    await source.get();
    await vi.advanceTimersByTimeAsync(1_400);
    expect(tokens.calls()).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(tokens.calls()).toBe(2);
    await vi.advanceTimersByTimeAsync(15_000);
    // One call every 1.5 s: 10 more in 15 s.
    expect(tokens.calls()).toBe(12);
    source.stop();
  });

  it("measures a token's life from its arrival, so a browser clock an hour off changes nothing", async () => {
    // The service's clock is an hour behind the browser's.
    const tokens = provider(90, () => Date.now() - 3_600_000);
    const source = createTokenSource(tokens.next);
    const first = await source.get();
    expect(await source.get()).toBe(first);
    await vi.advanceTimersByTimeAsync(74_000);
    expect(tokens.calls()).toBe(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(tokens.calls()).toBe(2);
    source.stop();
  });

  it("after stop(), a request past the refresh time still gets a new token", async () => {
    const tokens = provider(90);
    const source = createTokenSource(tokens.next);
    const first = await source.get();
    source.stop();
    await vi.advanceTimersByTimeAsync(80_000);
    expect(tokens.calls()).toBe(1);
    expect(await source.get()).not.toBe(first);
    expect(tokens.calls()).toBe(2);
    source.stop();
  });

  it("refresh() asks the provider whatever the current token's expiry", async () => {
    const tokens = provider(3600);
    const source = createTokenSource(tokens.next);
    const first = await source.get();
    const second = await source.refresh();
    expect(second).not.toBe(first);
    expect(await source.get()).toBe(second);
    source.stop();
  });

  it("a token without exp is kept until refresh() is asked", async () => {
    let calls = 0;
    const source = createTokenSource(() => {
      calls++;
      return `opaque-${calls}`;
    });
    expect(await source.get()).toBe("opaque-1");
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(await source.get()).toBe("opaque-1");
    expect(await source.refresh()).toBe("opaque-2");
  });

  it("the same token again is not asked for on a timer (a pasted token cannot be renewed)", async () => {
    const iat = Math.floor(Date.now() / 1000);
    const token = jwt({ iat, exp: iat + 3 });
    let calls = 0;
    const source = createTokenSource(() => {
      calls++;
      return token;
    });
    await source.get();
    await source.refresh();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls).toBe(2);
    // Getting it again did not make it younger: past its refresh time, a request asks.
    expect(await source.get()).toBe(token);
    expect(calls).toBe(3);
  });

  it("a provider that fails or returns no token fails with TokenProviderError", async () => {
    const failing = createTokenSource(() => Promise.reject(new Error("backend down")));
    await expect(failing.get()).rejects.toThrow(TokenProviderError);
    await expect(failing.get()).rejects.toThrow("backend down");
    const empty = createTokenSource(() => "  ");
    await expect(empty.get()).rejects.toThrow("the token provider returned no token");
  });

  it("a provider that fails while the current token is still valid leaves that token in use", async () => {
    let fail = false;
    const tokens = provider(90);
    const source = createTokenSource(() =>
      fail ? Promise.reject(new Error("down")) : tokens.next(),
    );
    const first = await source.get();
    fail = true;
    await vi.advanceTimersByTimeAsync(80_000);
    expect(await source.get()).toBe(first);
    await vi.advanceTimersByTimeAsync(15_000);
    await expect(source.get()).rejects.toThrow("down");
    source.stop();
  });
});
