/** IngestService's operation: CreateEvent over REST and every RPC protocol. */
import { create } from "@bufbuild/protobuf";
import { CreateEventResponseSchema, IngestService } from "../../gen/audit/v1/ingest_pb.js";
import type { IngestService as Ingest } from "../ingest/ingest-service.js";
import type { Operations } from "./operation.js";

/** The operations of IngestService. */
export function ingestOperations(ingest: Ingest): Operations {
  return new Map([
    [
      IngestService.method.createEvent,
      async (call) => {
        const idempotencyKey = call.header("idempotency-key");
        const result = await ingest.createEvent({
          credential: call.facts.credential,
          idempotencyKey: idempotencyKey === "" ? undefined : idempotencyKey,
          idempotencyKeyRepeated: call.facts.repeatedHeaders.has("idempotency-key"),
          readBody: call.readJson,
        });
        return {
          message: create(CreateEventResponseSchema, {
            eventId: result.eventId,
            receivedAt: result.receivedAt.toISOString(),
          }),
          created: !result.replayed,
          ...(result.replayed ? { headers: { "idempotent-replayed": "true" } } : {}),
        };
      },
    ],
  ]);
}
