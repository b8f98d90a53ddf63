/**
 * The leaf's committed record built straight from an event (listed-event-leaf.ts
 * `committedEventRecord`) is, canonicalized, exactly the committed record of the event's
 * REST JSON as GET /api/events renders it: on generated events with every optional field
 * present or not, any strings (lone surrogates included), any JSON context and change
 * values. Where the builder declines (a `__proto__` member), the leaf still comes from the
 * renderer. A difference here would be a leaf no verifier could recompute.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EventPayload } from "../../src/crypto/event-cipher.js";
import type { ListedEvent } from "../../src/events/reader-query.js";
import {
  committedEventRecord,
  listedEventLeaf,
  renderListedEvent,
} from "../../src/listed-event-leaf.js";
import { canonicalize } from "../../src/tlog/jcs.js";
import { committedRecord, eventCommitment } from "../../src/tlog/leaf.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { createListedEventLeaf } from "../../src/verifiable-log/event-tree-stage.js";

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom("", "&lt;b&gt;", "\ud800", "Zoë"),
);
const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const context = fc.dictionary(fc.oneof(fc.string(), fc.constant("__proto__")), json, {
  maxKeys: 5,
}) as fc.Arbitrary<JsonObject>;

const change = fc.record(
  {
    op: fc.constantFrom("set", "unset", "add", "remove" as const),
    path: text,
    before: json,
    after: json,
    redacted: fc.boolean(),
  },
  { requiredKeys: ["op", "path", "before", "after"] },
);

const payload: fc.Arbitrary<EventPayload> = fc.record(
  {
    actionKey: text,
    action: text,
    actionDescription: text,
    entityType: text,
    entityId: text,
    actorType: fc.constantFrom("user", "api_key", "system", ""),
    actorId: text,
    actorDisplay: text,
    tenantId: text,
    source: text,
    changes: fc.array(change, { maxLength: 3 }),
  },
  { requiredKeys: ["entityType", "entityId", "actorType", "actorId"] },
);

const listedEvent: fc.Arbitrary<ListedEvent> = fc.record({
  eventId: fc.uuid({ version: 7 }),
  occurredAt: fc.date({
    min: new Date("1900-01-01T00:00:00Z"),
    max: new Date("2200-01-01T00:00:00Z"),
    noInvalidDate: true,
  }),
  receivedAt: fc.date({
    min: new Date("2020-01-01T00:00:00Z"),
    max: new Date("2100-01-01T00:00:00Z"),
    noInvalidDate: true,
  }),
  logIndex: fc.bigInt({ min: 0n, max: 2n ** 40n }),
  salt: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes)),
  payload,
  context: optional(context),
});

/** JSON.parse's view of a value, as the event's context and changes are read back. */
function asParsed(event: ListedEvent): ListedEvent {
  const reparse = <T>(value: T): T =>
    value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
  return { ...event, payload: reparse(event.payload), context: reparse(event.context) };
}

describe("the committed record built without the renderer", () => {
  it("canonicalizes exactly as the rendered event's committed record", () => {
    fc.assert(
      fc.property(listedEvent.map(asParsed), (event) => {
        const built = committedEventRecord(event);
        const rendered = committedRecord(renderListedEvent(event));
        if (built === undefined) return;
        expect(canonicalize(built)).toBe(canonicalize(rendered));
      }),
      { numRuns: 2_000 },
    );
  });

  it("gives every event the leaf the renderer gives", async () => {
    const crypto = createNodeLogCrypto();
    const fast = listedEventLeaf(crypto);
    const slow = createListedEventLeaf(crypto, renderListedEvent);
    await fc.assert(
      fc.asyncProperty(listedEvent.map(asParsed), async (event) => {
        expect(Buffer.from(await fast(event))).toEqual(Buffer.from(await slow(event)));
      }),
      { numRuns: 300 },
    );
  });

  it("declines a member named __proto__, which the renderer handles", async () => {
    const event: ListedEvent = {
      eventId: randomUUID(),
      occurredAt: new Date(),
      receivedAt: new Date(),
      logIndex: 0n,
      salt: randomBytes(32),
      payload: { entityType: "t", entityId: "e", actorType: "user", actorId: "a" },
      context: JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as JsonObject,
    };
    expect(committedEventRecord(event)).toBeUndefined();
    const crypto = createNodeLogCrypto();
    const leaf = await listedEventLeaf(crypto)(event);
    expect(leaf.subarray(33)).toEqual(
      await eventCommitment(crypto, event.salt, renderListedEvent(event)),
    );
  });
});
