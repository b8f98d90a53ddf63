/**
 * The page script of browser-rpc.browser.test.ts, bundled by esbuild for Chromium: List
 * Events from another origin with @connectrpc/connect-web, over Connect or gRPC-Web, with
 * a frontend token. It reports what the page could read: the events or the error.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { EventService } from "../../gen/audit/v1/events_pb.js";

/** What the page reports to the test. */
export type ListOutcome =
  | { ok: true; eventIds: string[]; nextCursor: string | null; requestId: string | null }
  | { ok: false; code: string; message: string };

async function listEvents(
  baseUrl: string,
  protocol: "connect" | "grpc-web",
  token: string,
  entityId: string,
): Promise<ListOutcome> {
  const transport =
    protocol === "connect"
      ? createConnectTransport({ baseUrl })
      : createGrpcWebTransport({ baseUrl });
  const client = createClient(EventService, transport);
  let requestId: string | null = null;
  try {
    const page = await client.listEvents(
      { entityId },
      {
        headers: { authorization: `Bearer ${token}` },
        // An exposed header: readable only when CORS exposes it.
        onHeader: (headers) => {
          requestId = headers.get("x-request-id");
        },
      },
    );
    return {
      ok: true,
      eventIds: page.events.map((event) => event.eventId),
      nextCursor: page.nextCursor ?? null,
      requestId,
    };
  } catch (error) {
    const failure = ConnectError.from(error);
    return { ok: false, code: Code[failure.code], message: failure.rawMessage };
  }
}

(globalThis as unknown as { auditListEvents: typeof listEvents }).auditListEvents = listEvents;
