/** Text lengths: one count (code points) and one tenantId limit for events and tokens. */
import { getOption } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema } from "../../gen/audit/v1/event_pb.js";
import { field as fieldRules } from "../../gen/audit/v1/rules_pb.js";
import { isStorableText } from "../../src/vocabulary/storable-text.js";
import {
  codePointLength,
  longerThan,
  MAX_TENANT_ID_CHARS,
} from "../../src/vocabulary/text-length.js";

describe("text length", () => {
  it("counts code points: an emoji is one, a lone surrogate one, ASCII one each", () => {
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("abc")).toBe(3);
    expect(codePointLength("\u{1F600}\u{1F600}")).toBe(2);
    expect(codePointLength("\uD800x")).toBe(2);
  });

  it("longerThan counts code points: 3 emoji (6 units) are not longer than 3; 4 are", () => {
    expect(longerThan("\u{1F600}".repeat(3), 3)).toBe(false);
    expect(longerThan("\u{1F600}".repeat(4), 3)).toBe(true);
    expect(longerThan("abc", 3)).toBe(false);
    expect(longerThan("abcd", 3)).toBe(true);
    expect(longerThan("", 0)).toBe(false);
  });

  it("an event's tenantId rule in event.proto is the tokens' limit", () => {
    const tenant = EventSchema.fields.find((f) => f.name === "tenant_id");
    expect(tenant).toBeDefined();
    if (!tenant) return;
    expect(getOption(tenant, fieldRules).maxLen).toBe(MAX_TENANT_ID_CHARS);
  });
});

describe("storable text", () => {
  it("refuses NUL and unpaired surrogates, accepts pairs and everything else", () => {
    expect(isStorableText("Acme \u{1F600} Corp")).toBe(true);
    expect(isStorableText("")).toBe(true);
    expect(isStorableText("a\u0000b")).toBe(false);
    expect(isStorableText("a\uD800")).toBe(false);
    expect(isStorableText("\uDC00a")).toBe(false);
    expect(isStorableText("\uDC00\uD800")).toBe(false);
  });
});
