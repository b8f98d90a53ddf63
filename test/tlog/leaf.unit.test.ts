/**
 * The leaf and commitment formats of docs/verifiable-log.md, checked against bytes
 * written out by hand here (not computed by the code under test).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fromHex, toBase64, toHex } from "../../src/tlog/bytes.js";
import {
  COMMITTED_FIELDS,
  committedRecord,
  decodeLeaf,
  describeLeafDifference,
  encodeLeaf,
  eventCommitment,
  LEAF_SIZE,
  listedEventLeaf,
  parseReceivedAt,
} from "../../src/tlog/leaf.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";

const crypto = createNodeLogCrypto();
const SALT = Uint8Array.from({ length: 32 }, (_, i) => i);

/** An event as GET /api/events lists it, with the two members added for the log. */
const LISTED = {
  eventId: "0193a5b2-7c1e-7d3f-8a9b-0c1d2e3f4a5b",
  receivedAt: "2026-11-25T08:26:08.123Z",
  occurredAt: "2026-11-25T08:26:07.000Z",
  actionKey: "user.login",
  entityType: "user",
  entityId: "user_123",
  actorType: "user",
  actorId: "user_123",
  context: { ip: "203.0.113.9", attempts: 2, é: [true, null] },
  changes: [{ op: "set", path: "name", before: "a", after: "b" }],
  logIndex: 41,
  salt: toBase64(SALT),
};

/** The canonical form of LISTED's committed members, written out by hand. */
const CANONICAL =
  '{"actionKey":"user.login","actorId":"user_123","actorType":"user",' +
  '"changes":[{"after":"b","before":"a","op":"set","path":"name"}],' +
  '"context":{"attempts":2,"ip":"203.0.113.9","é":[true,null]},' +
  '"entityId":"user_123","entityType":"user","eventId":"0193a5b2-7c1e-7d3f-8a9b-0c1d2e3f4a5b",' +
  '"occurredAt":"2026-11-25T08:26:07.000Z","receivedAt":"2026-11-25T08:26:08.123Z"}';

function sha256(...parts: (Uint8Array | string)[]): Uint8Array {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
}

describe("commitment", () => {
  it("is SHA-256 of the salt then the RFC 8785 form of the committed members", async () => {
    const commitment = await eventCommitment(crypto, SALT, LISTED);
    expect(toHex(commitment)).toBe(toHex(sha256(SALT, CANONICAL)));
  });

  it("leaves out logIndex, salt and members added to the API later", () => {
    const record = committedRecord({ ...LISTED, verified: true, erasedAt: "x" });
    expect(Object.keys(record).sort()).toEqual(
      COMMITTED_FIELDS.filter((f) => f in LISTED && f !== "logIndex" && f !== "salt").sort(),
    );
  });

  it("changes with any committed member, and with the salt", async () => {
    const base = toHex(await eventCommitment(crypto, SALT, LISTED));
    const variants = [
      { ...LISTED, actorId: "user_124" },
      { ...LISTED, context: { ...LISTED.context, attempts: 3 } },
      { ...LISTED, tenantId: "t1" },
      { ...LISTED, receivedAt: "2026-11-25T08:26:08.124Z" },
    ];
    for (const variant of variants) {
      expect(toHex(await eventCommitment(crypto, SALT, variant))).not.toBe(base);
    }
    const otherSalt = SALT.map((b) => b ^ 1);
    expect(toHex(await eventCommitment(crypto, otherSalt, LISTED))).not.toBe(base);
    // Member order and a new, uncommitted member change nothing.
    const reordered = Object.fromEntries(Object.entries(LISTED).reverse());
    expect(toHex(await eventCommitment(crypto, SALT, { ...reordered, later: 1 }))).toBe(base);
  });
});

describe("leaf", () => {
  it("is version, logIndex, receivedAt ms, eventId bytes, commitment: 65 bytes", async () => {
    const { leaf, logIndex, eventId } = await listedEventLeaf(crypto, LISTED);
    expect(logIndex).toBe(41);
    expect(eventId).toBe(LISTED.eventId);
    const ms = Date.UTC(2026, 10, 25, 8, 26, 8, 123);
    const expected =
      "01" +
      (41).toString(16).padStart(16, "0") +
      ms.toString(16).padStart(16, "0") +
      "0193a5b27c1e7d3f8a9b0c1d2e3f4a5b" +
      toHex(sha256(SALT, CANONICAL));
    expect(toHex(leaf)).toBe(expected);
    expect(leaf.length).toBe(LEAF_SIZE);
    expect(decodeLeaf(leaf)).toEqual({
      logIndex: 41,
      receivedAtMs: ms,
      eventId: LISTED.eventId,
      commitment: sha256(SALT, CANONICAL),
    });
  });

  it("encodes dates before 1970 as negative milliseconds and large indexes exactly", () => {
    const leaf = encodeLeaf({
      logIndex: 2 ** 40 + 1,
      receivedAtMs: parseReceivedAt("0001-01-01T00:00:00.000Z"),
      eventId: LISTED.eventId,
      commitment: new Uint8Array(32),
    });
    // 2^40 + 1, then -62135596800000 in two's complement.
    expect(toHex(leaf.subarray(1, 17))).toBe("0000010000000001ffffc77cedd32800");
    expect(decodeLeaf(leaf).receivedAtMs).toBe(-62135596800000);
  });

  it("refuses events without what the leaf needs", async () => {
    const cases: [string, Record<string, unknown>][] = [
      ["no salt", { ...LISTED, salt: undefined }],
      ["short salt", { ...LISTED, salt: toBase64(new Uint8Array(31)) }],
      ["salt not base64", { ...LISTED, salt: "not base64!" }],
      ["no logIndex", { ...LISTED, logIndex: undefined }],
      ["negative logIndex", { ...LISTED, logIndex: -1 }],
      ["fractional logIndex", { ...LISTED, logIndex: 1.5 }],
      ["bad eventId", { ...LISTED, eventId: "evt_1" }],
      ["receivedAt with an offset", { ...LISTED, receivedAt: "2026-11-25T09:26:08.123+01:00" }],
      ["receivedAt without ms", { ...LISTED, receivedAt: "2026-11-25T08:26:08Z" }],
    ];
    for (const [name, event] of cases) {
      await expect(listedEventLeaf(crypto, event), name).rejects.toMatchObject({
        code: "malformed",
      });
    }
  });

  it("refuses other versions and lengths", () => {
    const leaf = fromHex(`02${"00".repeat(64)}`) ?? new Uint8Array();
    expect(() => decodeLeaf(leaf)).toThrow(/version-1 leaf/);
    expect(() => decodeLeaf(new Uint8Array(64))).toThrow(/version-1 leaf/);
  });

  it("names what differs between two leaves", async () => {
    const { leaf } = await listedEventLeaf(crypto, LISTED);
    const other = await listedEventLeaf(crypto, { ...LISTED, logIndex: 42, actorId: "x" });
    expect(describeLeafDifference(leaf, leaf)).toBeUndefined();
    expect(describeLeafDifference(leaf, other.leaf)).toBe(
      "the service's leaf has logIndex 42, a commitment to other content",
    );
  });
});
