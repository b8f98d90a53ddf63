import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  blindIndex,
  blindIndexBlock,
  blindIndexes,
  blindIndexesOf,
  INDEXED_PREFIXES,
  isExactSearchTerm,
  queryToken,
  searchMatches,
  searchTokenIds,
  searchTokens,
  words,
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
  it("index prefixes of 3, 4, 6 and 8 characters, and whole words shorter than 3", () => {
    const tokens = searchTokens(["Invoice UPDATED by JC", "x".repeat(40)]);
    expect(tokens).toContain("p:inv");
    expect(tokens).toContain("p:invo");
    expect(tokens).toContain("p:invoic");
    expect(tokens).toContain("p:updated".slice(0, 8));
    expect(tokens).toContain("w:by");
    expect(tokens).toContain("w:jc");
    expect(tokens).toContain(`p:${"x".repeat(8)}`);
    expect(tokens).not.toContain("p:invoice");
    expect(tokens).not.toContain(`p:${"x".repeat(9)}`);
    expect(tokens).not.toContain(`w:${"x".repeat(40)}`);
    expect(tokens).not.toContain("w:invoice");
    expect(tokens).not.toContain("p:in");
  });

  it("a query word's token is its longest indexed prefix; exact only at an indexed length", () => {
    expect(queryToken("ab")).toBe("w:ab");
    expect(queryToken("abc")).toBe("p:abc");
    expect(queryToken("abcde")).toBe("p:abcd");
    expect(queryToken("abcdefg")).toBe("p:abcdef");
    expect(queryToken("abcdefghijk")).toBe("p:abcdefgh");
    expect(queryToken("日本語の文書")).toBe("p:日本語の文書");
    expect(queryToken("日本語の文書です")).toBe("p:日本語の文書です");
    expect(["ab", "abc", "abcd", "abcdef", "abcdefgh"].every(isExactSearchTerm)).toBe(true);
    expect(["abcde", "abcdefg", "abcdefghi", "a".repeat(33)].some(isExactSearchTerm)).toBe(false);
  });

  it("a term matches a word's prefix from 3 to 32 characters, and only a whole word outside", () => {
    const texts = ["Reconciling payments", "ab", `${"y".repeat(34)} ${"z".repeat(33)}`];
    expect(searchMatches(texts, ["reconcil"])).toBe(true);
    expect(searchMatches(texts, ["reconcili"])).toBe(true);
    expect(searchMatches(texts, ["reconciliation"])).toBe(false);
    expect(searchMatches(texts, ["payme", "ab"])).toBe(true);
    expect(searchMatches(texts, ["payme", "abc"])).toBe(false);
    expect(searchMatches(texts, ["a"])).toBe(false);
    expect(searchMatches(texts, ["aymen"])).toBe(false);
    // Longer than 32: whole words only, as the w: token of the old scheme matched them.
    expect(searchMatches(texts, ["y".repeat(32)])).toBe(true);
    expect(searchMatches(texts, ["y".repeat(33)])).toBe(false);
    expect(searchMatches(texts, ["y".repeat(34)])).toBe(true);
    expect(searchMatches(texts, ["z".repeat(33)])).toBe(true);
    expect(searchMatches(texts, [])).toBe(true);
  });

  it("a query word finds the token its whole-word or prefix match was stored under", () => {
    const stored = new Set(searchTokens(["Jane Cooper", "ab", "y".repeat(33)]));
    for (const word of ["jane", "coop", "cooper", "ab", "y".repeat(33)]) {
      expect(stored.has(queryToken(word)), word).toBe(true);
    }
    expect(stored.has(queryToken("oper"))).toBe(false);
  });
});

// The encoding and the tokens are stored: the fast paths must give exactly what this
// plain statement of them gives, or old events would stop matching.
function referenceIndexes(key: Buffer, entries: [string, string][]): Buffer[] {
  const codes: Record<string, number> = { search: 1, actorId: 2, entityType: 3, entityId: 4 };
  const blocks = Buffer.alloc(entries.length * 16);
  entries.forEach(([column, value], i) => {
    const length = Buffer.byteLength(value, "utf8");
    if (length <= 14) {
      blocks[i * 16] = length;
      blocks[i * 16 + 1] = codes[column] ?? -1;
      blocks.write(value, i * 16 + 2, "utf8");
    } else {
      blocks[i * 16] = 0xff;
      createHash("sha256")
        .update(`${column}\0${value}`)
        .digest()
        .copy(blocks, i * 16 + 1, 0, 15);
    }
  });
  const cipher = createCipheriv("aes-256-ecb", key, null).setAutoPadding(false);
  const out = Buffer.concat([cipher.update(blocks), cipher.final()]);
  return entries.map((_, i) => out.subarray(i * 16, i * 16 + 16));
}

function referenceTokens(texts: string[]): Set<string> {
  const tokens = new Set<string>();
  for (const text of texts) {
    for (const word of text
      .normalize("NFKC")
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)) {
      if (word === "") continue;
      const chars = Array.from(word);
      if (chars.length < 3) tokens.add(`w:${word}`);
      for (const n of [3, 4, 6, 8]) {
        if (n <= chars.length) tokens.add(`p:${chars.slice(0, n).join("")}`);
      }
    }
  }
  return tokens;
}

describe("stored encodings", () => {
  const alphabet = ["a", "Z", "0", " ", "-", "é", "ß", "Å", "ﬁ", "日", "😀", "\0", "_", "."];
  const randomText = (length: number) =>
    Array.from({ length }, () => alphabet[Math.floor(Math.random() * alphabet.length)] ?? "a").join(
      "",
    );

  it("blind indexes equal the reference encoding for ASCII and non-ASCII values", () => {
    const entries: [string, string][] = [];
    for (let length = 0; length <= 40; length++) {
      for (let n = 0; n < 20; n++) {
        const column = ["search", "actorId", "entityType", "entityId"][n % 4] ?? "search";
        entries.push([column, n % 2 === 0 ? "x".repeat(length) : randomText(length)]);
      }
    }
    const key = randomBytes(32);
    // Twice: the cached cipher must give the same answer on its next use.
    for (let round = 0; round < 2; round++) {
      expect(blindIndexesOf(key, entries)).toEqual(referenceIndexes(key, entries));
    }
    // The search tokens of an event are stored as one block of indexes.
    const tokens = entries.map(([, value]) => value);
    expect(blindIndexBlock(key, "search", tokens)).toEqual(
      Buffer.concat(
        referenceIndexes(
          key,
          tokens.map((value) => ["search", value]),
        ),
      ),
    );
    // Their ids are the first 8 bytes of each index, as a signed 64-bit integer.
    expect(searchTokenIds(key, tokens)).toEqual(
      referenceIndexes(
        key,
        tokens.map((value) => ["search", value]),
      ).map((index) => BigInt.asIntN(64, BigInt(`0x${index.subarray(0, 8).toString("hex")}`))),
    );
  });

  it("keep lone surrogates apart from each other and from U+FFFD (WTF-8, not UTF-8)", () => {
    const values = ["A\ud800", "A\udfff", "A\ufffd", "\ud800", "\udc00", "\ufffd", "\ud800\udc00"];
    const long = values.map((value) => `${"x".repeat(20)}${value}`);
    for (const set of [values, long]) {
      const indexes = blindIndexes(key, "tenantId", set).map((index) => index.toString("hex"));
      expect(new Set(indexes).size).toBe(set.length);
    }
    // The encoding, byte for byte: U+D800 as ED A0 80, where UTF-8 would write EF BF BD.
    const direct = Buffer.alloc(16);
    Buffer.from([5, 2, 0x41, 0xed, 0xa0, 0x80, 0x42]).copy(direct);
    const cipher = createCipheriv("aes-256-ecb", key, null).setAutoPadding(false);
    expect(blindIndex(key, "actorId", "A\ud800B")).toEqual(cipher.update(direct));
    const hashed = Buffer.alloc(16);
    hashed[0] = 0xff;
    createHash("sha256")
      .update(
        Buffer.concat([
          Buffer.from("actorId\0"),
          Buffer.from("y".repeat(14)),
          Buffer.from([0xed, 0xb0, 0x80]),
        ]),
      )
      .digest()
      .copy(hashed, 1, 0, 15);
    expect(blindIndex(key, "actorId", `${"y".repeat(14)}\udc00`)).toEqual(cipher.update(hashed));
    // A well-formed pair is one code point, encoded as UTF-8 (the emoji's index).
    expect(blindIndex(key, "actorId", "\ud83d\ude00")).toEqual(
      referenceIndexes(key, [["actorId", "😀"]])[0],
    );
  });

  it("search tokens equal the reference tokens", () => {
    for (let n = 0; n < 300; n++) {
      const texts = [
        randomText(n % 50),
        "Invoice updated INVOICE",
        `${randomText(5)} ${"y".repeat(n % 40)}`,
      ];
      expect(new Set(searchTokens(texts))).toEqual(referenceTokens(texts));
    }
  });

  it("a term's token, and the check after it, find exactly what the old tokens (every prefix of 3 to 32 characters) found", () => {
    // The tokens events were stored with before the indexed lengths were narrowed.
    const oldTokens = (texts: string[]) => {
      const tokens = new Set<string>();
      for (const word of texts.flatMap(words)) {
        const chars = Array.from(word);
        if (chars.length < 3 || chars.length > 32) tokens.add(`w:${word}`);
        for (let n = 3; n <= Math.min(chars.length, 32); n++) {
          tokens.add(`p:${chars.slice(0, n).join("")}`);
        }
      }
      return tokens;
    };
    const oldQueryToken = (term: string) => {
      const length = Array.from(term).length;
      return length >= 3 && length <= 32 ? `p:${term}` : `w:${term}`;
    };
    const small = ["a", "b", "é", "日", "1"];
    const pick = (length: number) =>
      Array.from({ length }, () => small[Math.floor(Math.random() * small.length)] ?? "a").join("");
    for (let n = 0; n < 400; n++) {
      const texts = [`${pick(n % 12)} ${pick((n * 7) % 40)}`, pick(1 + (n % 5))];
      const stored = oldTokens(texts);
      const narrowed = new Set(searchTokens(texts));
      for (const term of [pick(1 + (n % 3)), pick(3 + (n % 6)), pick(9 + (n % 30))].flatMap(
        words,
      )) {
        const found = stored.has(oldQueryToken(term));
        expect(searchMatches(texts, [term]), term).toBe(found);
        // Events stored either way have the term's token whenever the term matches them.
        if (found) {
          expect(stored.has(queryToken(term)), term).toBe(true);
          expect(narrowed.has(queryToken(term)), term).toBe(true);
        }
        // An exact term's token alone is the answer.
        if (isExactSearchTerm(term)) expect(narrowed.has(queryToken(term)), term).toBe(found);
      }
    }
    expect(INDEXED_PREFIXES).toEqual([3, 4, 6, 8]);
  });
});
