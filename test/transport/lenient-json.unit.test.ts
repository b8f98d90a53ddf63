/** The JSON of an RPC request toJson refuses: what JSON cannot write stays at its place. */
import { create, toJson } from "@bufbuild/protobuf";
import { ListValueSchema, StructSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { ChangeSchema, EventSchema } from "../../gen/audit/v1/event_pb.js";
import { CreateEventsRequestSchema } from "../../gen/audit/v1/ingest_pb.js";
import { lenientJson } from "../../src/transport/lenient-json.js";

const number = (value: number) => create(ValueSchema, { kind: { case: "numberValue", value } });

describe("lenientJson", () => {
  it("writes what toJson writes, NaN, infinities and kindless Values left as held", () => {
    const nested = create(ValueSchema, {
      kind: {
        case: "structValue",
        value: create(StructSchema, {
          fields: {
            ok: number(1),
            bad: number(Number.POSITIVE_INFINITY),
            list: create(ValueSchema, {
              kind: {
                case: "listValue",
                value: create(ListValueSchema, { values: [number(2), create(ValueSchema)] }),
              },
            }),
          },
        }),
      },
    });
    const event = create(EventSchema, {
      actionKey: "a.b",
      entityType: "e",
      entityId: "i",
      actorId: "u",
      context: { n: Number.NaN, s: "x" },
      changes: [
        create(ChangeSchema, { op: "set", path: "p", before: create(ValueSchema), after: nested }),
      ],
    });
    const request = create(CreateEventsRequestSchema, { events: [event], atomic: true });
    expect(() => toJson(CreateEventsRequestSchema, request)).toThrow();
    const json = lenientJson(CreateEventsRequestSchema, request);
    expect(json.atomic).toBe(true);
    const written = (json.events as Record<string, unknown>[])[0] ?? {};
    expect(written).toMatchObject({
      actionKey: "a.b",
      entityType: "e",
      entityId: "i",
      actorId: "u",
    });
    expect((written.context as { n: number }).n).toBeNaN();
    const [change] = written.changes as Record<string, unknown>[];
    expect(change).toEqual({
      op: "set",
      path: "p",
      before: undefined,
      after: { ok: 1, bad: Number.POSITIVE_INFINITY, list: [2, undefined] },
    });
  });

  it("equals toJson where toJson succeeds", () => {
    const event = create(EventSchema, {
      actionKey: "a.b",
      entityType: "e",
      entityId: "i",
      actorId: "u",
      context: { n: 1, nested: { list: [1, "two", null, true] } },
      changes: [
        create(ChangeSchema, {
          op: "set",
          path: "p",
          before: number(1),
          after: create(ValueSchema, { kind: { case: "nullValue", value: 0 } }),
        }),
      ],
    });
    const request = create(CreateEventsRequestSchema, { events: [event, event] });
    expect(lenientJson(CreateEventsRequestSchema, request)).toEqual(
      toJson(CreateEventsRequestSchema, request),
    );
  });
});
