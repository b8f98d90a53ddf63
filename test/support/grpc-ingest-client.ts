/**
 * An independent gRPC client for IngestService: `@grpc/grpc-js` with the service loaded
 * from proto/audit/v1 by `@grpc/proto-loader` at run time (no generated code).
 */
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Where the protos and their vendored imports live. */
export const PROTO_INCLUDE_DIRS = [`${ROOT}proto`, `${ROOT}third_party/proto`];

/** The reply of CreateEvent as proto-loader decodes it (camelCase, defaults omitted). */
export interface CreateEventReply {
  eventId?: string;
  receivedAt?: string;
}

/** The outcome of one call: the reply with its headers, or the gRPC error. */
export type GrpcOutcome =
  | { ok: true; reply: CreateEventReply; headers: grpc.Metadata }
  | { ok: false; error: grpc.ServiceError };

type UnaryCall = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, reply?: CreateEventReply) => void,
) => grpc.ClientUnaryCall;

/** A connected IngestService client. */
export interface IngestClient {
  /** `metadata` as a record, or as Metadata (to repeat an entry). */
  createEvent(
    request: object,
    metadata?: Record<string, string> | grpc.Metadata,
  ): Promise<GrpcOutcome>;
  close(): void;
}

interface LoadedPackage {
  audit: { v1: { IngestService: grpc.ServiceClientConstructor } };
}

/** Loads audit/v1/ingest.proto with proto-loader. */
export function loadIngestService(): grpc.ServiceClientConstructor {
  const definition = protoLoader.loadSync("audit/v1/ingest.proto", {
    includeDirs: PROTO_INCLUDE_DIRS,
    keepCase: false,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as LoadedPackage;
  return loaded.audit.v1.IngestService;
}

/** A client of `address` (`host:port`) with the given channel credentials. */
export function createIngestClient(
  address: string,
  credentials: grpc.ChannelCredentials,
  options: grpc.ChannelOptions = {},
): IngestClient {
  const IngestService = loadIngestService();
  const client = new IngestService(address, credentials, options);
  const method = client.CreateEvent as UnaryCall;
  return {
    createEvent(request, metadata = {}) {
      let md = new grpc.Metadata();
      if (metadata instanceof grpc.Metadata) md = metadata;
      else for (const [name, value] of Object.entries(metadata)) md.set(name, value);
      return new Promise((resolve) => {
        let headers = new grpc.Metadata();
        const call = method.call(
          client,
          request,
          md,
          { deadline: Date.now() + 15_000 },
          (error, reply) => {
            if (error) resolve({ ok: false, error });
            else resolve({ ok: true, reply: reply ?? {}, headers });
          },
        );
        call.on("metadata", (received: grpc.Metadata) => {
          headers = received;
        });
      });
    },
    close() {
      client.close();
    },
  };
}
