/**
 * The two primitives the verifiable log needs, SHA-256 and Ed25519, behind one small
 * interface so that the same tree, note and verifier code runs on the server (node:crypto,
 * synchronous and fast: see node-crypto.ts) and in the browser (WebCrypto, asynchronous:
 * below). Every caller awaits the results, so a synchronous implementation costs one
 * microtask per call and no more.
 *
 * Invariant: an implementation computes exactly SHA-256 (FIPS 180-4) and Ed25519 (RFC 8032,
 * 32-byte seed as the private key, 64-byte signatures); nothing here is configurable.
 */
import { concatBytes } from "./bytes.js";

/** A value, or a promise of it: what a primitive returns. */
export type Awaitable<T> = T | Promise<T>;

/** SHA-256 and Ed25519 as the log uses them. */
export interface LogCrypto {
  /** SHA-256 of the concatenation of the parts. */
  sha256(...parts: Uint8Array[]): Awaitable<Uint8Array>;
  /** The 32-byte Ed25519 public key of a 32-byte seed. */
  ed25519PublicKey(seed: Uint8Array): Awaitable<Uint8Array>;
  /** The 64-byte Ed25519 signature of the message under the 32-byte seed. */
  ed25519Sign(seed: Uint8Array, message: Uint8Array): Awaitable<Uint8Array>;
  /** True when the signature is a valid Ed25519 signature of the message. */
  ed25519Verify(
    publicKey: Uint8Array,
    message: Uint8Array,
    signature: Uint8Array,
  ): Awaitable<boolean>;
}

/**
 * The slice of WebCrypto used here, typed locally so this module compiles both with the
 * DOM library (viewer) and with Node's types (server), where `crypto.subtle` also exists.
 */
interface SubtleSlice {
  digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer>;
  importKey(
    format: "raw" | "pkcs8",
    keyData: Uint8Array,
    algorithm: { name: string },
    extractable: boolean,
    usages: string[],
  ): Promise<unknown>;
  exportKey(format: "jwk", key: unknown): Promise<{ x?: string }>;
  sign(algorithm: { name: string }, key: unknown, data: Uint8Array): Promise<ArrayBuffer>;
  verify(
    algorithm: { name: string },
    key: unknown,
    signature: Uint8Array,
    data: Uint8Array,
  ): Promise<boolean>;
}

/** DER prefix of a PKCS #8 Ed25519 private key: the 32-byte seed follows (RFC 8410 §7). */
const PKCS8_ED25519_PREFIX = new Uint8Array([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);

function fromBase64Url(text: string): Uint8Array {
  const b64 = text.replaceAll("-", "+").replaceAll("_", "/");
  const binary = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * LogCrypto over WebCrypto (`crypto.subtle`): browsers with Ed25519 in WebCrypto
 * (Chromium 137+, Firefox 129+, Safari 17+) and Node 20+. Throws at creation when the
 * platform has no `crypto.subtle`.
 */
export function createWebLogCrypto(
  subtle: SubtleSlice | undefined = (globalThis as { crypto?: { subtle?: SubtleSlice } }).crypto
    ?.subtle,
): LogCrypto {
  if (subtle === undefined) throw new Error("WebCrypto (crypto.subtle) is not available here");
  const ed25519 = { name: "Ed25519" };
  return {
    async sha256(...parts) {
      return new Uint8Array(await subtle.digest("SHA-256", concatBytes(...parts)));
    },
    async ed25519PublicKey(seed) {
      const key = await subtle.importKey(
        "pkcs8",
        concatBytes(PKCS8_ED25519_PREFIX, seed),
        ed25519,
        true,
        ["sign"],
      );
      const jwk = await subtle.exportKey("jwk", key);
      if (jwk.x === undefined) throw new Error("WebCrypto returned no Ed25519 public key");
      return fromBase64Url(jwk.x);
    },
    async ed25519Sign(seed, message) {
      const key = await subtle.importKey(
        "pkcs8",
        concatBytes(PKCS8_ED25519_PREFIX, seed),
        ed25519,
        false,
        ["sign"],
      );
      return new Uint8Array(await subtle.sign(ed25519, key, message));
    },
    async ed25519Verify(publicKey, message, signature) {
      if (publicKey.length !== 32 || signature.length !== 64) return false;
      const key = await subtle.importKey("raw", publicKey, ed25519, false, ["verify"]);
      return subtle.verify(ed25519, key, signature, message);
    },
  };
}
