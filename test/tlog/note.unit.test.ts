/**
 * Signed notes and checkpoints against fixed vectors: the example key and note of Go's
 * `sumdb/note` documentation and tests (PeterNeumann, EnochRoot), and the tree note of
 * Go's `sumdb/tlog` tests. Run with both node:crypto and WebCrypto, since the viewer
 * verifies with the latter.
 */
import { describe, expect, it } from "vitest";
import { toBase64 } from "../../src/tlog/bytes.js";
import {
  formatCheckpoint,
  openCheckpoint,
  parseCheckpoint,
  signCheckpoint,
} from "../../src/tlog/checkpoint.js";
import { createWebLogCrypto } from "../../src/tlog/crypto.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import {
  cosignNote,
  isValidKeyName,
  openNote,
  parseSignerKey,
  parseVerifierKey,
  signerKey,
  signNote,
  verifierKey,
} from "../../src/tlog/note.js";
import { recordHash } from "../../src/tlog/tree.js";

const PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT =
  "If you think cryptography is the answer to your problem,\n" +
  "then you don't know what your problem is.\n";
const PETER_SIG =
  "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG =
  "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

describe.each([
  ["node:crypto", createNodeLogCrypto()],
  ["WebCrypto", createWebLogCrypto()],
])("signed notes with %s", (_name, crypto) => {
  it("signs Go's example note to the same bytes", async () => {
    const signer = await parseSignerKey(crypto, PETER_SKEY);
    expect(signer.keyId).toBe(0xc74f20a3);
    expect(await signNote(crypto, TEXT, signer)).toBe(`${TEXT}\n${PETER_SIG}`);
  });

  it("derives the verifier key and re-encodes the signer key of the example", async () => {
    const signer = await parseSignerKey(crypto, PETER_SKEY);
    expect(await verifierKey(crypto, "PeterNeumann", signer.publicKey)).toBe(PETER_VKEY);
    expect(await signerKey(crypto, "PeterNeumann", signer.seed)).toBe(PETER_SKEY);
  });

  it("opens the example with one signature verified and another key's left unverified", async () => {
    const peter = await parseVerifierKey(crypto, PETER_VKEY);
    const note = await openNote(crypto, `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, peter);
    expect(note.text).toBe(TEXT);
    expect(note.sigs).toEqual([
      { name: "PeterNeumann", keyId: 0xc74f20a3, base64: PETER_SIG.slice(15, -1) },
    ]);
    expect(note.unverifiedSigs.map((s) => [s.name, s.keyId])).toEqual([["EnochRoot", 0xaf0cfe78]]);
    const enoch = await parseVerifierKey(crypto, ENOCH_VKEY);
    expect((await openNote(crypto, `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, enoch)).sigs[0]?.name).toBe(
      "EnochRoot",
    );
  });

  it("adds a second signature once, and opens with either key or both", async () => {
    const peter = await parseSignerKey(crypto, PETER_SKEY);
    const other = await parseSignerKey(
      crypto,
      await signerKey(crypto, "PeterNeumann", new Uint8Array(32).fill(3)),
    );
    const note = `${TEXT}\n${PETER_SIG}`;
    const cosigned = await cosignNote(crypto, note, other, TEXT);
    expect(cosigned.startsWith(note)).toBe(true);
    expect(cosigned.slice(note.length)).toBe(
      (await signNote(crypto, TEXT, other)).slice(TEXT.length + 1),
    );
    expect(await cosignNote(crypto, cosigned, other, TEXT)).toBe(cosigned);
    expect(await cosignNote(crypto, note, peter, TEXT)).toBe(note);
    // Never a text other than the one given.
    await expect(cosignNote(crypto, note, other, `${TEXT}more\n`)).rejects.toMatchObject({
      code: "invalid-input",
    });
    const oldKey = await parseVerifierKey(crypto, PETER_VKEY);
    const newKey = await parseVerifierKey(
      crypto,
      await verifierKey(crypto, "PeterNeumann", other.publicKey),
    );
    expect((await openNote(crypto, cosigned, oldKey)).sigs).toHaveLength(1);
    expect((await openNote(crypto, cosigned, newKey)).unverifiedSigs).toHaveLength(1);
    expect((await openNote(crypto, cosigned, [oldKey, newKey])).sigs).toHaveLength(2);
  });

  it("refuses a note whose signature by the key does not verify", async () => {
    const peter = await parseVerifierKey(crypto, PETER_VKEY);
    const bad = `${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`;
    await expect(openNote(crypto, bad, peter)).rejects.toMatchObject({
      code: "bad-signature",
      message: "invalid signature for key PeterNeumann+c74f20a3",
    });
    const changedText = `${TEXT.replace("answer", "ANSWER")}\n${PETER_SIG}`;
    await expect(openNote(crypto, changedText, peter)).rejects.toMatchObject({
      code: "bad-signature",
    });
  });

  it("refuses a note with no signature by the key as unverified", async () => {
    const peter = await parseVerifierKey(crypto, PETER_VKEY);
    await expect(openNote(crypto, `${TEXT}\n${ENOCH_SIG}`, peter)).rejects.toMatchObject({
      code: "unverified",
      message: "note has no verifiable signatures",
    });
  });

  it("refuses malformed notes as Go does", async () => {
    const peter = await parseVerifierKey(crypto, PETER_VKEY);
    const bad: (string | Uint8Array)[] = [
      TEXT,
      `${TEXT}\n`,
      `${TEXT}\n${PETER_SIG.slice(0, -1)}`,
      `\x01${TEXT}\n${PETER_SIG}`,
      new Uint8Array([0xff, ...new TextEncoder().encode(`${TEXT}\n${PETER_SIG}`)]),
      `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${TEXT}\n${PETER_SIG}Unexpected line.\n`,
      `${TEXT}\n${PETER_SIG.repeat(101)}`,
    ];
    for (const msg of bad) {
      await expect(openNote(crypto, msg, peter), String(msg)).rejects.toMatchObject({
        code: "malformed",
      });
    }
  });

  it("refuses mangled verifier keys: every truncation and every changed byte", async () => {
    for (let i = 0; i <= PETER_VKEY.length; i++) {
      for (let j = i + 1; j <= PETER_VKEY.length; j += 7) {
        if (i === 0 && j === PETER_VKEY.length) continue;
        await expect(parseVerifierKey(crypto, PETER_VKEY.slice(i, j))).rejects.toMatchObject({
          code: "malformed",
        });
      }
    }
    for (let i = 0; i < PETER_VKEY.length; i++) {
      const mangled =
        PETER_VKEY.slice(0, i) +
        String.fromCharCode(PETER_VKEY.charCodeAt(i) + 1) +
        PETER_VKEY.slice(i + 1);
      await expect(parseVerifierKey(crypto, mangled), mangled).rejects.toMatchObject({
        code: "malformed",
      });
    }
    // Wrong key length and unknown algorithm, each with a matching key id (Go's test keys).
    for (const key of [
      "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
      "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ]) {
      await expect(parseVerifierKey(crypto, key)).rejects.toMatchObject({ code: "malformed" });
    }
  });

  it("refuses a signer key whose id does not match its public key", async () => {
    await expect(
      parseSignerKey(crypto, PETER_SKEY.replace("c74f20a3", "c74f20a4")),
    ).rejects.toMatchObject({ code: "malformed" });
    await expect(parseSignerKey(crypto, PETER_SKEY.slice(8))).rejects.toMatchObject({
      code: "malformed",
    });
  });
});

describe("key names", () => {
  it("are non-empty with no white space and no plus, as Go requires", () => {
    expect(isValidKeyName("audit.example.com/proj_1/test")).toBe(true);
    for (const bad of ["", "a b", "a+b", "a\tb", "a\u00a0b", "a\u0085b", "a\u2028b", "\ud800"]) {
      expect(isValidKeyName(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});

describe("checkpoints", () => {
  const crypto = createNodeLogCrypto();

  it("format the body like Go's tree note (origin, decimal size, base64 root)", async () => {
    const rootHash = await recordHash(crypto, new TextEncoder().encode("hello world"));
    const text = formatCheckpoint({ origin: "go.sum database tree", size: 123456789012, rootHash });
    expect(text).toBe(
      "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
    );
    expect(parseCheckpoint(text)).toEqual({
      origin: "go.sum database tree",
      size: 123456789012,
      rootHash,
    });
  });

  it("parse extension lines and refuse any other deviation", () => {
    const good = "example.com/log\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
    expect(parseCheckpoint(`${good}ext one\n`).size).toBe(20852163);
    for (const bad of [
      good.slice(0, -1),
      `\n${good}`,
      good.replace("20852163", "020852163"),
      good.replace("20852163", "-1"),
      good.replace("20852163", "0x13e"),
      good.replace("20852163", "99999999999999999999"),
      good.replace("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", "CsUY"),
      good.replace("I=", "J="),
      `${good}\n`,
      "example.com/log\n5\n",
    ]) {
      expect(() => parseCheckpoint(bad), JSON.stringify(bad)).toThrow(/malformed checkpoint/);
    }
  });

  it("sign and open, and refuse another log's checkpoint", async () => {
    const seed = new Uint8Array(32).fill(7);
    const signer = await parseSignerKey(
      crypto,
      await signerKey(crypto, "audit.test/p1/test", seed),
    );
    const verifier = await parseVerifierKey(
      crypto,
      await verifierKey(crypto, "audit.test/p1/test", signer.publicKey),
    );
    const rootHash = await recordHash(crypto, new Uint8Array([1]));
    const note = await signCheckpoint(
      crypto,
      { origin: "audit.test/p1/test", size: 1, rootHash },
      signer,
    );
    expect(note).toMatch(
      new RegExp(
        `^audit\\.test/p1/test\\n1\\n${toBase64(rootHash).replaceAll("+", "\\+")}\\n\\n— audit\\.test/p1/test `,
      ),
    );
    const opened = await openCheckpoint(crypto, note, verifier, "audit.test/p1/test");
    expect(opened).toMatchObject({ origin: "audit.test/p1/test", size: 1, note });
    await expect(
      openCheckpoint(crypto, note, verifier, "audit.test/p2/test"),
    ).rejects.toMatchObject({
      code: "invalid-input",
    });
  });
});
