/**
 * A client of AdminService over Connect (HTTP/1.1) that sends the admin token with
 * every call: what the CLI, the tests and the benchmark use to provision projects.
 */

import type { SecureContextOptions } from "node:tls";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "../../gen/audit/v1/admin_pb.js";

/** Options of the admin client. */
export interface AdminClientOptions {
  /** TLS options for an `https://` address (a test's own certificate authority). */
  tls?: Pick<SecureContextOptions, "ca">;
}

/** An AdminService client for `baseUrl`; without a token, calls go unauthenticated. */
export function createAdminClient(
  baseUrl: string,
  adminToken: string | undefined,
  options: AdminClientOptions = {},
): Client<typeof AdminService> {
  return createClient(
    AdminService,
    createConnectTransport({
      baseUrl,
      httpVersion: "1.1",
      ...(options.tls ? { nodeOptions: options.tls } : {}),
      interceptors: [
        (next) => (request) => {
          if (adminToken !== undefined) {
            request.header.set("authorization", `Bearer ${adminToken}`);
          }
          return next(request);
        },
      ],
    }),
  );
}
