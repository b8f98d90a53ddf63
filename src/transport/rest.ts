/**
 * The REST transcoder. Its routes come from the `google.api.http` annotations of the
 * services (no hand-written route list): path variables, query parameters and the body
 * become the request's JSON form, the operation runs, and its reply is rendered as
 * JSON. Errors become the spec's bodies in rest-errors.ts.
 */
import type { DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import type { Operation, OperationCall, Operations } from "../api/operation.js";
import type { RequestFacts } from "../api/request-facts.js";
import { Messages, ServiceError } from "../errors.js";
import { parseJsonBody, readBody } from "./body.js";
import { restBodyLimit, restBodyNesting } from "./body-limits.js";
import {
  headerValue,
  type NodeRequest,
  type NodeResponse,
  sendJson,
  sendText,
} from "./node-http.js";
import { REST_RENDERINGS, restJson } from "./rest-rendering.js";

/** One route derived from an annotation. */
export interface RestRoute {
  httpMethod: string;
  /** The annotation's path template, used as the metrics label. */
  template: string;
  method: DescMethod;
  operation: Operation;
  /** `*` for the whole body, a field name, or "" for none. */
  body: string;
  pattern: RegExp;
  variables: string[];
}

/** A matched route and its path variables. */
export interface RestMatch {
  route: RestRoute;
  variables: Record<string, string>;
}

/** The routes of a set of services. */
export interface RestRouter {
  routes: readonly RestRoute[];
  /**
   * The route for a request; when the path exists only under other methods, those
   * methods (for the 405's `Allow` header); undefined for an unknown path.
   */
  match(httpMethod: string, path: string): RestMatch | { allowedMethods: string[] } | undefined;
}

/** Builds the routes of every annotated method that has an operation. */
export function createRestRouter(services: DescService[], operations: Operations): RestRouter {
  const routes: RestRoute[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      const operation = operations.get(method);
      if (!operation || !hasOption(method, httpRule)) continue;
      const rule = getOption(method, httpRule);
      if (rule.pattern.case === undefined || rule.pattern.case === "custom") continue;
      const template = rule.pattern.value;
      const variables: string[] = [];
      const source = template
        .split("/")
        .map((segment) => {
          const variable = /^\{([a-z_][a-z0-9_.]*)(=\*)?\}$/i.exec(segment);
          if (!variable?.[1]) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
          variables.push(variable[1]);
          return "([^/]+)";
        })
        .join("/");
      routes.push({
        httpMethod: rule.pattern.case.toUpperCase(),
        template,
        method,
        operation,
        body: rule.body,
        pattern: new RegExp(`^${source}$`),
        variables,
      });
    }
  }
  return {
    routes,
    match(httpMethod, path) {
      const allowedMethods = new Set<string>();
      for (const route of routes) {
        const found = route.pattern.exec(path);
        if (!found) continue;
        if (route.httpMethod !== httpMethod) {
          allowedMethods.add(route.httpMethod);
          continue;
        }
        const variables: Record<string, string> = {};
        route.variables.forEach((name, index) => {
          variables[name] = decodeURIComponent(found[index + 1] ?? "");
        });
        return { route, variables };
      }
      return allowedMethods.size > 0 ? { allowedMethods: [...allowedMethods] } : undefined;
    },
  };
}

/** Serves one matched REST request; errors propagate to the caller's boundary. */
export async function serveRest(
  req: NodeRequest,
  res: NodeResponse,
  facts: RequestFacts,
  match: RestMatch,
  query: URLSearchParams,
): Promise<number> {
  const { route, variables } = match;
  // The body is read (and its size checked) before anything else looks at the request.
  const body = route.body === "" ? undefined : await readBody(req, restBodyLimit(route.method));
  const call: OperationCall = {
    facts,
    header: (name) => headerValue(req, name),
    readJson: () => requestJson(route, req, body, query, variables),
  };
  const reply = await route.operation(call);
  const rendering = REST_RENDERINGS.get(route.method);
  const status = rendering?.status?.(reply) ?? 200;
  const json = restJson(route.method.output, reply.message);
  if (typeof json === "object" && json !== null && !Array.isArray(json)) {
    const defaults = rendering?.defaults;
    if (defaults !== undefined) {
      // In the message's field order, as proto JSON writes the members it has (restJson
      // writes only the message's fields, so every member is one of them).
      const filled: Record<string, unknown> = {};
      for (const field of route.method.output.fields) {
        const name = field.jsonName;
        const value = name in json ? json[name] : defaults[name];
        if (value !== undefined) filled[name] = value;
      }
      for (const key of Object.keys(json)) delete json[key];
      Object.assign(json, filled);
    }
    if (rendering?.text !== undefined) {
      sendText(res, status, String(json[rendering.text] ?? ""), reply.headers);
      return status;
    }
  }
  sendJson(res, status, json, reply.headers);
  return status;
}

/**
 * Sets a boolean request field from the query string (`?atomic=true`), beside the body: the
 * texts `true` and `false` are the booleans, any other is left as text for the operation to
 * refuse. A parameter given twice, or given in the body with another value, is refused: the
 * request does not say which it means.
 */
function mergeQueryFlag(json: Record<string, unknown>, field: string, query: URLSearchParams) {
  const values = query.getAll(field);
  if (values.length === 0) return;
  const refuse = (message: string): never => {
    throw new ServiceError("validation", Messages.validationFailed, {
      issues: [{ path: [field], message, code: "custom" }],
    });
  };
  if (values.length > 1) refuse(`${field} is given ${values.length} times in the query string`);
  const text = values[0] as string;
  const value = text === "true" ? true : text === "false" ? false : text;
  if (json[field] !== undefined && json[field] !== value) {
    refuse(
      `${field} is ${text} in the query string and ${JSON.stringify(json[field])} in the body`,
    );
  }
  json[field] = value;
}

/**
 * Refuses a query string that gives a parameter more than once (`limit=1&limit=2`,
 * `actorId=a&actorId=b`): 400, rather than acting on one of the values.
 */
export function refuseRepeated(query: URLSearchParams): void {
  const seen = new Set<string>();
  for (const name of query.keys()) {
    if (seen.has(name)) {
      throw new ServiceError("bad_request", `${name} must be given once in the query string`);
    }
    seen.add(name);
  }
}

/** Names a query string may hold beyond the request's fields (queryFields). */
export interface QueryOthers {
  /** Kept as given, for the transport or the operation to read (or refuse by name). */
  kept: readonly string[];
  /** Those of `kept` the endpoint takes, named when an unknown one is refused. */
  taken: readonly string[];
}

/**
 * A request's fields from its query string, each by its JSON name or its proto name
 * (`tenantId` or `tenant_id`), keyed by JSON name; a parameter given twice, under one
 * name or under both, is refused. So is a parameter the request does not take (400
 * naming it and what it takes): ignored, a misspelt filter (`tenant=acme`) would widen
 * the answer to every tenant's events.
 */
export function queryFields(
  input: DescMessage,
  query: URLSearchParams,
  others: QueryOthers = { kept: [], taken: [] },
): Record<string, string> {
  refuseRepeated(query);
  const fields: Record<string, string> = {};
  const names = new Set<string>();
  for (const field of input.fields) {
    names.add(field.jsonName).add(field.name);
    if (field.name !== field.jsonName && query.has(field.jsonName) && query.has(field.name)) {
      throw new ServiceError(
        "bad_request",
        `${field.jsonName} must be given once in the query string (${field.jsonName} and ${field.name} are one parameter)`,
      );
    }
    const value = query.get(field.jsonName) ?? query.get(field.name);
    if (value !== null) fields[field.jsonName] = value;
  }
  for (const [name, value] of query) {
    if (names.has(name)) continue;
    if (!others.kept.includes(name)) {
      const taken = [...input.fields.map((field) => field.jsonName), ...others.taken];
      throw new ServiceError(
        "bad_request",
        taken.length === 0
          ? `Unknown query parameter ${JSON.stringify(name)}: this endpoint takes none`
          : `Unknown query parameter ${JSON.stringify(name)}: this endpoint takes ${taken.join(", ")}`,
      );
    }
    fields[name] = value;
  }
  return fields;
}

function requestJson(
  route: RestRoute,
  req: NodeRequest,
  body: Buffer | undefined,
  query: URLSearchParams,
  variables: Record<string, string>,
): unknown {
  let json: unknown = {};
  if (body !== undefined) {
    const parsed = parseJsonBody(
      headerValue(req, "content-type"),
      body,
      headerValue(req, "content-encoding"),
      restBodyNesting(route.method),
    );
    json = route.body === "*" ? parsed : { [route.body]: parsed };
    // Fields a route takes from the query string beside its body (?atomic=true).
    const fields = REST_RENDERINGS.get(route.method)?.queryFields ?? [];
    if (typeof json === "object" && json !== null && !Array.isArray(json)) {
      for (const field of fields) mergeQueryFlag(json as Record<string, unknown>, field, query);
    }
  } else {
    // Without a body, query parameters are the request's fields.
    json = queryFields(route.method.input, query);
  }
  if (route.variables.length > 0 && typeof json === "object" && json !== null) {
    Object.assign(json, variables);
  }
  return json;
}
