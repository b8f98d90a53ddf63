/**
 * encodeHtml against the definition it implements: each of `&` `<` `>` `"` `'` replaced
 * by its entity, every other character (astral ones and lone surrogates too) unchanged.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeHtml } from "../../src/ingest/html-encoding.js";

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#x27;",
};
const byDefinition = (text: string) => text.replace(/[&<>"']/g, (char) => ENTITIES[char] ?? char);

describe("encodeHtml", () => {
  it("encodes the five characters and keeps everything else, wherever they stand", () => {
    const texts = fc.oneof(
      fc.string({ unit: fc.constantFrom("&", "<", ">", '"', "'", "a", "é", "😀", "\ud800") }),
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: "binary" }),
    );
    fc.assert(
      fc.property(texts, (text) => {
        expect(encodeHtml(text)).toBe(byDefinition(text));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ["", ""],
    ["plain", "plain"],
    ["&", "&amp;"],
    ["<b>", "&lt;b&gt;"],
    [`"it's"`, "&quot;it&#x27;s&quot;"],
    ["a&&b", "a&amp;&amp;b"],
    ["&amp;", "&amp;amp;"],
  ])("%j → %j", (text, encoded) => {
    expect(encodeHtml(text)).toBe(encoded);
  });
});
