/**
 * What the event-reading tests share: REST calls of List Events and Create Frontend
 * Token, bulk event creation, and EventService clients over Connect and gRPC.
 */
import { type Client, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import { postEvent } from "../support/test-server.js";

/** A REST response with its parsed JSON body. */
export interface JsonResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One event of a List Events REST body. */
export interface ListedEventJson {
  eventId: string;
  occurredAt: string;
  receivedAt: string;
  logIndex: number;
  /** 32 bytes, base64. */
  salt: string;
  [field: string]: unknown;
}

/** `Bearer <secret>` for a key or token. */
export const bearer = (secret: string): Record<string, string> => ({
  authorization: `Bearer ${secret}`,
});

async function json(response: Response): Promise<JsonResponse> {
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** GET /api/events with query parameters. */
export async function listEvents(
  server: { url: string },
  headers: Record<string, string>,
  params: Record<string, string | number> = {},
): Promise<JsonResponse> {
  const query = new URLSearchParams(
    Object.entries(params).map(([name, value]): [string, string] => [name, String(value)]),
  ).toString();
  const url = `${server.url}/api/events${query ? `?${query}` : ""}`;
  return json(await fetch(url, { headers }));
}

/** The events of a successful List Events call (fails the test on any other status). */
export async function listedEvents(
  server: { url: string },
  headers: Record<string, string>,
  params: Record<string, string | number> = {},
): Promise<ListedEventJson[]> {
  const response = await listEvents(server, headers, params);
  if (response.status !== 200) {
    throw new Error(`List Events answered ${response.status}: ${JSON.stringify(response.body)}`);
  }
  return response.body.events as ListedEventJson[];
}

/** Every event of a listing, following nextCursor to the end. */
export async function listAll(
  server: { url: string },
  headers: Record<string, string>,
  params: Record<string, string | number> = {},
): Promise<{ events: ListedEventJson[]; pages: number }> {
  const events: ListedEventJson[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const response = await listEvents(server, headers, {
      ...params,
      ...(cursor ? { cursor } : {}),
    });
    if (response.status !== 200) throw new Error(`page ${pages}: ${response.status}`);
    events.push(...(response.body.events as ListedEventJson[]));
    cursor = response.body.nextCursor as string | null;
    pages++;
  } while (cursor !== null);
  return { events, pages };
}

/** POST /api/tokens/frontend. */
export async function issueToken(
  server: { url: string },
  headers: Record<string, string>,
  body: unknown = {},
): Promise<JsonResponse> {
  const response = await fetch(`${server.url}/api/tokens/frontend`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return json(response);
}

/** The token of a successful Create Frontend Token call. */
export async function tokenFor(
  server: { url: string },
  secret: string,
  body: unknown = {},
): Promise<string> {
  const response = await issueToken(server, bearer(secret), body);
  if (response.status !== 200) {
    throw new Error(`Create Frontend Token answered ${response.status}`);
  }
  return response.body.token as string;
}

/** Creates events, `concurrency` requests at a time; returns their ids in input order. */
export async function createEvents(
  server: { url: string },
  secret: string,
  bodies: readonly Record<string, unknown>[],
  concurrency = 50,
): Promise<string[]> {
  return (await createEventsWithTimes(server, secret, bodies, concurrency)).map((e) => e.eventId);
}

/** Creates events like createEvents; returns each one's eventId and receivedAt. */
export async function createEventsWithTimes(
  server: { url: string },
  secret: string,
  bodies: readonly Record<string, unknown>[],
  concurrency = 50,
): Promise<{ eventId: string; receivedAt: string }[]> {
  const ids: { eventId: string; receivedAt: string }[] = new Array(bodies.length);
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const index = next++;
      const response = await postEvent(server, bodies[index], bearer(secret));
      if (response.status !== 201) {
        throw new Error(
          `Create Event answered ${response.status}: ${JSON.stringify(response.body)}`,
        );
      }
      ids[index] = {
        eventId: response.body.eventId as string,
        receivedAt: response.body.receivedAt as string,
      };
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return ids;
}

/** EventService clients over Connect (HTTP/1.1) and gRPC (h2c). */
export interface EventClients {
  connect: Client<typeof EventService>;
  grpc: Client<typeof EventService>;
  close(): void;
}

/** Creates the clients; call close() when done. */
export function eventClients(baseUrl: string): EventClients {
  const session = new Http2SessionManager(baseUrl);
  return {
    connect: createClient(EventService, createConnectTransport({ baseUrl, httpVersion: "1.1" })),
    grpc: createClient(EventService, createGrpcTransport({ baseUrl, sessionManager: session })),
    close: () => session.abort(),
  };
}

/** True when `events` are newest occurredAt first, ties by eventId descending. */
export function inListOrder(events: readonly ListedEventJson[]): boolean {
  for (let i = 1; i < events.length; i++) {
    const a = events[i - 1];
    const b = events[i];
    if (!a || !b) return false;
    const byTime = Date.parse(a.occurredAt) - Date.parse(b.occurredAt);
    if (byTime < 0 || (byTime === 0 && a.eventId <= b.eventId)) return false;
  }
  return true;
}
