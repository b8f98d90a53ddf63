/**
 * RFC 8785 canonicalisation against the RFC's own examples: the §3.2.2 serialisation
 * example, the §3.2.3 sorting example (UTF-16 code-unit order), and the Appendix B number
 * samples (IEEE 754 bit patterns and their canonical text).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalBytes, canonicalize } from "../../src/tlog/jcs.js";

function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe("RFC 8785", () => {
  it("serialises the §3.2.2 example exactly", () => {
    const input = `{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\"\\/",
      "literals": [null, true, false]
    }`;
    expect(canonicalize(JSON.parse(input))).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts members by UTF-16 code units (§3.2.3)", () => {
    const input = `{
      "\\u20ac": "Euro Sign",
      "\\r": "Carriage Return",
      "\\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\\ud83d\\ude00": "Emoji: Grinning Face",
      "\\u0080": "Control",
      "\\u00f6": "Latin Small Letter O With Diaeresis"
    }`;
    // Read the values in text order: JSON.parse would move the integer-like name "1" first.
    const values = [...canonicalize(JSON.parse(input)).matchAll(/:"([^"]*)"/g)].map((m) => m[1]);
    expect(values).toEqual([
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh",
    ]);
  });

  it("serialises the Appendix B numbers exactly", () => {
    const samples: [string, string][] = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"],
      ["0000000000000001", "5e-324"],
      ["8000000000000001", "-5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["ffefffffffffffff", "-1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["c340000000000000", "-9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af5", "9.999999999999997e+22"],
      ["44b52d02c7e14af6", "1e+23"],
      ["44b52d02c7e14af7", "1.0000000000000001e+23"],
      ["444b1ae4d6e2ef4e", "999999999999999700000"],
      ["444b1ae4d6e2ef4f", "999999999999999900000"],
      ["444b1ae4d6e2ef50", "1e+21"],
      ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["41b3de4355555553", "333333333.3333332"],
      ["41b3de4355555554", "333333333.33333325"],
      ["41b3de4355555555", "333333333.3333333"],
      ["41b3de4355555556", "333333333.3333334"],
      ["41b3de4355555557", "333333333.33333343"],
      ["becbf647612f3696", "-0.0000033333333333333333"],
      ["43143ff3c1cb0959", "1424953923781206.2"],
    ];
    for (const [bits, text] of samples) expect(canonicalize(fromBits(bits)), bits).toBe(text);
  });

  it("refuses NaN and infinities (Appendix B) and values JSON has not", () => {
    for (const bad of [
      fromBits("7fffffffffffffff"),
      fromBits("7ff0000000000000"),
      -Infinity,
      undefined,
      10n,
      () => 1,
      new Date(0),
      new Map(),
      { a: undefined },
    ]) {
      expect(() => canonicalize(bad), String(bad)).toThrow(/cannot canonicalize/);
    }
  });

  it("writes lone surrogates (not I-JSON) escaped as JSON.stringify does, so every stored string has a form", () => {
    expect(canonicalize("\ud800")).toBe('"\\ud800"');
    expect(canonicalize({ "\udc00x": 1 })).toBe('{"\\udc00x":1}');
    expect(canonicalize("\ud83d\ude00")).toBe('"😀"');
  });

  it("escapes controls as RFC 8785 says and leaves U+2028, U+007F and non-ASCII literal", () => {
    expect(canonicalize("\b\t\n\f\r\u0000\u001f\u007f\u2028/")).toBe(
      '"\\b\\t\\n\\f\\r\\u0000\\u001f\u007f\u2028/"',
    );
    expect(Array.from(canonicalBytes("é"))).toEqual([0x22, 0xc3, 0xa9, 0x22]);
  });

  it("nests without white space and keeps array order", () => {
    expect(canonicalize({ b: [3, { d: 1, c: [] }], a: {} })).toBe(
      '{"a":{},"b":[3,{"c":[],"d":1}]}',
    );
  });

  it("writes any JSON value as a member-by-member writer does, names like '1' and '__proto__' included", () => {
    // An independent writer of RFC 8785 (§3.2.2, §3.2.3), piece by piece.
    const reference = (value: unknown): string => {
      if (Array.isArray(value)) return `[${value.map(reference).join(",")}]`;
      if (typeof value === "object" && value !== null) {
        const record = value as Record<string, unknown>;
        const names = Object.keys(record).sort();
        return `{${names.map((n) => `${JSON.stringify(n)}:${reference(record[n])}`).join(",")}}`;
      }
      return JSON.stringify(value);
    };
    const name = fc.oneof(
      fc.string(),
      fc.constantFrom("1", "10", "9", "01", "4294967295", "__proto__", "a", "B", "\u00e9"),
    );
    const json = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean()),
        fc.constant(null),
        fc.array(tie("value"), { maxLength: 4 }),
        // Parsed from text, as the service's values are: "__proto__" is then a member.
        fc
          .array(fc.tuple(name, tie("value")), { maxLength: 5 })
          .map((members) =>
            JSON.parse(
              `{${members.map(([n, v]) => `${JSON.stringify(n)}:${JSON.stringify(v)}`).join(",")}}`,
            ),
          ),
      ),
    }));
    fc.assert(
      fc.property(json.value, (value) => {
        expect(canonicalize(value)).toBe(reference(value));
      }),
      { numRuns: 1000 },
    );
  });

  it("is idempotent over any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const once = canonicalize(value);
        expect(canonicalize(JSON.parse(once))).toBe(once);
      }),
      { numRuns: 500 },
    );
  });
});
