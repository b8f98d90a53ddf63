/**
 * protoc-gen-openapi: a buf/protoc plugin (run by `npm run generate` through
 * buf.gen.openapi.yaml, after buf.gen.yaml) that writes `openapi.json`, the OpenAPI 3.1
 * document of the REST API, from the files it is asked to generate (openapi-builder.ts).
 * It needs every file in one request (`strategy: all`): the document covers all services.
 */
import { create, createFileRegistry, type DescFile } from "@bufbuild/protobuf";
import {
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { runNodeJs } from "@bufbuild/protoplugin";
import { buildOpenApi } from "./openapi-builder.js";

runNodeJs({
  name: "protoc-gen-openapi",
  version: "v1",
  run(request) {
    const registry = createFileRegistry(
      create(FileDescriptorSetSchema, { file: request.protoFile }),
    );
    const files = request.fileToGenerate
      .map((name) => registry.getFile(name))
      .filter((file): file is DescFile => file !== undefined);
    const document = buildOpenApi(files, {
      title: "Audit event service: REST API",
      version: "v1",
      description:
        "Records audit events (who did what to which entity, when) and reads them back. Generated from proto/ (the google.api.http annotations and the (audit.v1.field) rules) by scripts/openapi/; docs/api.md describes each endpoint with examples. The same contracts are served over gRPC, gRPC-Web and Connect on the same port.",
    });
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: "openapi.json", content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
});
