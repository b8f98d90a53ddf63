/**
 * The facts about a request that the edge computes once and every layer after it reads
 * (connect-node passes them as context values, the REST edge in the call): which request
 * it is, whether it arrived over HTTPS, from where, and what credential it presented.
 * Nothing after the edge looks at the socket or parses a credential header again.
 */
import { type Credential, type HeaderLookup, readCredential } from "../auth/credentials.js";

/**
 * The headers a request may carry at most once: the edge counts them (node keeps the
 * first Authorization of several and joins other repeats with ", "), and a repeat is
 * refused as ambiguous (auth/credentials.ts, api/ingest-operations.ts).
 */
export const SINGLE_HEADERS: ReadonlySet<string> = new Set([
  "authorization",
  "x-project-key",
  "idempotency-key",
]);

/** Facts about one request, whatever its protocol. */
export interface RequestFacts {
  /** The client's X-Request-Id when acceptable, a new UUID otherwise; echoed back. */
  requestId: string;
  /** Over TLS, or over https at the client's side of a trusted proxy. */
  secure: boolean;
  /** The remote address of the connection (the proxy's, behind one). */
  peer: string | undefined;
  /** The credential of the Authorization or X-Project-Key header. */
  credential: Credential;
  /** The SINGLE_HEADERS the request carried more than once. */
  repeatedHeaders: ReadonlySet<string>;
  /**
   * What the edge found wrong in the body before it was decoded (AdminService's strict
   * JSON, transport/strict-json-gate.ts): the operation refuses it with 400 once the
   * credential is checked.
   */
  bodyProblem?: string;
}

/** What only the connection and the edge can tell. */
export type ConnectionFacts = Omit<RequestFacts, "credential">;

/** The facts of a request: the connection's, and the credential its headers present. */
export function requestFacts(connection: ConnectionFacts, header: HeaderLookup): RequestFacts {
  return { ...connection, credential: readCredential(header, connection.repeatedHeaders) };
}
