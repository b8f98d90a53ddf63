/**
 * Create Event refused by validation: 422 listing every failing field, the rules of spec
 * 2.1 and 2.2 at their boundaries (max ok, max + 1 refused); a refused request stores nothing.
 */
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type ProvisionedKey,
  postEvent,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import {
  bearer,
  change,
  changes,
  contextOfBytes,
  type ExpectedIssue,
  expectValidation,
  useRefusalServer,
  valueOfBytes,
  without,
} from "./refusals.js";

describe("POST /api/ingest/event: refused requests", () => {
  const refusals = useRefusalServer();
  const { noNewEvent } = refusals;
  let server: TestServer;
  beforeAll(() => {
    server = refusals.server;
  });

  describe("422: validation (spec 2.1, 2.2, 7)", () => {
    let key: ProvisionedKey;
    beforeEach(async () => {
      key = await server.provision();
    });

    const post = (body: unknown) => postEvent(server, body, bearer(key.secret));
    const expectAccepted = async (body: unknown) => {
      const res = await post(body);
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(["eventId", "receivedAt"]);
    };
    const expectRejected = async (body: unknown, expected: ExpectedIssue[]) => {
      await noNewEvent(
        () => post(body),
        (res) => expectValidation(res, expected),
      );
    };

    describe("string lengths: max ok, max + 1 fails", () => {
      it.each([
        ["actionKey", 64],
        ["actionDescription", 255],
        ["entityType", 64],
        ["entityId", 128],
        ["actorId", 128],
        ["actorDisplay", 128],
        ["tenantId", 64],
        ["source", 64],
      ])("%s: %i characters ok, one more fails", async (field, max) => {
        await expectAccepted(validEvent({ [field]: "a".repeat(max) }));
        await expectRejected(validEvent({ [field]: "a".repeat(max + 1) }), [
          { path: [field], code: "too_big" },
        ]);
      });

      it("change path: 256 characters ok, 257 fails", async () => {
        await expectAccepted(validEvent({ changes: [change({ path: "p".repeat(256) })] }));
        await expectRejected(validEvent({ changes: [change({ path: "p".repeat(257) })] }), [
          { path: ["changes", 0, "path"], code: "too_big" },
        ]);
      });
    });

    describe("lengths count characters (Unicode code points), not bytes or UTF-16 units", () => {
      // src/ingest/validation.ts counts code points: an emoji outside the BMP is one
      // character (two UTF-16 units, four UTF-8 bytes); a combining mark is its own one.
      it.each([
        ["actionKey", 64],
        ["entityId", 128],
        ["actorDisplay", 128],
      ])("%s: %i emoji ok, one more fails", async (field, max) => {
        await expectAccepted(validEvent({ [field]: "😀".repeat(max) }));
        await expectRejected(validEvent({ [field]: "😀".repeat(max + 1) }), [
          { path: [field], code: "too_big" },
        ]);
      });

      it.each([
        ["é (2 UTF-8 bytes)", "é"],
        ["€ (3 UTF-8 bytes)", "€"],
        ["漢 (3 UTF-8 bytes)", "漢"],
      ])("actionKey: 64 × %s ok, 65 fails", async (_name, char) => {
        await expectAccepted(validEvent({ actionKey: char.repeat(64) }));
        await expectRejected(validEvent({ actionKey: char.repeat(65) }), [
          { path: ["actionKey"], code: "too_big" },
        ]);
      });

      it("actionKey: an e + combining accent counts as two characters", async () => {
        const decomposed = "e\u0301";
        await expectAccepted(validEvent({ actionKey: decomposed.repeat(32) }));
        await expectRejected(validEvent({ actionKey: `${decomposed.repeat(32)}x` }), [
          { path: ["actionKey"], code: "too_big" },
        ]);
      });

      it("change path: 256 emoji ok, 257 fails", async () => {
        await expectAccepted(validEvent({ changes: [change({ path: "🙂".repeat(256) })] }));
        await expectRejected(validEvent({ changes: [change({ path: "🙂".repeat(257) })] }), [
          { path: ["changes", 0, "path"], code: "too_big" },
        ]);
      });
    });

    describe("serialized sizes: bytes of the compact JSON", () => {
      it("context: 10240 bytes ok, 10241 fails", async () => {
        await expectAccepted(validEvent({ context: contextOfBytes(10240) }));
        await expectRejected(validEvent({ context: contextOfBytes(10241) }), [
          { path: ["context"], code: "too_big" },
        ]);
      });

      it("context: counted in UTF-8 bytes, 10240 ok, 10241 fails with multibyte text", async () => {
        await expectAccepted(validEvent({ context: contextOfBytes(10240, "é") }));
        await expectRejected(validEvent({ context: contextOfBytes(10241, "é") }), [
          { path: ["context"], code: "too_big" },
        ]);
      });

      it.each(["before", "after"])("%s: 5120 bytes ok, 5121 fails", async (field) => {
        await expectAccepted(validEvent({ changes: [change({ [field]: valueOfBytes(5120) })] }));
        await expectRejected(validEvent({ changes: [change({ [field]: valueOfBytes(5121) })] }), [
          { path: ["changes", 0, field], code: "too_big" },
        ]);
      });

      it("before and after: an object value of 5120 bytes ok, 5121 fails", async () => {
        const ok = contextOfBytes(5120);
        const tooBig = contextOfBytes(5121);
        await expectAccepted(validEvent({ changes: [change({ before: ok, after: ok })] }));
        await expectRejected(validEvent({ changes: [change({ before: tooBig, after: tooBig })] }), [
          { path: ["changes", 0, "before"], code: "too_big" },
          { path: ["changes", 0, "after"], code: "too_big" },
        ]);
      });

      it("before/after limits apply to each change on its own", async () => {
        const ok = valueOfBytes(5120);
        await expectAccepted(
          validEvent({
            changes: Array.from({ length: 5 }, () => change({ before: ok, after: ok })),
          }),
        );
      });
    });

    describe("changes count", () => {
      it("100 changes ok, 101 fail", async () => {
        await expectAccepted(validEvent({ changes: changes(100) }));
        await expectRejected(validEvent({ changes: changes(101) }), [
          { path: ["changes"], code: "too_big" },
        ]);
      });
    });

    describe("types", () => {
      it.each([
        ["actionKey", 123],
        ["actionDescription", 1],
        ["entityType", 5],
        ["entityId", 42],
        ["actorId", true],
        ["actorDisplay", ["a"]],
        ["tenantId", { id: "t" }],
        ["source", 1.5],
        ["occurredAt", 1_700_000_000_000],
        ["actorType", 1],
      ])("%s given %j: invalid_type", async (field, value) => {
        await expectRejected(validEvent({ [field]: value }), [
          { path: [field], code: "invalid_type" },
        ]);
      });

      it.each([
        ["a string", "not changes"],
        ["an object", { op: "set" }],
        ["a number", 3],
      ])("changes given %s: invalid_type", async (_name, value) => {
        await expectRejected(validEvent({ changes: value }), [
          { path: ["changes"], code: "invalid_type" },
        ]);
      });

      it.each([
        ["an array", [{ a: 1 }]],
        ["a string", "context"],
        ["a number", 7],
        ["null", null],
      ])("context given %s: invalid_type", async (_name, value) => {
        await expectRejected(validEvent({ context: value }), [
          { path: ["context"], code: "invalid_type" },
        ]);
      });

      it.each([
        ["op", 1],
        ["path", ["a"]],
        ["redacted", "yes"],
      ])("change %s given %j: invalid_type", async (field, value) => {
        await expectRejected(validEvent({ changes: [change({ [field]: value })] }), [
          { path: ["changes", 0, field], code: "invalid_type" },
        ]);
      });

      it.each([
        ["a string", "set"],
        ["null", null],
        ["an array", [change()]],
      ])("a change given as %s: invalid_type at its index", async (_name, value) => {
        await expectRejected(validEvent({ changes: [change(), value] }), [
          { path: ["changes", 1], code: "invalid_type" },
        ]);
      });
    });

    describe("enums", () => {
      it.each(["robot", "User", "USER", "", "admin"])(
        "actorType %j: invalid_enum_value",
        async (actorType) => {
          await expectRejected(validEvent({ actorType }), [
            { path: ["actorType"], code: "invalid_enum_value" },
          ]);
        },
      );

      it.each(["replace", "SET", "delete", ""])("change op %j: invalid_enum_value", async (op) => {
        await expectRejected(validEvent({ changes: [change({ op })] }), [
          { path: ["changes", 0, "op"], code: "invalid_enum_value" },
        ]);
      });
    });

    describe("occurredAt", () => {
      it.each([
        "yesterday",
        "",
        "2024-13-01T00:00:00Z",
        "2024-01-32T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T25:00:00Z",
        "2024-01-01T10:61:00Z",
        "2024-01-01",
        "01/02/2024 10:00",
        "Mon, 01 Jan 2024 10:00:00 GMT",
      ])("occurredAt %j is rejected", async (occurredAt) => {
        await expectRejected(validEvent({ occurredAt }), [{ path: ["occurredAt"] }]);
      });
    });

    describe("required fields", () => {
      it.each(["entityType", "entityId", "actorId"])(
        "missing %s: invalid_type, message Required",
        async (field) => {
          await expectRejected(without(field), [
            { path: [field], code: "invalid_type", message: "Required" },
          ]);
        },
      );

      it("neither actionKey nor action: one issue with an empty path and code custom", async () => {
        await expectRejected(without("actionKey"), [{ path: [], code: "custom" }]);
      });

      it.each([{ actionKey: "" }, { actionKey: "", action: "" }, { action: "" }])(
        "%j names no action: the same issue as neither",
        async (actions) => {
          await expectRejected({ ...without("actionKey"), ...actions }, [
            { path: [], code: "custom" },
          ]);
        },
      );

      it.each(["op", "path", "before", "after"])(
        "a change without %s: invalid_type, message Required",
        async (field) => {
          await expectRejected(validEvent({ changes: [without(field, change())] }), [
            { path: ["changes", 0, field], code: "invalid_type", message: "Required" },
          ]);
        },
      );

      it("reports the nested path of the failing change: [changes, 3, op]", async () => {
        const list = changes(5);
        list[3] = without("op", change());
        await expectRejected(validEvent({ changes: list }), [
          { path: ["changes", 3, "op"], code: "invalid_type", message: "Required" },
        ]);
      });

      it("an empty object lists every required field and the action rule", async () => {
        await expectRejected({}, [
          { path: ["entityType"], code: "invalid_type", message: "Required" },
          { path: ["entityId"], code: "invalid_type", message: "Required" },
          { path: ["actorId"], code: "invalid_type", message: "Required" },
          { path: [], code: "custom" },
        ]);
      });
    });

    it("lists every failing field of one body", async () => {
      await expectRejected(
        {
          actionKey: "k".repeat(65),
          actionDescription: "d".repeat(256),
          entityType: 7,
          actorType: "robot",
          actorDisplay: "n".repeat(129),
          tenantId: "t".repeat(65),
          occurredAt: "not a date",
          source: "s".repeat(65),
          context: contextOfBytes(10241),
          changes: [
            change(),
            change({ op: "replace" }),
            without("path", change()),
            change({ before: valueOfBytes(5121), redacted: "no" }),
            without("op", change()),
          ],
        },
        [
          { path: ["actionKey"], code: "too_big" },
          { path: ["actionDescription"], code: "too_big" },
          { path: ["entityType"], code: "invalid_type" },
          { path: ["entityId"], code: "invalid_type", message: "Required" },
          { path: ["actorType"], code: "invalid_enum_value" },
          { path: ["actorId"], code: "invalid_type", message: "Required" },
          { path: ["actorDisplay"], code: "too_big" },
          { path: ["tenantId"], code: "too_big" },
          { path: ["occurredAt"] },
          { path: ["source"], code: "too_big" },
          { path: ["context"], code: "too_big" },
          { path: ["changes", 1, "op"], code: "invalid_enum_value" },
          { path: ["changes", 2, "path"], code: "invalid_type", message: "Required" },
          { path: ["changes", 3, "before"], code: "too_big" },
          { path: ["changes", 3, "redacted"], code: "invalid_type" },
          { path: ["changes", 4, "op"], code: "invalid_type", message: "Required" },
        ],
      );
    });
  });
});
