/**
 * LogService's operations (the verifiable log, docs/verifiable-log.md) over REST and every
 * RPC protocol. REST shows the checkpoint and key as text/plain and the proofs' sizes as
 * JSON numbers (transport/rest-rendering.ts).
 */
import { create, type DescMethod } from "@bufbuild/protobuf";
import {
  GetCheckpointResponseSchema,
  GetConsistencyProofResponseSchema,
  GetInclusionProofResponseSchema,
  GetVerifierKeyResponseSchema,
  LogService,
} from "../../gen/audit/v1/log_pb.js";
import type { LogReadService } from "../verifiable-log/log-service.js";
import type { Operation, Operations } from "./operation.js";

/** The operations of LogService. */
export function logOperations(log: LogReadService): Operations {
  return new Map<DescMethod, Operation>([
    [
      LogService.method.getCheckpoint,
      // The request has no field: reading it refuses what it should not carry (REST: an
      // unknown query parameter), after the credential and before the log, as every read.
      async (call) => {
        const checkpoint = await log.checkpoint(call.facts.credential, call.readJson);
        return { message: create(GetCheckpointResponseSchema, { checkpoint }) };
      },
    ],
    [
      LogService.method.getVerifierKey,
      async (call) => {
        const verifierKey = await log.verifierKey(call.facts.credential, call.readJson);
        return { message: create(GetVerifierKeyResponseSchema, { verifierKey }) };
      },
    ],
    [
      LogService.method.getInclusionProof,
      async (call) => {
        const proof = await log.inclusionProof(call.facts.credential, call.readJson());
        return {
          message: create(GetInclusionProofResponseSchema, {
            logIndex: BigInt(proof.logIndex),
            treeSize: BigInt(proof.treeSize),
            leaf: proof.leaf,
            hashes: proof.hashes,
          }),
        };
      },
    ],
    [
      LogService.method.getConsistencyProof,
      async (call) => {
        const proof = await log.consistencyProof(call.facts.credential, call.readJson());
        return {
          message: create(GetConsistencyProofResponseSchema, {
            from: BigInt(proof.from),
            to: BigInt(proof.to),
            hashes: proof.hashes,
          }),
        };
      },
    ],
  ]);
}
