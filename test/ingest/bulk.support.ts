/** What the bulk ingestion tests share: the REST batch call and its bodies. */
import { validEvent } from "../support/test-server.js";

/** A REST response with its parsed JSON body. */
export interface BatchResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** POST /api/ingest/events with a JSON (or raw text) body. */
export async function postBatch(
  server: { url: string },
  body: unknown,
  headers: Record<string, string> = {},
  query = "",
): Promise<BatchResponse> {
  const response = await fetch(`${server.url}/api/ingest/events${query}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** `n` valid events, each with its own entityId (`<tag>-<i>`). */
export function events(n: number, tag = "e"): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => validEvent({ entityId: `${tag}-${i}` }));
}
