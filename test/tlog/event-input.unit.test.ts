/** Reading `audit verify --events` files: NDJSON, saved list pages, documents, repeated member names. */
import { describe, expect, it } from "vitest";
import { duplicateMember, eventsOfText, UnreadableEvent } from "../../src/tlog/event-input.js";

const a = { eventId: "0193a5b2-7c1e-7d3f-8a9b-00000000000a", actorId: "u1" };
const b = { eventId: "0193a5b2-7c1e-7d3f-8a9b-00000000000b", actorId: "u2" };
const c = { eventId: "0193a5b2-7c1e-7d3f-8a9b-00000000000c", actorId: "u3" };

describe("eventsOfText", () => {
  it("reads NDJSON, with CRLF endings, blank lines and a byte order mark", () => {
    const text = `\uFEFF${JSON.stringify(a)}\r\n\r\n${JSON.stringify(b)}\r\n`;
    expect([...eventsOfText(text)]).toEqual([a, b]);
  });

  it("reads saved GET /api/events pages, one per line", () => {
    const text = [
      JSON.stringify({ events: [a, b], nextCursor: "x" }),
      JSON.stringify({ events: [c] }),
    ].join("\n");
    expect([...eventsOfText(text)]).toEqual([a, b, c]);
  });

  it("reads one pretty-printed page, and a JSON array of events", () => {
    expect([...eventsOfText(JSON.stringify({ events: [a, b] }, null, 2))]).toEqual([a, b]);
    expect([...eventsOfText(JSON.stringify([c, a], null, 2))]).toEqual([c, a]);
  });

  it("passes a line that is not JSON on as text (the verifier fails it)", () => {
    expect([...eventsOfText(`${JSON.stringify(a)}\nnot json\n`)]).toEqual([a, "not json"]);
  });

  it("turns an event with a member name given twice into an UnreadableEvent naming it", () => {
    const forged = `{"actorId":"mallory","eventId":"${b.eventId}","actorId":"u2"}`;
    const items = [...eventsOfText(`${JSON.stringify(a)}\n${forged}\n`)];
    expect(items[0]).toEqual(a);
    expect(items[1]).toBeInstanceOf(UnreadableEvent);
    expect(items[1]).toMatchObject({
      eventId: b.eventId,
      problem: expect.stringMatching(/member actorId twice/),
    });
  });

  it("fails only the event of a page that repeats a name, and the page when the repeat is outside its events", () => {
    const page = `{"events":[${JSON.stringify(a)},{"eventId":"${b.eventId}","context":{"k":1,"k":2}}],"nextCursor":null}`;
    const items = [...eventsOfText(page)];
    expect(items[0]).toEqual(a);
    expect(items[1]).toMatchObject({
      eventId: b.eventId,
      problem: expect.stringMatching(/member context\.k twice/),
    });
    const outer = [
      ...eventsOfText(`{"events":[${JSON.stringify(a)}],"events":[${JSON.stringify(b)}]}`),
    ];
    expect(outer).toHaveLength(1);
    expect(outer[0]).toBeInstanceOf(UnreadableEvent);
  });

  it("turns an event with a number whose digits are not the value it reads as into an UnreadableEvent naming it", () => {
    // Each reads here as another value than a reader that keeps every digit reads.
    for (const written of [
      "9007199254740993",
      "1234567890123456849",
      "0.1000000000000000000001",
      "1e400",
    ]) {
      const line = `{"eventId":"${b.eventId}","context":{"n":[1,${written}]}}`;
      const [item] = [...eventsOfText(line)];
      expect(item, written).toBeInstanceOf(UnreadableEvent);
      expect(item).toMatchObject({
        eventId: b.eventId,
        problem: `its JSON writes the number context.n[1] as ${written}, which reads as ${String(Number(written))} here and as another value in a reader that keeps every digit`,
      });
    }
    // Other spellings of the value they read as (as jq or Python may write them): passed on.
    for (const written of [
      "0",
      "-0",
      "-3",
      "1.0",
      "1.5",
      "0.10",
      "1e21",
      "1E+21",
      "1e-07",
      "9007199254740992",
      "1234567890123456800",
    ]) {
      const line = `{"eventId":"${b.eventId}","context":{"n":${written}}}`;
      expect([...eventsOfText(line)], written).toEqual([
        { eventId: b.eventId, context: { n: Number(written) } },
      ]);
    }
    // In a page or an array, every event that holds one, and only those.
    const page = `{"events":[{"eventId":"${a.eventId}","context":{"n":9007199254740993}},${JSON.stringify(b)},{"eventId":"${c.eventId}","context":{"n":2.50,"m":1234567890123456849}}]}`;
    const items = [...eventsOfText(page)];
    expect(items[0]).toMatchObject({
      eventId: a.eventId,
      problem: expect.stringMatching(/^its JSON writes the number context\.n as 9007199254740993,/),
    });
    expect(items[1]).toEqual(b);
    expect(items[2]).toMatchObject({
      eventId: c.eventId,
      problem: expect.stringMatching(
        /^its JSON writes the number context\.m as 1234567890123456849,/,
      ),
    });
  });
});

describe("duplicateMember", () => {
  it.each([
    ['{"a":1,"b":{"c":[1,{"d":2,"d":3}]}}', "b.c[1].d"],
    ['{"a":1,"\\u0061":2}', "a"],
    ['[{"x":"\\"}","y":1}]', undefined],
    ['[{"x":"\\"","x":1}]', "[0].x"],
    ['{"a":{},"b":[],"c":"","d":null,"e":-1.5e3,"f":true}', undefined],
    ['{ "a" : 1 , "a" : 2 }', "a"],
  ])("%s → %s", (text, path) => {
    expect(duplicateMember(text)).toBe(path);
  });
});
