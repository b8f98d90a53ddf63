/**
 * Checks an observed REST response against the OpenAPI document: the status is documented
 * for the operation, the Content-Type is one of that status's media types, the body
 * validates against that media type's schema (JSON Schema 2020-12 with formats, by Ajv,
 * the document's own `$ref`s resolved), and each documented header that is present
 * matches its schema. Returns the problems found (none: it conforms).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

/** The committed document. */
export const OPENAPI_FILE = fileURLToPath(
  new URL("../../gen/openapi/openapi.json", import.meta.url),
);

/** An OpenAPI document, as far as these checks read it. */
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, unknown>>;
}

interface Operation {
  operationId: string;
  responses: Record<
    string,
    {
      headers?: Record<string, { schema?: unknown; required?: boolean; $ref?: string }>;
      content?: Record<string, { schema: unknown }>;
    }
  >;
}

/**
 * A response as a client observed it. `body` as its media type is modeled: parsed JSON;
 * NDJSON as the array of its lines' objects; Server-Sent Events as the array of events
 * (objects of their fields, comments left out); any other text as the string.
 */
export interface ObservedResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** Reads the committed document. */
export function readOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as OpenApiDocument;
}

// ajv-formats is CommonJS: its plugin is the module itself or its `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

/** The checker of responses against `document`. */
export function createContract(document: OpenApiDocument) {
  // Not strict: the document holds OpenAPI keywords (paths, examples of media types)
  // around the schemas, which Ajv reads as unknown keywords.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) });
  ajv.addSchema(document as unknown as object, "openapi.json");
  const compiled = new Map<string, ValidateFunction>();
  const validator = (pointer: string) => {
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi.json#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };
  const pointerSegment = (segment: string) => segment.replace(/~/g, "~0").replace(/\//g, "~1");

  return {
    /** The problems of `response` as an answer of `method path`; empty when it conforms. */
    check(method: string, path: string, response: ObservedResponse): string[] {
      const verb = method.toLowerCase();
      const operation = document.paths[path]?.[verb];
      if (!operation) return [`${method} ${path} is not in the document`];
      const documented = operation.responses[String(response.status)];
      if (!documented) {
        return [`${method} ${path}: status ${response.status} is not documented`];
      }
      const problems: string[] = [];
      const base = `/paths/${pointerSegment(path)}/${verb}/responses/${response.status}`;
      if (documented.content) {
        // The media type by the response's Content-Type, without its parameters.
        const contentType = response.headers.get("content-type") ?? "";
        const media = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
        if (!(media in documented.content)) {
          problems.push(
            `content-type ${contentType} is not one of ${Object.keys(documented.content).join(", ")}`,
          );
        } else {
          const validate = validator(`${base}/content/${pointerSegment(media)}/schema`);
          if (!validate(response.body)) {
            problems.push(
              `${method} ${path} ${response.status} body ${JSON.stringify(response.body)}: ${ajv.errorsText(validate.errors)}`,
            );
          }
        }
      }
      for (const [name, header] of Object.entries(documented.headers ?? {})) {
        const value = response.headers.get(name);
        const resolved = header.$ref
          ? (document.components.headers?.[header.$ref.split("/").pop() ?? ""] as typeof header)
          : header;
        if (value === null) {
          if (resolved?.required) problems.push(`header ${name} is missing`);
          continue;
        }
        if (header.schema === undefined) continue;
        const validate = validator(`${base}/headers/${pointerSegment(name)}/schema`);
        if (!validate(value)) problems.push(`header ${name}: ${ajv.errorsText(validate.errors)}`);
      }
      return problems;
    },
    /** The problems of `value` against a component schema (`LoggedEvent`); empty: it conforms. */
    checkSchema(name: string, value: unknown): string[] {
      const validate = validator(`/components/schemas/${pointerSegment(name)}`);
      return validate(value)
        ? []
        : [`${name} ${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`];
    },
  };
}
