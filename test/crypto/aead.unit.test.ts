import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { open, seal } from "../../src/crypto/aead.js";

const key = randomBytes(32);

/** The stored layout, spelled out with node:crypto alone: [1][iv 12][tag 16][ciphertext]. */
function openByHand(sealed: Buffer, associatedData: string): Buffer {
  expect(sealed[0]).toBe(1);
  const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(1, 13));
  decipher.setAAD(Buffer.from(associatedData, "utf8"));
  decipher.setAuthTag(sealed.subarray(13, 29));
  return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
}

describe("AES-GCM sealing", () => {
  it.each([0, 1, 15, 16, 17, 1000, 70_000])("round-trips %i bytes in the stored layout", (size) => {
    const plaintext = randomBytes(size);
    const sealed = seal(key, plaintext, "event:p:test:e:payload");
    expect(sealed.length).toBe(29 + size);
    expect(openByHand(sealed, "event:p:test:e:payload").equals(plaintext)).toBe(true);
    expect(open(key, sealed, "event:p:test:e:payload").equals(plaintext)).toBe(true);
  });

  it("opens what was sealed before (one cipher per call from the raw key)", () => {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(Buffer.from("data-key:p:1", "utf8"));
    const body = Buffer.concat([cipher.update("older value"), cipher.final()]);
    const older = Buffer.concat([Buffer.of(1), iv, cipher.getAuthTag(), body]);
    expect(open(key, older, "data-key:p:1").toString()).toBe("older value");
  });

  it("draws a new IV for every seal", () => {
    const a = seal(key, Buffer.from("same"), "x");
    const b = seal(key, Buffer.from("same"), "x");
    expect(a.subarray(1, 13).equals(b.subarray(1, 13))).toBe(false);
  });

  it("refuses another key, other associated data, a changed byte, or an unknown format", () => {
    const sealed = seal(key, Buffer.from("secret"), "event:p:test:e:payload");
    expect(() => open(randomBytes(32), sealed, "event:p:test:e:payload")).toThrow();
    expect(() => open(key, sealed, "event:p:test:e:context")).toThrow();
    for (const at of [1, 13, 29, sealed.length - 1]) {
      const changed = Buffer.from(sealed);
      changed[at] = (changed[at] ?? 0) ^ 1;
      expect(() => open(key, changed, "event:p:test:e:payload")).toThrow();
    }
    const otherFormat = Buffer.from(sealed);
    otherFormat[0] = 2;
    expect(() => open(key, otherFormat, "event:p:test:e:payload")).toThrow(/format/);
    expect(() => open(key, sealed.subarray(0, 20), "event:p:test:e:payload")).toThrow(/format/);
  });

  it("seals under each key buffer it is given, even two with equal bytes", () => {
    const copy = Buffer.from(key);
    const sealed = seal(copy, Buffer.from("v"), "a");
    expect(open(key, sealed, "a").toString()).toBe("v");
    const other = randomBytes(32);
    expect(() => open(other, seal(key, Buffer.from("v"), "a"), "a")).toThrow();
  });
});
