/**
 * Each event of a batch is held to Create Event's limits, no more and no less (outside
 * audit of 2026-11-28): an event nested as deep as a Create Event body may be is stored
 * in a batch too (the envelope's two levels do not count against it), and an event over
 * Create Event's 1 MB is refused in a batch too, as its own item, whatever makes it that
 * large: members the service ignores count, as they count in a Create Event body (audit of
 * the same day, second round: an event padded with an unknown member was stored).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer } from "../events/events-client.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { postBatch } from "./bulk.support.js";

/** A valid event whose body nests exactly `depth` levels (the event object is level 1). */
function nestedEvent(depth: number): Record<string, unknown> {
  let value: unknown = "leaf";
  for (let level = depth; level > 2; level--) value = { d: value };
  return validEvent({ context: { d: value } });
}

/** A valid event of more than 1 MB of JSON: 100 changes of about 10.6 KB each. */
function largeEvent(): Record<string, unknown> {
  const text = "x".repeat(5_100);
  return validEvent({
    changes: Array.from({ length: 100 }, (_, i) => ({
      op: "set",
      path: `/${"p".repeat(250)}${i}`,
      before: text,
      after: text,
    })),
  });
}

/** The item result of an event over Create Event's limit at `index` of a batch. */
function tooLarge(index: number): Record<string, unknown> {
  return {
    error: "Validation failed",
    details: [
      {
        path: [index],
        message: "Event must be at most 1048576 bytes of JSON, as a Create Event body",
        code: "too_big",
      },
    ],
  };
}

describe("a batch's events and Create Event's limits", () => {
  let server: TestServer;
  let headers: Record<string, string>;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000" });
    headers = bearer((await server.provision()).secret);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("stores in a batch an event nested as deep as a Create Event body may be", async () => {
    const deepest = nestedEvent(100);
    expect((await postEvent(server, deepest, headers)).status).toBe(201);
    const batch = await postBatch(server, { events: [deepest, validEvent()] }, headers);
    expect(batch.status).toBe(201);
    // One level more is refused as a Create Event body and as a batch's.
    const deeper = nestedEvent(101);
    expect((await postEvent(server, deeper, headers)).status).toBe(400);
    const refused = await postBatch(server, { events: [deeper] }, headers);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/^Request body is nested more than \d+ levels deep$/);
  });

  it("refuses in a batch, as its own item, an event larger than a Create Event body may be", async () => {
    const large = largeEvent();
    expect(Buffer.byteLength(JSON.stringify(large))).toBeGreaterThan(1024 * 1024);
    expect((await postEvent(server, large, headers)).status).toBe(413);
    const batch = await postBatch(server, { events: [validEvent(), large] }, headers);
    expect(batch.status).toBe(207);
    const results = batch.body.results as Record<string, unknown>[];
    expect(results[0]?.eventId).toEqual(expect.any(String));
    expect(results[1]).toEqual(tooLarge(1));
    const atomic = await postBatch(
      server,
      { events: [validEvent(), large] },
      headers,
      "?atomic=true",
    );
    expect(atomic.status).toBe(422);
  });

  it("counts the members it ignores: padded over 1 MB, in the event or in a change, an event is refused", async () => {
    const pad = "a".repeat(1024 * 1024);
    const padded = validEvent({ pad });
    expect((await postEvent(server, padded, headers)).status).toBe(413);
    const inChange = validEvent({ changes: [{ op: "set", path: "/a", before: 1, after: 2, pad }] });
    expect((await postEvent(server, inChange, headers)).status).toBe(413);
    const batch = await postBatch(server, { events: [padded, validEvent(), inChange] }, headers);
    expect(batch.status).toBe(207);
    const results = batch.body.results as Record<string, unknown>[];
    expect(results[0]).toEqual(tooLarge(0));
    expect(results[1]?.eventId).toEqual(expect.any(String));
    expect(results[2]).toEqual(tooLarge(2));
    // Just under the limit, the unknown member is ignored as Create Event ignores it.
    const under = validEvent({ pad: "" });
    const room = 1024 * 1024 - Buffer.byteLength(JSON.stringify(under));
    const fits = validEvent({ pad: "a".repeat(room) });
    expect(Buffer.byteLength(JSON.stringify(fits))).toBe(1024 * 1024);
    expect((await postBatch(server, { events: [fits] }, headers)).status).toBe(201);
  });
});
