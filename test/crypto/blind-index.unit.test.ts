import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  blindIndex,
  blindIndexes,
  queryToken,
  searchTokens,
} from "../../src/crypto/blind-index.js";

const key = randomBytes(32);

describe("blind indexes", () => {
  it("are deterministic per key and 16 bytes long", () => {
    expect(blindIndex(key, "actorId", "user_1")).toEqual(blindIndex(key, "actorId", "user_1"));
    expect(blindIndex(key, "actorId", "user_1")).toHaveLength(16);
    expect(blindIndex(randomBytes(32), "actorId", "user_1")).not.toEqual(
      blindIndex(key, "actorId", "user_1"),
    );
  });

  it("differ between columns, values, and across the direct/hashed encoding boundary", () => {
    const values = [
      "",
      "a",
      "a\0",
      "abcdefghijklmn", // 14 bytes: direct
      "abcdefghijklmno", // 15 bytes: hashed
      "é".repeat(7), // 14 bytes of UTF-8
      "é".repeat(8),
      "x".repeat(500),
    ];
    const seen = new Set<string>();
    for (const column of ["actorId", "entityId", "search"]) {
      for (const index of blindIndexes(key, column, values)) seen.add(index.toString("hex"));
    }
    expect(seen.size).toBe(values.length * 3);
  });

  it("batch and single computation agree", () => {
    const values = ["p:inv", "p:invoice", "w:a", "x".repeat(40)];
    const batch = blindIndexes(key, "search", values);
    for (const [i, value] of values.entries()) {
      expect(batch[i]).toEqual(blindIndex(key, "search", value));
    }
  });

  it("refuse an unknown column rather than mixing its values with another's", () => {
    expect(() => blindIndex(key, "nope", "x")).toThrow(/column/);
  });
});

describe("search tokens", () => {
  it("index prefixes of 3 to 32 characters, and whole words only outside that range", () => {
    const tokens = searchTokens(["Invoice UPDATED by JC", "x".repeat(40)]);
    expect(tokens).toContain("p:inv");
    expect(tokens).toContain("p:invoice");
    expect(tokens).toContain("p:updated");
    expect(tokens).toContain("w:by");
    expect(tokens).toContain("w:jc");
    expect(tokens).toContain(`w:${"x".repeat(40)}`);
    expect(tokens).toContain(`p:${"x".repeat(32)}`);
    expect(tokens).not.toContain("w:invoice");
    expect(tokens).not.toContain("p:in");
  });

  it("a query word finds the token its whole-word or prefix match was stored under", () => {
    const stored = new Set(searchTokens(["Jane Cooper", "ab", "y".repeat(33)]));
    for (const word of ["jane", "coop", "cooper", "ab", "y".repeat(33)]) {
      expect(stored.has(queryToken(word)), word).toBe(true);
    }
    expect(stored.has(queryToken("oper"))).toBe(false);
  });
});
