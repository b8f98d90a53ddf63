/**
 * CreateEvent, the same pipeline for every protocol (DESIGN section 4): credentials,
 * rate limit, body, validation, idempotency, quota, then one append to the event's log
 * (the journal). An event is acknowledged only after that append commits. The transports do what precedes
 * (HTTPS check, 413) and render the result.
 */
import { hash } from "node:crypto";
import type { Authenticator, KeyPrincipal } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import type { EventAddress, EventPayload, SealedEvent } from "../crypto/event-cipher.js";
import { sealEvent } from "../crypto/event-cipher.js";
import type { Keyring, ProjectKeys } from "../crypto/keyring.js";
import { Messages, ServiceError } from "../errors.js";
import { uuidv7 } from "../ids.js";
import type { AdmissionCheck } from "../limits/admission.js";
import type { EventStore, WriteResult } from "../store/events.js";
import type { EventInput } from "../vocabulary/event-input.js";
import { canonicalHash } from "./canonical-json.js";
import { eventValidator } from "./event-input.js";
import { encodeHtml, encodeJson } from "./html-encoding.js";
import { eventBodyHash } from "./idempotency-hash.js";

/** The longest Idempotency-Key accepted. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** A CreateEvent request, as any transport hands it over. */
export interface CreateEventRequest {
  credential: Credential;
  idempotencyKey: string | undefined;
  /** The request carried several Idempotency-Key headers: refused, never joined. */
  idempotencyKeyRepeated?: boolean;
  /**
   * Produces the body as parsed JSON, or throws a 400 ServiceError (wrong content
   * type, malformed JSON). Called only once credentials and limits have passed.
   */
  readBody: () => unknown;
}

/** Dependencies of the ingest service. */
export interface IngestDeps {
  authenticator: Authenticator;
  keyring: Keyring;
  events: EventStore;
  idempotencyTtlSeconds: number;
  /** Checks before the body is read, in order (rate limit). */
  admission?: AdmissionCheck[];
  now?: () => Date;
  /** Called once per event created (metrics). */
  onCreated?: (principal: KeyPrincipal) => void;
}

/** The CreateEvent operation. */
export interface IngestService {
  createEvent(request: CreateEventRequest): Promise<WriteResult>;
}

/** Creates the ingest service. */
export function createIngestService(deps: IngestDeps): IngestService {
  const now = deps.now ?? (() => new Date());
  const ttlMs = deps.idempotencyTtlSeconds * 1000;

  return {
    async createEvent(request) {
      const receivedAt = now();
      const principal = await deps.authenticator.requireApiKey(request.credential);
      for (const check of deps.admission ?? []) await check.admit(principal);

      if (request.idempotencyKeyRepeated) {
        throw new ServiceError("bad_request", Messages.twoIdempotencyKeys);
      }
      const idempotencyKey = request.idempotencyKey;
      if (idempotencyKey !== undefined && idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
        throw new ServiceError(
          "bad_request",
          `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
        );
      }
      const body = request.readBody();
      const { value: input, issues } = eventValidator.validate(body);
      if (issues.length > 0) {
        throw new ServiceError("validation", Messages.validationFailed, { issues });
      }

      const eventId = uuidv7(receivedAt.getTime());
      const keys = await deps.keyring.forProject(principal.projectId);
      const at = { projectId: principal.projectId, environment: principal.environment, eventId };
      // Sealed with its salt; its blind indexes are derived behind the journal
      // (log/derive.ts), from these same fields.
      const sealed = await sealInput(keys, at, input);

      const write = (bodyHash: Buffer) =>
        deps.events.createEvent({
          ...at,
          occurredAt: input.occurredAt ? new Date(input.occurredAt) : receivedAt,
          receivedAt,
          sealed,
          idempotency:
            idempotencyKey === undefined
              ? undefined
              : {
                  keyHash: hash("sha256", idempotencyKey, "buffer"),
                  bodyHash,
                  expiresAt: new Date(receivedAt.getTime() + ttlMs),
                },
        });
      let result: WriteResult;
      try {
        result = await write(eventBodyHash(input));
      } catch (error) {
        if (!(error instanceof ServiceError && error.kind === "conflict")) throw error;
        // Claims stored by versions before the canonical event hash hold the canonical
        // JSON hash of the body as sent: a retry matching that is the same request.
        // Once every instance has run this version for IDEMPOTENCY_TTL_SECONDS, no such
        // claim is left and this second look can go.
        result = await write(canonicalHash(body));
      }
      if (!result.replayed) deps.onCreated?.(principal);
      return result;
    },
  };
}

/**
 * Seals a valid event's fields as stored (HTML-encoded, actorType defaulted) and its
 * context, with a new salt; its blind indexes are derived behind the journal.
 */
export function sealInput(
  keys: ProjectKeys,
  at: EventAddress,
  input: EventInput,
): Promise<SealedEvent> {
  return sealEvent(keys, at, toPayload(input), encodeContext(input));
}

function encodeContext(input: EventInput) {
  return input.context === undefined
    ? undefined
    : (encodeJson(input.context) as typeof input.context);
}

/** The stored fields: strings HTML-encoded, actorType defaulted. */
function toPayload(input: EventInput): EventPayload {
  const payload: EventPayload = {
    entityType: encodeHtml(input.entityType),
    entityId: encodeHtml(input.entityId),
    actorType: input.actorType ?? "user",
    actorId: encodeHtml(input.actorId),
  };
  if (input.actionKey !== undefined) payload.actionKey = encodeHtml(input.actionKey);
  if (input.action !== undefined) payload.action = encodeHtml(input.action);
  if (input.actionDescription !== undefined) {
    payload.actionDescription = encodeHtml(input.actionDescription);
  }
  if (input.actorDisplay !== undefined) payload.actorDisplay = encodeHtml(input.actorDisplay);
  if (input.tenantId !== undefined) payload.tenantId = encodeHtml(input.tenantId);
  if (input.source !== undefined) payload.source = encodeHtml(input.source);
  if (input.changes !== undefined) {
    payload.changes = input.changes.map((change) => ({
      ...change,
      path: encodeHtml(change.path),
      before: encodeJson(change.before),
      after: encodeJson(change.after),
    }));
  }
  return payload;
}
