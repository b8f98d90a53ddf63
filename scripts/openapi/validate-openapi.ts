/**
 * Validates the generated OpenAPI document (gen/openapi/openapi.json, or the file given)
 * against the OpenAPI 3.1 schema with @seriousme/openapi-schema-validator; CI runs it.
 * Exits 1 with the validator's errors when the document is invalid.
 */
import { readFile } from "node:fs/promises";
import { Validator } from "@seriousme/openapi-schema-validator";

const file = process.argv[2] ?? "gen/openapi/openapi.json";
const validator = new Validator();
const result = await validator.validate(JSON.parse(await readFile(file, "utf8")));
if (!result.valid || validator.version !== "3.1") {
  console.error(`${file} is not a valid OpenAPI 3.1 document (read as ${validator.version}):`);
  console.error(JSON.stringify(result.errors, null, 2));
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${validator.version}`);
