/**
 * Reading credentials from request headers, the same for REST and every RPC protocol
 * (gRPC metadata arrives as the same lower-case headers). The edge reads them once per
 * request (api/request-facts.ts); everything after works on the Credential.
 *
 * Invariant: a request that presents credentials ambiguously is never resolved by
 * picking one (which project would its event go to?): a repeated Authorization or
 * X-Project-Key, or both headers naming different credentials, is an `ambiguous`
 * Credential, refused with 400 (invalid_argument) by whatever authenticates it.
 */
import { Messages, ServiceError } from "../errors.js";

/** What a request presented. */
export type Credential =
  | { kind: "none" }
  /** `via`: which header carried it (only a Bearer value can be the admin token). */
  | { kind: "api_key"; value: string; via: "bearer" | "x-project-key" }
  | { kind: "token"; value: string }
  /** An Authorization header that is not `Bearer <value>`: refused as a malformed key. */
  | { kind: "malformed" }
  /** Credentials presented ambiguously; `message` says how. */
  | { kind: "ambiguous"; message: string };

/** Header access shared by node's IncomingHttpHeaders and the fetch Headers class. */
export type HeaderLookup = (name: string) => string | undefined;

// Three base64url segments, the first one a JSON object: a JWT, not an API key.
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/**
 * The credential of a request: `Authorization: Bearer <value>` or `X-Project-Key:
 * <value>` (both when they present the same value). A bearer value shaped like a JWT is
 * a frontend token. `repeated` names the headers the request carried more than once.
 */
export function readCredential(
  header: HeaderLookup,
  repeated: ReadonlySet<string> = new Set(),
): Credential {
  if (repeated.has("authorization"))
    return { kind: "ambiguous", message: Messages.twoAuthorizations };
  if (repeated.has("x-project-key")) return { kind: "ambiguous", message: Messages.twoProjectKeys };
  const authorization = header("authorization")?.trim();
  const projectKey = header("x-project-key")?.trim();
  const bearer = authorization ? /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim() : undefined;
  if (bearer && projectKey && projectKey !== bearer) {
    return { kind: "ambiguous", message: Messages.twoCredentials };
  }
  if (bearer) {
    return JWT_SHAPE.test(bearer)
      ? { kind: "token", value: bearer }
      : { kind: "api_key", value: bearer, via: "bearer" };
  }
  if (projectKey) return { kind: "api_key", value: projectKey, via: "x-project-key" };
  // Any other Authorization value (`Bearerpk_...`, `Basic ...`, a bare key) presents a
  // key in the wrong form, which fails the format check even when the value is a
  // well-formed key; "Bearer" with nothing after it presents none.
  if (authorization && !/^Bearer$/i.test(authorization)) return { kind: "malformed" };
  return { kind: "none" };
}

/** Throws the 400 of an ambiguous credential; returns any other unchanged. */
export function unambiguous(credential: Credential): Exclude<Credential, { kind: "ambiguous" }> {
  if (credential.kind === "ambiguous") throw new ServiceError("bad_request", credential.message);
  return credential;
}

/** The value presented as `Authorization: Bearer <value>`, whatever it is; else undefined. */
export function bearerOf(credential: Credential): string | undefined {
  if (credential.kind === "token") return credential.value;
  if (credential.kind === "api_key" && credential.via === "bearer") return credential.value;
  return undefined;
}
