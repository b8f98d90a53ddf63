/**
 * Builds the OpenAPI 3.1 document of the REST API from the proto descriptors: one path
 * per `google.api.http` annotation, and one per REST form of a server stream (the export
 * and follow routes, named in rest-surface.ts), query parameters from the request fields of a GET,
 * request bodies from the `body: "*"` messages with their `(audit.v1.field)` and
 * `(audit.v1.message)` rules as JSON Schema, responses in the REST shape (proto JSON
 * names, the fields the edge always writes) and the spec's error bodies from
 * rest-surface.ts.
 *
 * Invariants: the document describes what the REST edge sends, not the gRPC shapes. A
 * request schema keeps the service's input rules (unknown keys are ignored by the
 * service, so request objects stay open); a response schema lists exactly the keys sent
 * (closed objects), with no length limits (stored strings are HTML-encoded, so longer).
 */
import {
  type DescField,
  type DescFile,
  type DescMessage,
  type DescMethod,
  type DescService,
  getOption,
  hasOption,
  ScalarType,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { getComments } from "@bufbuild/protoplugin";
import {
  type FieldRules,
  field as fieldRulesOption,
  message as messageRulesOption,
} from "../../gen/audit/v1/rules_pb.js";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { CSV_HEADER } from "../../src/transport/event-rendering.js";
import {
  DATE_TIME_NOTE,
  DATE_TIME_PATTERN,
  type ErrorCase,
  FIELD_LIMITS,
  type JsonSchema,
  type MethodSurface,
  PLANS,
  QUOTA_MESSAGE_PREFIX,
  REST_SURFACE,
  type StreamBody,
  VALIDATION_CODES,
} from "./rest-surface.js";

/** Options of the document. */
export interface OpenApiOptions {
  title: string;
  version: string;
  description: string;
}

// Response fields whose format the protos leave to comments.
const OUTPUT_FORMATS: Readonly<Record<string, Readonly<Record<string, JsonSchema>>>> = {
  "audit.v1.CreateEventResponse": {
    eventId: { format: "uuid" },
    receivedAt: { format: "date-time" },
  },
  "audit.v1.StoredEvent": {
    eventId: { format: "uuid" },
    receivedAt: { format: "date-time" },
    occurredAt: { format: "date-time" },
  },
  "audit.v1.EventResult": {
    eventId: { format: "uuid" },
    receivedAt: { format: "date-time" },
  },
  "audit.v1.CreateFrontendTokenResponse": { expiresAt: { format: "date-time" } },
};

// The header the handler takes as the request id when it matches; otherwise it makes one.
const REQUEST_ID_PATTERN = "^[\\w.:@/+=-]{1,128}$";

/** The document for the annotated methods of `files`. */
export function buildOpenApi(files: readonly DescFile[], options: OpenApiOptions): JsonSchema {
  const schemas: Record<string, JsonSchema> = { ...errorSchemas() };
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const tags: JsonSchema[] = [];
  const services = files.flatMap((file) => file.services);

  // Messages sent as request bodies: their schemas carry the input rules; a message also
  // returned gets a second, output schema named `Stored<Name>`.
  const inputs = new Set<string>();
  for (const method of services.flatMap((service) => service.methods)) {
    if (restRule(method)?.body === "*") collectMessages(method.input, inputs);
  }
  // The record a stream sends per event: the list's, always with its logIndex.
  const loggedEvent = (method: DescMethod): JsonSchema => {
    const events = method.output.fields.find((field) => field.jsonName === "events");
    if (events?.message === undefined) throw new Error(`${method.name}: no events to stream`);
    schemas.LoggedEvent ??= {
      description:
        "An event as the export and follow streams send it: the list's record, with its logIndex.",
      allOf: [ref(events.message, "output")],
      required: ["logIndex"],
    };
    // What the streams send at a position whose event they cannot list: an erased or
    // expired one (docs/lifecycle.md), or one whose stored content does not decrypt.
    const positionRecord = (description: string, name: string, member: JsonSchema) => ({
      type: "object",
      description,
      required: ["eventId", "logIndex", "receivedAt", name],
      additionalProperties: false,
      properties: {
        eventId: { type: "string", format: "uuid" },
        logIndex: { type: "integer", minimum: 0 },
        receivedAt: { type: "string", format: "date-time" },
        [name]: member,
      },
    });
    schemas.ErasedEvent ??= positionRecord(
      "The tombstone of an erased or expired event, at its position in the log: its content is gone, its leaf stays in the verifiable log.",
      "erasedAt",
      { type: "string", format: "date-time" },
    );
    schemas.UnreadableEvent ??= positionRecord(
      "An event whose stored content does not decrypt (altered or damaged in storage), named at its position in the log; the stream goes on past it.",
      "unreadable",
      { type: "string", description: "Why, in words." },
    );
    return {
      oneOf: [
        { $ref: "#/components/schemas/LoggedEvent" },
        { $ref: "#/components/schemas/ErasedEvent" },
        { $ref: "#/components/schemas/UnreadableEvent" },
      ],
    };
  };

  // Response fields the edge writes even when the message leaves them unset.
  const alwaysPresent = new Map<string, MethodSurface["alwaysPresent"]>();
  for (const service of services) {
    for (const method of service.methods) {
      const surface = REST_SURFACE[`${service.typeName}.${method.name}`];
      if (surface?.alwaysPresent) alwaysPresent.set(method.output.typeName, surface.alwaysPresent);
    }
  }

  const ref = (message: DescMessage, mode: "input" | "output"): JsonSchema => {
    const name =
      mode === "output" && inputs.has(message.typeName) ? `Stored${message.name}` : message.name;
    if (!(name in schemas)) {
      schemas[name] = {}; // reserved first: messages may refer to themselves
      const always = mode === "output" ? alwaysPresent.get(message.typeName) : undefined;
      schemas[name] = messageSchema(message, mode, ref, always ?? {});
    }
    return { $ref: `#/components/schemas/${name}` };
  };

  for (const service of services) {
    const surfaceOf = (method: DescMethod) => REST_SURFACE[`${service.typeName}.${method.name}`];
    const annotated = service.methods.filter(
      (method) => restRule(method, surfaceOf(method)) !== undefined,
    );
    if (annotated.length === 0) continue;
    tags.push({ name: service.name, ...optionalText("description", comment(service)) });
    for (const method of annotated) {
      const surface = surfaceOf(method);
      const rule = restRule(method, surface);
      if (!rule || !surface) {
        throw new Error(`${service.typeName}.${method.name}: no REST surface in rest-surface.ts`);
      }
      const path = rule.path.replace(/\{([^}=]+)(=[^}]*)?\}/g, "{$1}");
      paths[path] ??= {};
      const item = paths[path];
      const streamed = surface.stream ? loggedEvent(method) : undefined;
      if (item) item[rule.verb] = operation(service, method, rule, surface, ref, streamed);
    }
  }

  return {
    openapi: "3.1.0",
    info: { title: options.title, version: options.version, description: options.description },
    tags,
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          description:
            "A project API key, `pk_test_...` or `pk_live_...`: `Authorization: Bearer <key>`.",
        },
        projectKey: {
          type: "apiKey",
          in: "header",
          name: "X-Project-Key",
          description:
            "The same API key in a header of its own (used when Authorization is absent).",
        },
        frontendToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "A read-only token from POST /api/tokens/frontend: reads the issuing key's project and environment (and tenant, when the token names one).",
        },
      },
      parameters: {
        RequestId: {
          name: "X-Request-Id",
          in: "header",
          required: false,
          description:
            "An identifier to trace the request by: echoed in the response and logged. One that does not match the pattern is replaced.",
          schema: { type: "string", pattern: REQUEST_ID_PATTERN },
        },
      },
      headers: {
        RequestId: {
          description: "The request's X-Request-Id, or the one the service made for it.",
          required: true,
          schema: { type: "string" },
        },
      },
    },
  };
}

interface RestRule {
  verb: string;
  path: string;
  body: string;
}

/** A method's REST route: its annotation, or (a server stream) its surface's GET path. */
function restRule(method: DescMethod, surface?: MethodSurface): RestRule | undefined {
  if (surface?.stream) return { verb: "get", path: surface.stream.path, body: "" };
  if (!hasOption(method, httpRule)) return undefined;
  const rule = getOption(method, httpRule);
  const { pattern } = rule;
  if (pattern.case === undefined || pattern.case === "custom") return undefined;
  return { verb: pattern.case, path: pattern.value, body: rule.body };
}

function collectMessages(message: DescMessage, into: Set<string>): void {
  if (into.has(message.typeName) || message.file.name.startsWith("google/protobuf/")) return;
  into.add(message.typeName);
  for (const field of message.fields) {
    if (field.message) collectMessages(field.message, into);
  }
}

type Ref = (message: DescMessage, mode: "input" | "output") => JsonSchema;

function operation(
  service: DescService,
  method: DescMethod,
  rule: RestRule,
  surface: MethodSurface,
  ref: Ref,
  streamedEvent: JsonSchema | undefined,
): JsonSchema {
  const parameters: JsonSchema[] = [{ $ref: "#/components/parameters/RequestId" }];
  for (const header of surface.headers ?? []) {
    parameters.push({
      name: header.name,
      in: "header",
      required: false,
      description: header.description,
      schema: header.schema,
    });
  }
  for (const query of surface.query ?? []) {
    parameters.push({
      name: query.name,
      in: "query",
      required: false,
      description: query.description,
      schema: query.schema,
    });
  }
  const pathVariables = [...rule.path.matchAll(/\{([^}=]+)/g)].map((found) => found[1]);
  for (const field of method.input.fields) {
    const inPath = pathVariables.includes(field.name);
    if (!inPath && rule.body !== "") continue; // with a body, the other fields are in it
    parameters.push({
      name: field.jsonName,
      in: inPath ? "path" : "query",
      required: inPath || (surface.requiredQuery?.includes(field.jsonName) ?? false),
      ...optionalText("description", comment(field)),
      schema: fieldSchema(field, "input", ref),
    });
  }

  const responses: Record<string, JsonSchema> = {};
  const content = (): JsonSchema => {
    if (surface.stream && streamedEvent) {
      const media: Record<string, JsonSchema> = {};
      for (const [type, body] of Object.entries(surface.stream.media)) {
        media[type] = streamContent(body, streamedEvent);
      }
      return media;
    }
    if (surface.text !== undefined) return { "text/plain": { schema: { type: "string" } } };
    return { "application/json": { schema: ref(method.output, "output") } };
  };
  for (const success of surface.success) {
    responses[String(success.status)] = {
      description: success.description,
      headers: {
        "X-Request-Id": { $ref: "#/components/headers/RequestId" },
        ...success.headers,
      },
      content: content(),
    };
  }
  for (const error of surface.errors) responses[String(error.status)] = errorResponse(error);

  const security: Record<string, string[]>[] = [{ apiKey: [] }, { projectKey: [] }];
  if (surface.frontendToken) security.push({ frontendToken: [] });
  return {
    operationId: method.localName,
    tags: [service.name],
    summary: `${method.name} (${service.typeName})`,
    // A GET's request message describes its query parameters as a whole.
    ...optionalText(
      "description",
      [comment(method), rule.body === "" ? comment(method.input) : ""].filter(Boolean).join("\n\n"),
    ),
    security,
    parameters,
    ...(rule.body === "*"
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: ref(method.input, "input") } },
          },
        }
      : {}),
    responses,
  };
}

/**
 * A streamed body as OpenAPI 3.1 can say it (it has no `itemSchema`): as the OpenAPI media
 * type registry allows, NDJSON as if it were a JSON array of its lines, and Server-Sent
 * Events as an array of events, each an object of the SSE fields (comments left out);
 * CSV as text.
 */
function streamContent(body: StreamBody, event: JsonSchema): JsonSchema {
  // SSE `data` carrying JSON: a string whose content is described, not validated.
  const jsonData = (schema: JsonSchema): JsonSchema => ({
    type: "string",
    contentMediaType: "application/json",
    contentSchema: schema,
  });
  switch (body) {
    case "ndjson-events":
      return {
        schema: {
          type: "array",
          description:
            "Newline-delimited JSON, modeled as an array: each item is one line, one event, in logIndex order.",
          items: event,
        },
      };
    case "csv-events":
      return {
        schema: {
          type: "string",
          description:
            "RFC 4180 text with a header row and CRLF line ends, one row per event in logIndex order.",
        },
        example: CSV_HEADER,
      };
    case "sse-events":
      return {
        schema: {
          type: "array",
          description:
            "Server-Sent Events, modeled as an array of events (comments, such as heartbeats, left out): the reconnection time first, then one event per event of the log, and an `error` event when the stream ends on an error.",
          items: {
            oneOf: [
              {
                type: "object",
                description: "The reconnection time, in milliseconds (sent first).",
                required: ["retry"],
                additionalProperties: false,
                properties: { retry: { type: "integer", minimum: 0 } },
              },
              {
                type: "object",
                description: "An event: id is its logIndex (Last-Event-ID resumes after it).",
                required: ["id", "data"],
                additionalProperties: false,
                properties: {
                  id: { type: "string", pattern: "^[0-9]+$" },
                  data: jsonData(event),
                },
              },
              {
                type: "object",
                description:
                  "The stream ended on an error (an expired token: 401's body; a shutdown: 503's).",
                required: ["event", "data"],
                additionalProperties: false,
                properties: {
                  event: { type: "string", const: "error" },
                  data: jsonData({ $ref: "#/components/schemas/Error" }),
                },
              },
            ],
          },
        },
      };
  }
}

function errorResponse(error: ErrorCase): JsonSchema {
  const errorString: JsonSchema = error.exact
    ? error.messages.length === 1
      ? { type: "string", const: error.messages[0] }
      : { type: "string", enum: [...error.messages] }
    : { type: "string", examples: [...error.messages] };
  let schema: JsonSchema = error.validation
    ? { $ref: "#/components/schemas/ValidationError" }
    : {
        type: "object",
        required: ["error"],
        additionalProperties: false,
        properties: { error: errorString },
      };
  if (error.alternative) {
    schema = { oneOf: [schema, { $ref: `#/components/schemas/${error.alternative}` }] };
  }
  return {
    description: error.description,
    headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" }, ...error.headers },
    content: {
      "application/json": {
        schema,
        ...(error.validation ? {} : { example: { error: error.messages[0] } }),
      },
    },
  };
}

function messageSchema(
  message: DescMessage,
  mode: "input" | "output",
  ref: Ref,
  alwaysPresent: NonNullable<MethodSurface["alwaysPresent"]>,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of message.fields) {
    let schema = fieldSchema(field, mode, ref);
    const always = alwaysPresent[field.jsonName];
    if (always === "null") schema = { ...schema, type: [schema.type, "null"] };
    properties[field.jsonName] = schema;
    const rules = fieldRules(field);
    const isRequired =
      mode === "input"
        ? rules?.required === true
        : rules?.required === true ||
          always !== undefined ||
          // Implicit presence: proto JSON leaves out empty values, and the service never
          // answers an empty id, time or token.
          ((field.fieldKind === "scalar" || field.fieldKind === "enum") &&
            field.presence === FeatureSet_FieldPresence.IMPLICIT);
    if (isRequired) required.push(field.jsonName);
  }
  const schema: JsonSchema = {
    type: "object",
    ...optionalText("description", comment(message)),
    properties,
    ...(required.length > 0 ? { required } : {}),
  };
  if (mode === "output") {
    schema.additionalProperties = false;
  } else if (hasOption(message, messageRulesOption)) {
    const oneOf = getOption(message, messageRulesOption).requireOneOf.map(
      (name) => message.fields.find((field) => field.name === name)?.jsonName ?? name,
    );
    // One of them present and not empty.
    schema.anyOf = oneOf.map((name) => ({
      required: [name],
      properties: { [name]: { minLength: 1 } },
    }));
  }
  return schema;
}

function fieldRules(field: DescField): FieldRules | undefined {
  return hasOption(field, fieldRulesOption) ? getOption(field, fieldRulesOption) : undefined;
}

function fieldSchema(field: DescField, mode: "input" | "output", ref: Ref): JsonSchema {
  const rules = mode === "input" ? fieldRules(field) : undefined;
  const description = comment(field);
  const extra =
    (mode === "input" ? FIELD_LIMITS : OUTPUT_FORMATS)[field.parent.typeName]?.[field.jsonName] ??
    {};
  const sizeNote =
    rules && rules.maxJsonBytes > 0 && !description.includes("KB")
      ? ` At most ${rules.maxJsonBytes} bytes (${rules.maxJsonBytes / 1024} KB) when serialized.`
      : "";
  const dateNote = rules?.dateTime || extra.pattern === DATE_TIME_PATTERN ? DATE_TIME_NOTE : "";
  const note = `${sizeNote}${dateNote}`;
  const withText = (schema: JsonSchema): JsonSchema => ({
    ...(description || note ? { description: `${description}${note}`.trim() } : {}),
    ...schema,
    ...extra,
  });

  if (field.fieldKind === "list") {
    const items =
      field.listKind === "message"
        ? messageRef(field.message, mode, ref)
        : field.listKind === "enum"
          ? { type: "string", enum: field.enum.values.map((value) => value.name) }
          : scalarSchema(field.scalar, undefined);
    return withText({
      type: "array",
      items,
      // A required list is one with an element (proto3 cannot tell empty from absent).
      ...(rules?.required ? { minItems: 1 } : {}),
      ...(rules && rules.maxItems > 0 ? { maxItems: rules.maxItems } : {}),
    });
  }
  if (field.fieldKind === "message") return withText(messageRef(field.message, mode, ref));
  if (field.fieldKind === "enum") {
    return withText({ type: "string", enum: field.enum.values.map((value) => value.name) });
  }
  if (field.fieldKind === "map") return withText({ type: "object" });
  return withText(scalarSchema(field.scalar, rules));
}

function messageRef(message: DescMessage, mode: "input" | "output", ref: Ref): JsonSchema {
  switch (message.typeName) {
    case "google.protobuf.Struct":
      return { type: "object" };
    case "google.protobuf.Value":
      // Any JSON value, null included: no `type`.
      return {};
    case "google.protobuf.ListValue":
      // A JSON array of any values (a 422 detail's `path`: keys and indexes).
      return { type: "array", items: {} };
    default:
      return ref(message, mode);
  }
}

function scalarSchema(scalar: ScalarType, rules: FieldRules | undefined): JsonSchema {
  switch (scalar) {
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0 };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.STRING: {
      const schema: JsonSchema = { type: "string" };
      if (rules && rules.maxLen > 0) schema.maxLength = rules.maxLen;
      if (rules && rules.in.length > 0) schema.enum = [...rules.in];
      if (rules?.dateTime) schema.pattern = DATE_TIME_PATTERN;
      return schema;
    }
    case ScalarType.UINT64:
      // Unsigned 64-bit integers (log positions) are numbers in REST bodies
      // (src/transport/rest-rendering.ts uint64AsNumbers).
      return { type: "integer", minimum: 0 };
    default:
      // Signed 64-bit integers and bytes are strings in proto JSON.
      return { type: "string" };
  }
}

/** `{ [key]: text }`, or nothing for empty text. */
function optionalText(key: string, text: string): JsonSchema {
  return text === "" ? {} : { [key]: text };
}

function comment(desc: DescService | DescMethod | DescMessage | DescField): string {
  const text = getComments(desc).leading ?? "";
  return text
    .split("\n")
    .map((line) => line.trim())
    .join("\n")
    .trim()
    .replace(/(?<!\n)\n(?!\n)/g, " ");
}

/** The error bodies of spec section 7. */
function errorSchemas(): Record<string, JsonSchema> {
  return {
    Error: {
      type: "object",
      description: "Every error body: an `error` string; some statuses add fields.",
      required: ["error"],
      properties: { error: { type: "string" } },
    },
    ValidationError: {
      type: "object",
      description: "422: every failing field of the event.",
      required: ["error", "details"],
      additionalProperties: false,
      properties: {
        error: { type: "string", const: "Validation failed" },
        details: { type: "array", minItems: 1, items: { $ref: "#/components/schemas/FieldIssue" } },
      },
    },
    FieldIssue: {
      type: "object",
      required: ["path", "message", "code"],
      additionalProperties: false,
      properties: {
        path: {
          type: "array",
          description:
            "Where the failing value is: keys and array indexes from the body's root; empty when the failure concerns the whole body (neither actionKey nor action).",
          items: { type: ["string", "integer"] },
        },
        message: { type: "string", examples: ["Required", "Invalid datetime"] },
        code: { type: "string", enum: [...VALIDATION_CODES] },
      },
    },
    QuotaError: {
      type: "object",
      description: "403: the plan's monthly event limit is reached (per environment, UTC month).",
      required: ["error", "current", "limit", "plan"],
      additionalProperties: false,
      properties: {
        error: { type: "string", pattern: `^${QUOTA_MESSAGE_PREFIX}.*Upgrade your plan` },
        current: { type: "integer", minimum: 0 },
        limit: { type: "integer", minimum: 0 },
        plan: { type: "string", enum: PLANS },
      },
    },
  };
}
