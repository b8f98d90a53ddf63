/**
 * List cursors: an opaque token for a position in one project's and environment's
 * timeline. A page starts strictly after the position (keyset paging on `occurred_at
 * desc, id desc`), so events that arrive while a client pages never shift what it has
 * still to read: nothing is skipped or repeated.
 *
 * Format (base64url of 41 bytes): version (1) | occurred_at in microseconds since the
 * epoch, signed big-endian (8) | event id (16) | tag (16). The tag is HMAC-SHA256,
 * truncated, over the scope (project and environment) and the bytes before it, with a
 * key derived from a server secret that every instance shares. So a cursor that was
 * altered, or made for another project or environment, is refused (400): a client can
 * neither forge a position nor carry one across scopes. The position itself is not
 * secret (it is the last event of a page the client was given).
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { ServiceError } from "../errors.js";
import { uuidFromBytes } from "../ids.js";
import type { TimelinePosition } from "../store/event-reads.js";

/** Whose timeline a cursor belongs to. */
export interface CursorScope {
  projectId: string;
  environment: string;
}

/** Encodes and checks cursors. */
export interface CursorCodec {
  encode(scope: CursorScope, position: TimelinePosition): string;
  /** The position of a cursor made for `scope`; a 400 ServiceError otherwise. */
  decode(scope: CursorScope, cursor: string): TimelinePosition;
}

const VERSION = 1;
const BODY_BYTES = 1 + 8 + 16;
const TAG_BYTES = 16;
const CURSOR_CHARS = Math.ceil(((BODY_BYTES + TAG_BYTES) * 4) / 3);
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The message of every refused cursor. */
export const INVALID_CURSOR = "Invalid cursor: use the nextCursor of a previous page";

/** Creates the codec; `secret` is a server secret (its own key is derived from it). */
export function createCursorCodec(secret: Uint8Array): CursorCodec {
  const key = Buffer.from(hkdfSync("sha256", secret, "", "audit-event-service list cursor", 32));

  const tag = (scope: CursorScope, body: Buffer) =>
    createHmac("sha256", key)
      .update(`${scope.projectId}\0${scope.environment}\0`)
      .update(body)
      .digest()
      .subarray(0, TAG_BYTES);

  return {
    encode(scope, position) {
      const body = Buffer.alloc(BODY_BYTES);
      body[0] = VERSION;
      body.writeBigInt64BE(position.occurredMicros, 1);
      Buffer.from(position.eventId.replaceAll("-", ""), "hex").copy(body, 9);
      return Buffer.concat([body, tag(scope, body)]).toString("base64url");
    },

    decode(scope, cursor) {
      const invalid = new ServiceError("bad_request", INVALID_CURSOR);
      if (cursor.length !== CURSOR_CHARS || !BASE64URL.test(cursor)) throw invalid;
      const bytes = Buffer.from(cursor, "base64url");
      // Only the canonical text of the bytes: no second spelling of one cursor.
      if (bytes.length !== BODY_BYTES + TAG_BYTES || bytes.toString("base64url") !== cursor) {
        throw invalid;
      }
      const body = bytes.subarray(0, BODY_BYTES);
      if (!timingSafeEqual(bytes.subarray(BODY_BYTES), tag(scope, body)) || body[0] !== VERSION) {
        throw invalid;
      }
      return { occurredMicros: body.readBigInt64BE(1), eventId: uuidFromBytes(body.subarray(9)) };
    },
  };
}
