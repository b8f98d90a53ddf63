/** TokenService's operation: CreateFrontendToken over REST and every RPC protocol. */
import { create } from "@bufbuild/protobuf";
import { CreateFrontendTokenResponseSchema, TokenService } from "../../gen/audit/v1/tokens_pb.js";
import type { TokenService as Tokens } from "../events/token-service.js";
import type { Operations } from "./operation.js";

/** The operations of TokenService. */
export function tokenOperations(tokens: Tokens): Operations {
  return new Map([
    [
      TokenService.method.createFrontendToken,
      async (call) => {
        const issued = await tokens.createFrontendToken({
          credential: call.facts.credential,
          params: call.readJson,
        });
        return {
          message: create(CreateFrontendTokenResponseSchema, {
            token: issued.token,
            expiresAt: issued.expiresAt.toISOString(),
          }),
        };
      },
    ],
  ]);
}
