/**
 * HTML-significant characters (spec 4.1: "String fields are encoded by the service for
 * extra safety"). They are accepted in every string field, and length limits count what
 * the caller sent, not the encoded form. Reading events back is a later feature: here
 * only acceptance and what storage shows without decrypting (row counts, sizes).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

const SCRIPT = `<script>alert("x")</script>`;
const MIXED = `Tom & Jerry's "<b>bold</b>" > 'quoted' & <img src=x onerror=alert(1)>`;

describe("HTML-significant characters in event strings", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const countEvents = async (projectId: string): Promise<number> => {
    const rows = await server.app.db.query<{ n: number }>(
      "select count(*)::int as n from events where project_id = $1",
      [projectId],
    );
    return rows[0]?.n ?? -1;
  };

  const payloadSize = async (eventId: string): Promise<number> => {
    const rows = await server.app.db.query<{ size: number }>(
      "select octet_length(payload)::int as size from events where id = $1",
      [eventId],
    );
    expect(rows).toHaveLength(1);
    return rows[0]?.size ?? -1;
  };

  const contextSize = async (eventId: string): Promise<number> => {
    const rows = await server.app.db.query<{ size: number }>(
      "select octet_length(ciphertext)::int as size from event_contexts where event_id = $1",
      [eventId],
    );
    expect(rows).toHaveLength(1);
    return rows[0]?.size ?? -1;
  };

  const expectCreated = async (secret: string, body: unknown): Promise<string> => {
    const res = await postEvent(server, body, bearer(secret));
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(["eventId", "receivedAt"]);
    return String(res.body.eventId);
  };

  it("accepts <script>, quotes, apostrophes and ampersands in every string field", async () => {
    const key = await server.provision();
    const body = {
      actionKey: `<a>&"'`,
      action: SCRIPT,
      actionDescription: MIXED,
      entityType: `"><svg/onload=alert(1)>`,
      entityId: `id&amp;'1'`,
      actorType: "user",
      actorId: `<u>"me"</u>`,
      actorDisplay: MIXED,
      tenantId: `t<1>&'2'`,
      source: `src="x"`,
      context: {
        [SCRIPT]: MIXED,
        "a&b": ["<", ">", "&", '"', "'"],
        nested: { '"key"': { deeper: SCRIPT } },
      },
      changes: [
        { op: "set", path: `/a[name="<x>"]`, before: SCRIPT, after: { "<k>": `'v' & "w"` } },
        { op: "remove", path: "/b&c", before: ["<i>", 1, null], after: null, redacted: true },
      ],
    };
    await expectCreated(key.secret, body);
    expect(await countEvents(key.projectId)).toBe(1);
  });

  it.each([
    ["actionKey", 64, "<"],
    ["actionKey", 64, "&"],
    ["actionDescription", 255, '"'],
    ["entityType", 64, ">"],
    ["entityId", 128, "&"],
    ["actorId", 128, "'"],
    ["actorDisplay", 128, "<"],
    ["tenantId", 64, '"'],
    ["source", 64, "'"],
  ])("%s of %i × %s is accepted: the limit counts what was sent", async (field, max, char) => {
    const key = await server.provision();
    await expectCreated(key.secret, validEvent({ [field]: char.repeat(max) }));
    expect(await countEvents(key.projectId)).toBe(1);
  });

  it.each([
    ["actionKey", 64, "<"],
    ["entityId", 128, "&"],
    ["source", 64, "'"],
  ])("%s of %i + 1 × %s is still refused", async (field, max, char) => {
    const key = await server.provision();
    const res = await postEvent(
      server,
      validEvent({ [field]: char.repeat(max + 1) }),
      bearer(key.secret),
    );
    expect(res.status).toBe(422);
    expect(res.body.error).toBe("Validation failed");
    expect(res.body.details).toEqual([
      { path: [field], message: expect.stringMatching(/\S/), code: "too_big" },
    ]);
    expect(await countEvents(key.projectId)).toBe(0);
  });

  it("a change path of 256 × < is accepted", async () => {
    const key = await server.provision();
    const changes = [{ op: "set", path: "<".repeat(256), before: null, after: 1 }];
    await expectCreated(key.secret, validEvent({ changes }));
    expect(await countEvents(key.projectId)).toBe(1);
  });

  it("a context of exactly 10240 bytes full of < and & is accepted", async () => {
    const key = await server.provision();
    const overhead = Buffer.byteLength(JSON.stringify({ d: "" }));
    const context = { d: "<&".repeat((10240 - overhead) / 2) };
    expect(Buffer.byteLength(JSON.stringify(context))).toBe(10240);
    await expectCreated(key.secret, validEvent({ context }));
    expect(await countEvents(key.projectId)).toBe(1);
  });

  it("before and after of exactly 5120 bytes full of > and ' are accepted", async () => {
    const key = await server.provision();
    const value = ">'".repeat((5120 - 2) / 2);
    expect(Buffer.byteLength(JSON.stringify(value))).toBe(5120);
    const changes = [{ op: "set", path: "/x", before: value, after: value }];
    await expectCreated(key.secret, validEvent({ changes }));
    expect(await countEvents(key.projectId)).toBe(1);
  });

  it("storage shows the strings were encoded: < takes more room than a plain letter", async () => {
    const key = await server.provision();
    const plain = await expectCreated(key.secret, validEvent({ actionKey: "a".repeat(64) }));
    const angled = await expectCreated(key.secret, validEvent({ actionKey: "<".repeat(64) }));
    // Any HTML encoding of `<` takes at least 4 characters (`&lt;`).
    expect((await payloadSize(angled)) - (await payloadSize(plain))).toBeGreaterThanOrEqual(64 * 3);
  });

  it("storage shows context strings were encoded too", async () => {
    const key = await server.provision();
    const plain = await expectCreated(key.secret, validEvent({ context: { d: "a".repeat(2000) } }));
    const angled = await expectCreated(
      key.secret,
      validEvent({ context: { d: "<".repeat(2000) } }),
    );
    expect((await contextSize(angled)) - (await contextSize(plain))).toBeGreaterThanOrEqual(
      2000 * 3,
    );
  });
});
