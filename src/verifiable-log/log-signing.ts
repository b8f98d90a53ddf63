/**
 * The service's signing identity for its logs: one Ed25519 key (LOG_SIGNING_KEY, or the
 * embedded default's DATA_DIR/log-signing.key) signs every log's checkpoints, each under
 * the log's own name, its origin `<issuer>/<projectId>/<environment>`. A log's verifier
 * key is therefore `<origin>+<key id>+<public key>` (docs/verifiable-log.md).
 *
 * Invariant: the seed never leaves this module's closure (never logged, never returned).
 */
import type { LogCrypto } from "../tlog/crypto.js";
import {
  isValidKeyName,
  type NoteSigner,
  parseSignerKey,
  signerKey,
  verifierKey,
} from "../tlog/note.js";

/** A log's name, signer and verifier key. */
export interface LogSigning {
  /** The origin of a project-environment's log. */
  origin(projectId: string, environment: string): string;
  /** The signer of a log's checkpoints. */
  signer(origin: string): Promise<NoteSigner>;
  /** The verifier key of a log, as published. */
  verifierKey(origin: string): Promise<string>;
}

/** Options of createLogSigning. */
export interface LogSigningOptions {
  crypto: LogCrypto;
  /** First part of every origin: the service's public name (LOG_ISSUER). */
  issuer: string;
  /** The 32-byte Ed25519 seed. */
  seed: Uint8Array;
}

/** The signing identity over one seed. */
export function createLogSigning(options: LogSigningOptions): LogSigning {
  const { crypto, issuer } = options;
  const seed = options.seed.slice();
  if (seed.length !== 32) throw new Error("the log signing key is 32 bytes");
  if (!isValidKeyName(issuer)) throw new Error("the log issuer has no spaces and no '+'");
  const signers = new Map<string, Promise<NoteSigner>>();
  const signerOf = (origin: string) => {
    let signer = signers.get(origin);
    if (signer === undefined) {
      signer = signerKey(crypto, origin, seed).then((key) => parseSignerKey(crypto, key));
      signers.set(origin, signer);
    }
    return signer;
  };
  return {
    origin(projectId, environment) {
      return `${issuer}/${projectId}/${environment}`;
    },
    signer: signerOf,
    async verifierKey(origin) {
      return verifierKey(crypto, origin, (await signerOf(origin)).publicKey);
    },
  };
}
