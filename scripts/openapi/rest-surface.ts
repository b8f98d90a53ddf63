/**
 * What the REST edge does that the protos cannot say: the statuses of each annotated
 * method, its response headers, its error bodies (spec section 7) and the limits that the
 * operations check in code rather than through `(audit.v1.field)` rules. The messages are
 * the service's own constants, imported, so the document cannot drift from them; the
 * tests in test/openapi/ check live responses against the document built from this.
 */

import { TokenMessages } from "../../src/auth/frontend-tokens.js";
import { Messages } from "../../src/errors.js";
import { INVALID_CURSOR } from "../../src/events/cursor.js";
import {
  DEFAULT_LIMIT,
  MAX_LIMIT,
  MAX_QUERY_CHARS,
  MAX_QUERY_WORDS,
} from "../../src/events/list-params.js";
import { DEFAULT_TOKEN_SECONDS, MAX_TOKEN_SECONDS } from "../../src/events/token-service.js";
import { MAX_BATCH_EVENTS } from "../../src/ingest/bulk-ingest.js";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../../src/ingest/ingest-service.js";
import { DATE_TIME } from "../../src/ingest/validation.js";
import { MONTHLY_LIMITS } from "../../src/limits/monthly-quota.js";
import { CSV_COLUMNS } from "../../src/transport/event-rendering.js";
import { EXPORT_PATH, STREAM_PATH } from "../../src/transport/rest-streams.js";
import { LogMessages } from "../../src/verifiable-log/log-service.js";
import { MAX_NESTING } from "../../src/vocabulary/json-limits.js";
import { MAX_TENANT_ID_CHARS } from "../../src/vocabulary/text-length.js";

/** A JSON Schema (2020-12) object, as OpenAPI 3.1 embeds it. */
export type JsonSchema = { [keyword: string]: unknown };

/** One error status of a method. */
export interface ErrorCase {
  status: number;
  description: string;
  /**
   * The `error` strings this status carries. `exact`: the only ones (the schema's enum);
   * otherwise examples (400s name the offending parameter, and grow with the checks).
   */
  messages: readonly string[];
  exact: boolean;
  /** Another body this status may have instead (403: the quota refusal). */
  alternative?: "QuotaError";
  /** The body is the validation error (422). */
  validation?: boolean;
  headers?: Readonly<Record<string, ResponseHeader>>;
}

/** A response header: OpenAPI's header object. */
export interface ResponseHeader {
  description: string;
  required: boolean;
  schema: JsonSchema;
}

/** The REST facts of one annotated method. */
export interface MethodSurface {
  /** Success statuses with their meaning and headers (all share the response message). */
  success: readonly {
    status: number;
    description: string;
    headers?: Readonly<Record<string, ResponseHeader>>;
  }[];
  /** Who may call: API keys always; frontend tokens only where listed. */
  frontendToken: boolean;
  /**
   * Query parameters the operation refuses without (400): `required` in the document,
   * although the proto field is optional (its absence is answered, not defaulted).
   */
  requiredQuery?: readonly string[];
  /** Query parameters beside a `*` body (the REST edge's `queryFields`). */
  query?: readonly { name: string; description: string; schema: JsonSchema }[];
  /** Request headers beyond the credentials and X-Request-Id. */
  headers?: readonly { name: string; description: string; schema: JsonSchema }[];
  /** Top-level response fields always present, with the value shown when unset. */
  alwaysPresent?: Readonly<Record<string, "empty-array" | "null">>;
  /** REST answers with this string field alone, as text/plain. */
  text?: string;
  /**
   * A server-streaming method's REST form (rest-streams.ts), which the proto does not
   * annotate: a GET of `path` whose 200 body is one of `media`, by the media type.
   */
  stream?: { path: string; media: Readonly<Record<string, StreamBody>> };
  errors: readonly ErrorCase[];
}

/**
 * A streamed body. OpenAPI 3.1 has no `itemSchema` (3.2): as the OpenAPI media type
 * registry allows for earlier versions, NDJSON is modeled as a JSON array of its lines'
 * objects and Server-Sent Events as an array of events (`id`, `event`, `data`, `retry`,
 * comments left out); CSV is text.
 */
export type StreamBody = "ndjson-events" | "csv-events" | "sse-events";

// JSON Schema patterns have no flags: a case-insensitive regex spells out its letters.
function jsonSchemaPattern(regex: RegExp): string {
  if (!regex.flags.includes("i")) return regex.source;
  return regex.source.replace(
    /(?<!\\)[A-Za-z]/g,
    (letter) => `[${letter.toUpperCase()}${letter.toLowerCase()}]`,
  );
}

/**
 * The service's date-time as a pattern: its own form (zone required, seconds optional),
 * not RFC 3339's `format: date-time`, in the body (`occurredAt`) and the query (`from`,
 * `to`) alike. What a pattern cannot say is in DATE_TIME_NOTE.
 */
export const DATE_TIME_PATTERN = jsonSchemaPattern(DATE_TIME);
export const DATE_TIME_NOTE =
  " A date-time with a time zone (seconds optional), like 2024-05-01T00:00:00Z: a real date and time, between years 0001 and 9999 in UTC.";

/** Limits checked in code, by message and JSON field name (JSON Schema keywords). */
const LIST_FILTER_LIMITS: Readonly<Record<string, JsonSchema>> = {
  actorId: { minLength: 1 },
  entityType: { minLength: 1 },
  entityId: { minLength: 1 },
  action: { minLength: 1 },
  tenantId: { minLength: 1 },
  q: { maxLength: MAX_QUERY_CHARS },
  from: { pattern: DATE_TIME_PATTERN },
  to: { pattern: DATE_TIME_PATTERN },
};

export const FIELD_LIMITS: Readonly<Record<string, Readonly<Record<string, JsonSchema>>>> = {
  "audit.v1.Event": { actorType: { default: "user" } },
  "audit.v1.ListEventsRequest": {
    ...LIST_FILTER_LIMITS,
    limit: { minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  },
  // The streams take the same filters, and a log-index range.
  "audit.v1.ExportEventsRequest": { ...LIST_FILTER_LIMITS, fromIndex: { default: 0 } },
  "audit.v1.FollowEventsRequest": { ...LIST_FILTER_LIMITS, fromIndex: { default: 0 } },
  // Published checkpoint sizes: positive (a size no log has reached is 404, not 400).
  "audit.v1.GetInclusionProofRequest": {
    eventId: { format: "uuid" },
    treeSize: { minimum: 1 },
  },
  "audit.v1.GetConsistencyProofRequest": {
    from: { minimum: 1 },
    to: { minimum: 1 },
  },
  "audit.v1.CreateFrontendTokenRequest": {
    expiresInSeconds: { minimum: 1, maximum: MAX_TOKEN_SECONDS, default: DEFAULT_TOKEN_SECONDS },
    tenantId: { minLength: 1, maxLength: MAX_TENANT_ID_CHARS },
  },
};

/** The codes of the 422 details (src/ingest/validation.ts). */
export const VALIDATION_CODES = [
  "invalid_type",
  "too_big",
  "invalid_enum_value",
  "invalid_string",
  "too_small",
  "custom",
] as const;

/** The plans of the quota refusal's `plan`. */
export const PLANS = Object.keys(MONTHLY_LIMITS);

/** The `error` prefix of the quota refusal (the rest names the plan and its limit). */
export const QUOTA_MESSAGE_PREFIX = "Monthly event limit reached: ";

const BODY_400 = [
  "Content-Type must be application/json",
  "Content-Type charset must be utf-8",
  "Content-Encoding is not supported: send the body uncompressed",
  "Request body is not valid UTF-8",
  "Request body is not valid JSON",
  `Request body is nested more than ${MAX_NESTING} levels deep`,
  "Request body was not fully received",
];

// Over plain HTTP with NODE_ENV=production (TLS, or X-Forwarded-Proto with TRUST_PROXY).
const HTTPS_400 = Messages.httpsRequired;

// Credentials given twice over (docs/api.md, Authentication): refused on every route.
const AMBIGUOUS_400 = [
  Messages.twoCredentials,
  Messages.twoAuthorizations,
  Messages.twoProjectKeys,
];

/** The 400 of a route without parameters: what any request can get, or a query parameter. */
const request400: ErrorCase = {
  status: 400,
  description:
    "Ambiguous credentials, a query parameter (the route takes none), or plain HTTP in production.",
  messages: [
    ...AMBIGUOUS_400,
    HTTPS_400,
    'Unknown query parameter "size": this endpoint takes none',
  ],
  exact: false,
};

const common = {
  tooLarge: {
    status: 413,
    description: "The body is over 1 MB (the connection is closed after the answer).",
    messages: [Messages.payloadTooLarge],
    exact: true,
  },
  internal: {
    status: 500,
    description: "An unexpected failure; its cause is logged with the request id, never sent.",
    messages: [Messages.internal],
    exact: true,
  },
  unavailable: {
    status: 503,
    description: "The database cannot be reached; the service reconnects by itself.",
    messages: [Messages.unavailable],
    exact: true,
  },
} satisfies Record<string, ErrorCase>;

const apiKey401: ErrorCase = {
  status: 401,
  description: "No API key, a key that does not follow `pk_<env>_<random>`, or an unknown key.",
  messages: [Messages.missingKey, Messages.invalidKeyFormat, Messages.invalidKey],
  exact: true,
};

/** The reader's 401 and 403 (an API key or a frontend token), as for List Events. */
const reader401: ErrorCase = {
  status: 401,
  description: "No credential, a malformed or unknown API key, or an expired or invalid token.",
  messages: [
    Messages.missingKey,
    Messages.invalidKeyFormat,
    Messages.invalidKey,
    TokenMessages.expired,
    TokenMessages.invalid,
  ],
  exact: true,
};
const reader403: ErrorCase = {
  status: 403,
  description: "The API key (or the key that issued the token) is revoked or retired.",
  messages: [Messages.revokedKey],
  exact: true,
};

/** The 400s both streams share: the list's filter errors and the log-index range's. */
const STREAM_400 = [
  "actorId must not be empty",
  `q must be at most ${MAX_QUERY_CHARS} characters`,
  "from must not be later than to",
  "fromIndex must be a log index (a non-negative integer)",
  "fromIndex 12 is beyond the end of the log, which holds 10 events",
  "limit is not a parameter of a log stream: use fromIndex to resume",
  "cursor is not a parameter of a log stream: use fromIndex to resume",
  "fromIndex must be given once in the query string",
  'Unknown query parameter "tenant": the message lists the parameters the stream takes',
];

/**
 * 503 of an ingest call: the database, too many requests in progress (admission control),
 * or the log's integrator too far behind (the pushback); the last two with Retry-After.
 */
const ingest503: ErrorCase = {
  status: 503,
  description:
    "The database cannot be reached; too many requests are in progress; or this log's recent events are still being indexed (pushback, INGEST_MAX_LAG_SECONDS). Nothing was stored: retry after Retry-After.",
  messages: [Messages.unavailable, Messages.overloaded, Messages.integrationBehind],
  exact: true,
  headers: {
    "Retry-After": {
      description: "Whole seconds to wait before trying again (with the last two causes).",
      required: false,
      schema: { type: "string", pattern: "^[1-9][0-9]*$" },
    },
  },
};

/**
 * 503 of a read that holds every event acknowledged before it (read-your-writes): the
 * database, or the integrator too far behind (with Retry-After); `limited`, also too
 * many reads in progress (READ_MAX_IN_FLIGHT: the list, not the streams); `also`, a
 * follow's refusal during shutdown.
 */
function reads503(
  also: { message: string; description: string } | undefined,
  limited = false,
): ErrorCase {
  const overload = limited ? [Messages.overloaded] : [];
  return {
    status: 503,
    description: `The database cannot be reached${limited ? ", too many requests are in progress," : ""} or recent events are still being indexed (with Retry-After: try again then)${also ? `; ${also.description}` : ""}.`,
    messages: [
      Messages.unavailable,
      ...overload,
      Messages.integrationBehind,
      ...(also ? [also.message] : []),
    ],
    exact: true,
    headers: {
      "Retry-After": {
        description: "Whole seconds to wait before trying again (with a refusal that says so).",
        required: false,
        schema: { type: "string", pattern: "^[1-9][0-9]*$" },
      },
    },
  };
}

/**
 * 503 of a read limited by READ_MAX_IN_FLIGHT that holds no read-your-writes wait (the
 * log's checkpoints and proofs, frontend tokens): the database, or too many reads in
 * progress (with Retry-After).
 */
const limitedRead503: ErrorCase = {
  status: 503,
  description:
    "The database cannot be reached, or too many requests are in progress (with Retry-After: try again then).",
  messages: [Messages.unavailable, Messages.overloaded],
  exact: true,
  headers: {
    "Retry-After": {
      description: "Whole seconds to wait before trying again (with the overload refusal).",
      required: false,
      schema: { type: "string", pattern: "^[1-9][0-9]*$" },
    },
  },
};

/**
 * 503 of the inclusion proof: as `limitedRead503`, and the integrator too far behind to
 * number an event acknowledged before the request (it waits for it, as a list does).
 */
const proofRead503: ErrorCase = {
  ...limitedRead503,
  description:
    "The database cannot be reached, too many requests are in progress, or recent events are still being indexed (with Retry-After: try again then).",
  messages: [...limitedRead503.messages, Messages.integrationBehind],
};

/** The surface of each annotated method, by `Service.Method`. */
export const REST_SURFACE: Readonly<Record<string, MethodSurface>> = {
  "audit.v1.IngestService.CreateEvent": {
    frontendToken: false,
    success: [
      { status: 201, description: "The event was recorded (its transaction committed)." },
      {
        status: 200,
        description:
          "Idempotent replay: the same Idempotency-Key and the same body (compared canonically) within its lifetime. The original eventId and receivedAt; no new event.",
        headers: {
          "Idempotent-Replayed": {
            description: "Sent on a replay only.",
            required: true,
            schema: { type: "string", const: "true" },
          },
        },
      },
    ],
    headers: [
      {
        name: "Idempotency-Key",
        description:
          "Makes the request safe to retry, scoped to the key's project and environment, for 24 hours (IDEMPOTENCY_TTL_SECONDS). Empty counts as absent.",
        schema: { type: "string", maxLength: MAX_IDEMPOTENCY_KEY_LENGTH },
      },
    ],
    errors: [
      {
        status: 400,
        description: "The request cannot be read, or plain HTTP in production.",
        messages: [
          ...BODY_400,
          `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
          Messages.twoIdempotencyKeys,
          HTTPS_400,
          ...AMBIGUOUS_400,
        ],
        exact: false,
      },
      apiKey401,
      {
        status: 403,
        description:
          "The key is revoked or retired, a frontend token was sent (read-only), or the plan's monthly event limit is reached (the body then has current, limit and plan).",
        messages: [Messages.revokedKey, Messages.readOnlyToken],
        exact: true,
        alternative: "QuotaError",
      },
      {
        status: 409,
        description:
          "The Idempotency-Key was used with a different body. Do not retry with the same key and body.",
        messages: [Messages.idempotencyConflict],
        exact: true,
      },
      common.tooLarge,
      {
        status: 422,
        description: "The event breaks the field rules: every failing field is listed.",
        messages: [Messages.validationFailed],
        exact: true,
        validation: true,
      },
      {
        status: 429,
        description:
          "The API key's rate limit (RATE_LIMIT_MAX requests in a rolling RATE_LIMIT_WINDOW_SECONDS window, 100 in 60 s by default) is reached.",
        messages: [Messages.rateLimited],
        exact: true,
        headers: {
          "Retry-After": {
            description: "Whole seconds until the oldest counted request leaves the window.",
            required: true,
            schema: { type: "string", pattern: "^[1-9][0-9]*$" },
          },
        },
      },
      common.internal,
      ingest503,
    ],
  },
  "audit.v1.IngestService.CreateEvents": {
    frontendToken: false,
    // A batch has 1 to 500 events, each with its result.
    alwaysPresent: { results: "empty-array" },
    success: [
      {
        status: 201,
        description:
          "Every event was recorded, in one transaction: each result has its eventId and receivedAt.",
      },
      {
        status: 207,
        description:
          "Some events were invalid: the valid ones were recorded, and each invalid one's result has `error` and `details` (its 422 details).",
      },
      {
        status: 200,
        description:
          "Idempotent replay of the whole batch: the original results, nothing recorded now.",
        headers: {
          "Idempotent-Replayed": {
            description: "Sent on a replay only.",
            required: true,
            schema: { type: "string", const: "true" },
          },
        },
      },
    ],
    query: [
      {
        name: "atomic",
        description:
          "`true`: all or nothing: the events are recorded only if every one is valid (422 otherwise).",
        schema: { type: "string", enum: ["true", "false"], default: "false" },
      },
    ],
    headers: [
      {
        name: "Idempotency-Key",
        description:
          "Makes the whole batch safe to retry, scoped to the key's project and environment, for 24 hours; batch keys are apart from single events' keys. Empty counts as absent.",
        schema: { type: "string", maxLength: MAX_IDEMPOTENCY_KEY_LENGTH },
      },
    ],
    errors: [
      {
        status: 400,
        description: "The request cannot be read, or plain HTTP in production.",
        messages: [
          ...BODY_400,
          `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
          Messages.twoIdempotencyKeys,
          HTTPS_400,
          ...AMBIGUOUS_400,
        ],
        exact: false,
      },
      apiKey401,
      {
        status: 403,
        description:
          "The key is revoked or retired, a frontend token was sent, or the batch does not fit under the plan's monthly event limit (the body then has current, limit and plan; nothing was recorded).",
        messages: [Messages.revokedKey, Messages.readOnlyToken],
        exact: true,
        alternative: "QuotaError",
      },
      {
        status: 409,
        description: "The Idempotency-Key was used with a different batch.",
        messages: [Messages.idempotencyConflict],
        exact: true,
      },
      {
        ...common.tooLarge,
        description: "The body is over 5 MB (the connection is closed after the answer).",
      },
      {
        status: 422,
        description: `No event is valid, any is invalid with atomic=true (an event over 1 MB of JSON too), or the envelope is wrong (the body not an object: path []; events missing, not an array, or not 1 to ${MAX_BATCH_EVENTS} events: path ["events"]; atomic not a boolean: path ["atomic"]): every failing field of every event is listed, its path starting with the event's index.`,
        messages: [Messages.validationFailed],
        exact: true,
        validation: true,
      },
      {
        status: 429,
        description: "The API key's rate limit is reached (a batch counts as one request).",
        messages: [Messages.rateLimited],
        exact: true,
        headers: {
          "Retry-After": {
            description: "Whole seconds until the oldest counted request leaves the window.",
            required: true,
            schema: { type: "string", pattern: "^[1-9][0-9]*$" },
          },
        },
      },
      common.internal,
      ingest503,
    ],
  },
  "audit.v1.EventService.ListEvents": {
    frontendToken: true,
    success: [{ status: 200, description: "One page of events, newest first." }],
    alwaysPresent: { events: "empty-array", nextCursor: "null" },
    errors: [
      {
        status: 400,
        description: "A parameter is wrong (the message names it), or plain HTTP in production.",
        messages: [
          "actorId must not be empty",
          `q must be at most ${MAX_QUERY_CHARS} characters`,
          "q must contain at least one letter or digit",
          `q must have at most ${MAX_QUERY_WORDS} words`,
          "from must be an ISO 8601 date-time with a time zone, like 2024-05-01T00:00:00Z, between years 0001 and 9999 in UTC",
          "from must not be later than to",
          `limit must be an integer from 1 to ${MAX_LIMIT}`,
          INVALID_CURSOR,
          "limit must be given once in the query string",
          'Unknown query parameter "tenant": this endpoint takes actorId, entityType, entityId, action, tenantId, q, from, to, limit, cursor',
          HTTPS_400,
          ...AMBIGUOUS_400,
        ],
        exact: false,
      },
      {
        status: 401,
        description:
          "No credential, a malformed or unknown API key, or a frontend token that is expired or invalid (bad signature, or its key no longer exists).",
        messages: [
          Messages.missingKey,
          Messages.invalidKeyFormat,
          Messages.invalidKey,
          TokenMessages.expired,
          TokenMessages.invalid,
        ],
        exact: true,
      },
      {
        status: 403,
        description: "The API key (or the key that issued the token) is revoked or retired.",
        messages: [Messages.revokedKey],
        exact: true,
      },
      common.internal,
      reads503(undefined, true),
    ],
  },
  "audit.v1.TokenService.CreateFrontendToken": {
    frontendToken: false,
    success: [{ status: 200, description: "A signed read-only token (JWT) and its expiry." }],
    errors: [
      {
        status: 400,
        description: "The body cannot be read or a field is wrong, or plain HTTP in production.",
        messages: [
          ...BODY_400,
          "Request body must be a JSON object",
          `expiresInSeconds must be an integer from 1 to ${MAX_TOKEN_SECONDS}`,
          `tenantId must be a string of 1 to ${MAX_TENANT_ID_CHARS} characters`,
          HTTPS_400,
          ...AMBIGUOUS_400,
        ],
        exact: false,
      },
      apiKey401,
      {
        status: 403,
        description: "The key is revoked or retired, or a frontend token was sent.",
        messages: [
          Messages.revokedKey,
          "Frontend tokens are read-only and cannot issue tokens: use an API key",
        ],
        exact: true,
      },
      common.tooLarge,
      common.internal,
      limitedRead503,
    ],
  },
  ...logSurfaces(),
  ...streamSurfaces(),
};

/** The verifiable log's reads (docs/verifiable-log.md): the same credentials as ListEvents. */
function logSurfaces(): Record<string, MethodSurface> {
  const tail = [reader401, reader403, common.internal, limitedRead503];
  const noCheckpoint: ErrorCase = {
    status: 404,
    description: "No checkpoint has been published yet (the log has no event).",
    messages: [LogMessages.noCheckpoint],
    exact: true,
  };
  return {
    "audit.v1.LogService.GetCheckpoint": {
      frontendToken: true,
      success: [{ status: 200, description: "The latest signed checkpoint (a signed note)." }],
      text: "checkpoint",
      errors: [request400, noCheckpoint, ...tail],
    },
    "audit.v1.LogService.GetVerifierKey": {
      frontendToken: true,
      success: [{ status: 200, description: "The log's verifier key, <name>+<key id>+<key>." }],
      text: "verifierKey",
      errors: [request400, ...tail],
    },
    "audit.v1.LogService.GetInclusionProof": {
      frontendToken: true,
      requiredQuery: ["eventId"],
      success: [{ status: 200, description: "The event's leaf and its audit path." }],
      alwaysPresent: { hashes: "empty-array" },
      errors: [
        {
          status: 400,
          description:
            "eventId is missing or not a UUID, treeSize is not a positive integer, or a parameter is repeated or unknown.",
          messages: [
            LogMessages.eventIdRequired,
            LogMessages.eventIdUuid,
            "treeSize must be a positive integer",
            "treeSize must be given once in the query string",
            'Unknown query parameter "index": this endpoint takes eventId, treeSize',
            ...AMBIGUOUS_400,
            HTTPS_400,
          ],
          exact: false,
        },
        {
          status: 404,
          description:
            "No such event in the caller's log, no checkpoint of that size, or the event is newer than the checkpoint.",
          messages: [
            LogMessages.eventNotFound,
            LogMessages.noCheckpoint,
            "No checkpoint of tree size 1000 has been published",
            "Event 01a2b3c4-0000-7000-8000-000000000000 (logIndex 13) is not in the checkpoint of tree size 12",
          ],
          exact: false,
        },
        reader401,
        reader403,
        common.internal,
        proofRead503,
      ],
    },
    "audit.v1.LogService.GetConsistencyProof": {
      frontendToken: true,
      requiredQuery: ["from", "to"],
      success: [{ status: 200, description: "The consistency proof between two published sizes." }],
      alwaysPresent: { hashes: "empty-array" },
      errors: [
        {
          status: 400,
          description:
            "from or to is missing or not a positive integer, from > to, or a parameter is repeated or unknown.",
          messages: [
            LogMessages.sizesRequired,
            LogMessages.fromAfterTo,
            "from must be a positive integer",
            "from must be given once in the query string",
            'Unknown query parameter "size": this endpoint takes from, to',
            ...AMBIGUOUS_400,
            HTTPS_400,
          ],
          exact: false,
        },
        {
          status: 404,
          description: "No checkpoint of one of the sizes has been published.",
          messages: ["No checkpoint of tree size 7 has been published"],
          exact: false,
        },
        ...tail,
      ],
    },
  };
}

/** The export and follow streams (docs/export.md): the same credentials as ListEvents. */
function streamSurfaces(): Record<string, MethodSurface> {
  return {
    "audit.v1.EventService.ExportEvents": {
      frontendToken: true,
      stream: {
        path: EXPORT_PATH,
        media: {
          "application/x-ndjson": "ndjson-events",
          "text/csv": "csv-events",
        },
      },
      success: [
        {
          status: 200,
          description: `The matching events of the range in logIndex order, chunked: NDJSON (the default; charset=utf-8), one line per event, the list's record with logIndex; or CSV (format=csv; charset=utf-8; header=present; RFC 4180, CRLF) with the header row ${CSV_COLUMNS.join(",")}, context and changes as JSON text, salt in hex, a cell starting with =, +, -, @, tab or CR prefixed with '. Errors after the first byte cut the body: resume with fromIndex = the last logIndex received + 1 and the same toIndex.`,
          headers: {
            "Content-Disposition": {
              description:
                'attachment; filename="audit-events-<projectId>-<environment>-<first>-<last>.<ndjson|csv>" (`empty` for an empty range).',
              required: true,
              schema: {
                type: "string",
                pattern: '^attachment; filename="audit-events-.+\\.(ndjson|csv)"$',
              },
            },
            "X-Export-From-Index": {
              description: "The first log index of the range (inclusive).",
              required: true,
              schema: { type: "string", pattern: "^[0-9]+$" },
            },
            "X-Export-End-Index": {
              description:
                "The end of the range (exclusive): the log's size when the export began, or toIndex + 1.",
              required: true,
              schema: { type: "string", pattern: "^[0-9]+$" },
            },
            "Cache-Control": {
              description: "Never cached.",
              required: true,
              schema: { type: "string", const: "no-store" },
            },
          },
        },
      ],
      query: [
        {
          name: "format",
          description: "`ndjson` (the default) or `csv`.",
          schema: { type: "string", enum: ["ndjson", "csv"], default: "ndjson" },
        },
      ],
      errors: [
        {
          status: 400,
          description:
            "A parameter is wrong (the message names it), the range is inverted or starts past the log's end, or plain HTTP in production. Sent before the first byte of the export, as JSON.",
          messages: [
            "format must be ndjson or csv",
            "fromIndex must not be greater than toIndex",
            "toIndex must be at most 18446744073709551615",
            ...STREAM_400,
            HTTPS_400,
            ...AMBIGUOUS_400,
          ],
          exact: false,
        },
        reader401,
        reader403,
        common.internal,
        reads503(undefined),
      ],
    },
    "audit.v1.EventService.FollowEvents": {
      frontendToken: true,
      stream: { path: STREAM_PATH, media: { "text/event-stream": "sse-events" } },
      success: [
        {
          status: 200,
          description:
            "Server-Sent Events (charset=utf-8), until the client goes away: first `retry: 1000` and a `: following from <index>` comment, then the backlog from fromIndex (or Last-Event-ID + 1) and each new event as it is acknowledged, as `id: <logIndex>` and `data: <the list's JSON record>`; `: heartbeat <next index>` comments on an idle stream (15 s). A credential that stops being valid (an expired token) or a shutdown ends it with an `error` event whose data is the error body (401, 503).",
          headers: {
            "Cache-Control": {
              description: "Never cached.",
              required: true,
              schema: { type: "string", const: "no-store" },
            },
          },
        },
      ],
      headers: [
        {
          name: "Last-Event-ID",
          description:
            "The id (logIndex) of the last event received: the stream resumes after it, instead of at fromIndex. EventSource sends it when it reconnects.",
          schema: { type: "string", pattern: "^[0-9]{1,19}$" },
        },
      ],
      errors: [
        {
          status: 400,
          description:
            "A parameter or Last-Event-ID is wrong (the message names it), or plain HTTP in production. Sent before the stream opens, as JSON.",
          messages: [
            "Last-Event-ID must be the logIndex of an event (a non-negative integer)",
            "Last-Event-ID 12 is beyond the end of the log, which holds 10 events",
            "toIndex is a parameter of an export, not of a follow stream",
            "format is a parameter of an export, not of a follow stream",
            ...STREAM_400,
            HTTPS_400,
            ...AMBIGUOUS_400,
          ],
          exact: false,
        },
        reader401,
        reader403,
        common.internal,
        reads503({
          message: Messages.shuttingDown,
          description: "a follow is refused while this instance shuts down (with Retry-After)",
        }),
      ],
    },
  };
}
