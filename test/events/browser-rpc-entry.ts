/**
 * The page script of browser-rpc.browser.test.ts, bundled by esbuild for Chromium: List
 * Events, and the server streams ExportEvents and FollowEvents, from another origin with
 * @connectrpc/connect-web, over Connect or gRPC-Web, with a frontend token. It reports
 * what the page could read: the events or the error.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { EventService } from "../../gen/audit/v1/events_pb.js";

/** What the page reports to the test. */
export type ListOutcome =
  | { ok: true; eventIds: string[]; nextCursor: string | null; requestId: string | null }
  | { ok: false; code: string; message: string };

/** What the page reports of a server stream. */
export type StreamOutcome =
  | { ok: true; eventIds: string[]; logIndexes: string[]; requestId: string | null }
  | { ok: false; code: string; message: string };

function transportFor(baseUrl: string, protocol: "connect" | "grpc-web") {
  return protocol === "connect"
    ? createConnectTransport({ baseUrl })
    : createGrpcWebTransport({ baseUrl });
}

/**
 * Reads ExportEvents to its end, or FollowEvents until `count` events arrived (then
 * cancels it, as a page leaving would).
 */
async function streamEvents(
  baseUrl: string,
  protocol: "connect" | "grpc-web",
  token: string,
  method: "exportEvents" | "followEvents",
  entityId: string,
  count: number,
): Promise<StreamOutcome> {
  const client = createClient(EventService, transportFor(baseUrl, protocol));
  const abort = new AbortController();
  let requestId: string | null = null;
  const options = {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
    onHeader: (headers: Headers) => {
      requestId = headers.get("x-request-id");
    },
  };
  const eventIds: string[] = [];
  const logIndexes: string[] = [];
  try {
    const stream =
      method === "exportEvents"
        ? client.exportEvents({ entityId }, options)
        : client.followEvents({ entityId }, options);
    for await (const message of stream) {
      for (const event of message.events) {
        eventIds.push(event.eventId);
        logIndexes.push(String(event.logIndex));
      }
      if (method === "followEvents" && eventIds.length >= count) break;
    }
    return { ok: true, eventIds, logIndexes, requestId };
  } catch (error) {
    const failure = ConnectError.from(error);
    return { ok: false, code: Code[failure.code], message: failure.rawMessage };
  } finally {
    abort.abort();
  }
}

async function listEvents(
  baseUrl: string,
  protocol: "connect" | "grpc-web",
  token: string,
  entityId: string,
): Promise<ListOutcome> {
  const client = createClient(EventService, transportFor(baseUrl, protocol));
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

Object.assign(globalThis, { auditListEvents: listEvents, auditStreamEvents: streamEvents });
