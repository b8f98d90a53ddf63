/**
 * Reading credentials from request headers, the same for REST and every RPC protocol
 * (gRPC metadata arrives as the same lower-case headers).
 */

/** What a request presented. */
export type Credential =
  | { kind: "none" }
  | { kind: "api_key"; value: string }
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
  const bearer = bearerValue(authorization);
  if (bearer) return JWT_SHAPE.test(bearer) ? token(bearer) : key(bearer);
  if (projectKey) return key(projectKey);
  // Any other Authorization value (`Bearerpk_...`, `Basic ...`, a bare key) presents a
  // key in the wrong form, which fails the format check even when the value is a
  // well-formed key; "Bearer" with nothing after it presents none.
  if (authorization && !/^Bearer$/i.test(authorization)) return { kind: "malformed" };
  return { kind: "none" };
}

/**
 * The value of an `Authorization: Bearer <value>` header, trimmed; undefined for any
 * other form or an empty value. API keys, frontend tokens and the admin token all
 * travel this way.
 */
export function bearerValue(authorization: string | undefined): string | undefined {
  const value = authorization?.trim();
  return value ? /^Bearer\s+(.+)$/i.exec(value)?.[1]?.trim() || undefined : undefined;
}

function key(value: string): Credential {
  return { kind: "api_key", value };
}

function token(value: string): Credential {
  return { kind: "token", value };
}
