/**
 * Reading credentials from request headers, the same for REST and every RPC protocol
 * (gRPC metadata arrives as the same lower-case headers).
 */

/** What a request presented. */
export type Credential =
  | { kind: "none" }
  | { kind: "api_key"; value: string }
  | { kind: "token"; value: string };

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
  if (authorization) {
    const match = /^Bearer\s+(.+)$/i.exec(authorization);
    const value = match?.[1]?.trim();
    if (value) return JWT_SHAPE.test(value) ? { kind: "token", value } : { kind: "api_key", value };
  }
  const projectKey = header("x-project-key")?.trim();
  if (projectKey) return { kind: "api_key", value: projectKey };
  return { kind: "none" };
}
