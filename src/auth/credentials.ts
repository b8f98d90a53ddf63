/**
 * Reading credentials from request headers, the same for REST and every RPC protocol
 * (gRPC metadata arrives as the same lower-case headers). The edge reads them once per
 * request (api/request-facts.ts); everything after works on the Credential.
 */

/** What a request presented. */
export type Credential =
  | { kind: "none" }
  /** `via`: which header carried it (only a Bearer value can be the admin token). */
  | { kind: "api_key"; value: string; via: "bearer" | "x-project-key" }
  | { kind: "token"; value: string }
  /** An Authorization header that is not `Bearer <value>`: refused as a malformed key. */
  | { kind: "malformed" };

/** Header access shared by node's IncomingHttpHeaders and the fetch Headers class. */
export type HeaderLookup = (name: string) => string | undefined;

// Three base64url segments, the first one a JSON object: a JWT, not an API key.
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/**
 * The credential of a request: `Authorization: Bearer <value>` first, then
 * `X-Project-Key: <value>`. A bearer value shaped like a JWT is a frontend token.
 */
export function readCredential(header: HeaderLookup): Credential {
  const authorization = header("authorization")?.trim();
  const projectKey = header("x-project-key")?.trim();
  const bearer = authorization ? /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim() : undefined;
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

/** The value presented as `Authorization: Bearer <value>`, whatever it is; else undefined. */
export function bearerOf(credential: Credential): string | undefined {
  if (credential.kind === "token") return credential.value;
  if (credential.kind === "api_key" && credential.via === "bearer") return credential.value;
  return undefined;
}
