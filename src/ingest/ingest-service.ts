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
import type { EventStore, IdempotencyClaim, NewEvent, WriteResult } from "../store/events.js";
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

/** An Idempotency-Key as sent: an empty one counts as absent; one too long is refused. */
export function checkedIdempotencyKey(key: string | undefined): string | undefined {
  if (key === undefined || key === "") return undefined;
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new ServiceError(
      "bad_request",
      `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
    );
  }
  return key;
}

/**
 * One event validated, given its id (`eventId`, or a new one) and sealed for the journal
 * of `principal`'s log: what Create Event and the IngestEvents stream write (without the
 * idempotency claim). Throws the 422 validation error.
 */
export async function journalEvent(
  keyring: Keyring,
  principal: KeyPrincipal,
  body: unknown,
  receivedAt: Date,
  eventId: string = uuidv7(receivedAt.getTime()),
): Promise<{ input: EventInput; event: Omit<NewEvent, "idempotency"> }> {
  const { value: input, issues } = eventValidator.validate(body);
  if (issues.length > 0) {
    throw new ServiceError("validation", Messages.validationFailed, { issues });
  }
  const keys = await keyring.forProject(principal.projectId);
  const at = { projectId: principal.projectId, environment: principal.environment, eventId };
  return {
    input,
    event: {
      ...at,
      occurredAt: input.occurredAt ? new Date(input.occurredAt) : receivedAt,
      receivedAt,
      // Sealed with its salt; its blind indexes are derived behind the journal
      // (log/derive.ts), from these same fields.
      sealed: await sealInput(keys, at, input),
    },
  };
}

/**
 * The claim an Idempotency-Key makes for the body `bodyHash` computes, for the key's
 * lifetime. Without a key there is no claim, and the body is not hashed (its canonical
 * JSON costs more than validating it).
 */
export function idempotencyClaim(
  key: string | undefined,
  bodyHash: () => Buffer,
  receivedAt: Date,
  ttlMs: number,
): IdempotencyClaim | undefined {
  if (key === undefined) return undefined;
  return {
    keyHash: hash("sha256", key, "buffer"),
    bodyHash: bodyHash(),
    expiresAt: new Date(receivedAt.getTime() + ttlMs),
  };
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
      const idempotencyKey = checkedIdempotencyKey(request.idempotencyKey);
      const body = request.readBody();
      const { input, event } = await journalEvent(deps.keyring, principal, body, receivedAt);
      const write = (bodyHash: () => Buffer) =>
        deps.events.createEvent({
          ...event,
          idempotency: idempotencyClaim(idempotencyKey, bodyHash, receivedAt, ttlMs),
        });
      let result: WriteResult;
      try {
        result = await write(() => eventBodyHash(input));
      } catch (error) {
        if (!(error instanceof ServiceError && error.kind === "conflict")) throw error;
        // Claims stored by versions before the canonical event hash hold the canonical
        // JSON hash of the body as sent: a retry matching that is the same request.
        // Once every instance has run this version for IDEMPOTENCY_TTL_SECONDS, no such
        // claim is left and this second look can go.
        result = await write(() => canonicalHash(body));
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
