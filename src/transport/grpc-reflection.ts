/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha, the same protocol under two
 * package names) on the Connect routes, so that `buf curl --list-methods`, grpcurl and
 * Postman work without the proto files. It describes the descriptors the service itself
 * was built from: the files embedded in gen/ for the served services and every file they
 * import, never a separate copy that could drift.
 *
 * Invariants: a file is sent at most once per stream (a client that asks again for one it
 * has is answered with the dependencies it lacks only, as grpc-go does); an unknown file,
 * symbol or extension is answered with an error response (NOT_FOUND) on the stream, which
 * stays open; requests are answered in order.
 */
import {
  create,
  createRegistry,
  type DescFile,
  type DescService,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import {
  type ServerReflectionRequest,
  ServerReflectionResponseSchema,
  ServerReflection as ServerReflectionV1,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflectionResponseSchema as ServerReflectionResponseSchemaV1alpha,
  ServerReflection as ServerReflectionV1alpha,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** The reflection services (both versions), to list and to register. */
export const REFLECTION_SERVICES: readonly DescService[] = [
  ServerReflectionV1,
  ServerReflectionV1alpha,
];

/** What one reflection request is answered with, as either version's message fields. */
type Answer = Omit<MessageInitShape<typeof ServerReflectionResponseSchema>, "$typeName">;

/** The descriptors reflection describes. */
export interface ReflectionIndex {
  /** Answers one request of a stream; `sent` holds the files the stream already has. */
  answer(request: ServerReflectionRequest, sent: Set<string>): Answer;
}

/**
 * Indexes `services` (the ones listed) and every file they are declared in or import,
 * and `alsoFiles` (with their imports): types a client needs that no service file
 * imports, such as the google.rpc error details the errors carry.
 */
export function createReflectionIndex(
  services: readonly DescService[],
  alsoFiles: readonly DescFile[] = [],
): ReflectionIndex {
  const files = new Map<string, DescFile>();
  // By the file's path (`audit/v1/event.proto`); DescFile.name has no extension.
  const addFile = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dependency of file.dependencies) addFile(dependency);
  };
  for (const service of services) addFile(service.file);
  for (const file of alsoFiles) addFile(file);
  const registry = createRegistry(...files.values());
  const serialized = new Map<string, Uint8Array>();
  const bytesOf = (file: DescFile) => {
    let bytes = serialized.get(file.proto.name);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      serialized.set(file.proto.name, bytes);
    }
    return bytes;
  };

  // The file and the dependencies the stream lacks, the file itself always.
  const withDependencies = (file: DescFile, sent: Set<string>): Answer => {
    const out: Uint8Array[] = [];
    const visit = (current: DescFile, always: boolean) => {
      if (!always && sent.has(current.proto.name)) return;
      sent.add(current.proto.name);
      out.push(bytesOf(current));
      for (const dependency of current.dependencies) visit(dependency, false);
    };
    visit(file, true);
    return {
      messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } },
    };
  };

  const notFound = (message: string): Answer => ({
    messageResponse: {
      case: "errorResponse",
      value: { errorCode: Code.NotFound, errorMessage: message },
    },
  });

  // The file that declares a symbol: a type, a service, or a member of one (a method, a
  // field, an enum value), by its fully-qualified name.
  const fileOfSymbol = (symbol: string): DescFile | undefined => {
    const name = symbol.startsWith(".") ? symbol.slice(1) : symbol;
    const found = registry.get(name);
    if (found) return found.file;
    const parent = registry.get(name.slice(0, Math.max(0, name.lastIndexOf("."))));
    const member = name.slice(name.lastIndexOf(".") + 1);
    if (parent?.kind === "service" && parent.methods.some((m) => m.name === member)) {
      return parent.file;
    }
    if (parent?.kind === "message" && parent.fields.some((f) => f.name === member)) {
      return parent.file;
    }
    if (parent?.kind === "enum" && parent.values.some((v) => v.name === member)) {
      return parent.file;
    }
    return undefined;
  };

  return {
    answer(request, sent) {
      const { messageRequest } = request;
      switch (messageRequest.case) {
        case "listServices":
          return {
            messageResponse: {
              case: "listServicesResponse",
              value: { service: services.map((service) => ({ name: service.typeName })) },
            },
          };
        case "fileByFilename": {
          const file = files.get(messageRequest.value);
          return file ? withDependencies(file, sent) : notFound(`file ${messageRequest.value}`);
        }
        case "fileContainingSymbol": {
          const file = fileOfSymbol(messageRequest.value);
          return file ? withDependencies(file, sent) : notFound(`symbol ${messageRequest.value}`);
        }
        case "fileContainingExtension": {
          const { containingType, extensionNumber } = messageRequest.value;
          const message = registry.getMessage(containingType);
          const extension = message && registry.getExtensionFor(message, extensionNumber);
          return extension
            ? withDependencies(extension.file, sent)
            : notFound(`extension ${extensionNumber} of ${containingType}`);
        }
        case "allExtensionNumbersOfType": {
          const typeName = messageRequest.value;
          if (!registry.getMessage(typeName)) return notFound(`type ${typeName}`);
          const numbers = [...files.values()]
            .flatMap((file) => allExtensions(file))
            .filter((extension) => extension.extendee.typeName === typeName)
            .map((extension) => extension.number);
          return {
            messageResponse: {
              case: "allExtensionNumbersResponse",
              value: { baseTypeName: typeName, extensionNumber: numbers },
            },
          };
        }
        default:
          return {
            messageResponse: {
              case: "errorResponse",
              value: { errorCode: Code.Unimplemented, errorMessage: "unknown request" },
            },
          };
      }
    },
  };
}

// Extensions declared at the top of a file and nested in its messages.
function allExtensions(file: DescFile) {
  const nested = (messages: DescFile["messages"]): DescFile["extensions"] =>
    messages.flatMap((message) => [...message.nestedExtensions, ...nested(message.nestedMessages)]);
  return [...file.extensions, ...nested(file.messages)];
}

/** Registers both reflection services, answering from `index`. */
export function reflectionRoutes(index: ReflectionIndex): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ServerReflectionV1, {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          yield create(ServerReflectionResponseSchema, {
            ...index.answer(request, sent),
            validHost: request.host,
            originalRequest: request,
          });
        }
      },
    });
    router.service(ServerReflectionV1alpha, {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          // The same message fields under the v1alpha names.
          const asV1 = request as unknown as ServerReflectionRequest;
          const answer = index.answer(asV1, sent) as MessageInitShape<
            typeof ServerReflectionResponseSchemaV1alpha
          >;
          yield create(ServerReflectionResponseSchemaV1alpha, {
            ...answer,
            validHost: request.host,
            originalRequest: request,
          });
        }
      },
    });
  };
}
