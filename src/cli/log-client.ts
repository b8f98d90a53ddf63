/**
 * The auditor's HTTP client of the service's read API: the log's export (NDJSON), the
 * log's key and checkpoint, and its proofs, with an API key (or frontend token). Plain
 * fetch over REST, so the same calls work from any language; nothing here is trusted:
 * verify.ts checks everything it returns.
 */
import { eventFromJson } from "../tlog/event-input.js";
import type { ConsistencyProof, InclusionProof, ProofSource } from "../tlog/verify.js";

/** A refused or failed request, with the service's own `error` message when it gave one. */
/** The `error` of a service's JSON error body, or the body's text when it is not one. */
export async function errorMessage(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === "string") return body.error;
  } catch {
    // Not JSON: the text itself.
  }
  return text;
}

export class LogClientError extends Error {
  override readonly name = "LogClientError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The read calls an auditor makes. */
export interface LogClient extends ProofSource {
  /**
   * Every event of the credential's project-environment, in log order, as the export
   * writes them (an event whose JSON repeats a member name as an UnreadableEvent).
   */
  events(): AsyncIterable<unknown>;
  /** The latest signed checkpoint, as published. */
  checkpoint(): Promise<string>;
  /** The log's verifier key, as the service publishes it. */
  verifierKey(): Promise<string>;
}

/** A client of the service at baseUrl with the given credential. */
export function createLogClient(baseUrl: string, credential: string): LogClient {
  const base = baseUrl.replace(/\/+$/, "");

  async function get(path: string, query: Record<string, string> = {}): Promise<Response> {
    const url = new URL(`${base}${path}`);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    let response: Response;
    try {
      response = await fetch(url, { headers: { authorization: `Bearer ${credential}` } });
    } catch (error) {
      const cause =
        error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
      throw new LogClientError(
        0,
        `cannot reach ${base}${cause} (is the service running? see --url)`,
      );
    }
    if (!response.ok) {
      const message = await errorMessage(response);
      throw new LogClientError(response.status, `GET ${path}: ${response.status} ${message}`);
    }
    return response;
  }

  async function getJson<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    return (await (await get(path, query)).json()) as T;
  }

  return {
    async *events() {
      // The export, not the list: it holds every position of the log in order, erased
      // events as their tombstones (docs/lifecycle.md), which the list leaves out.
      const response = await get("/api/events/export");
      if (!response.body) return;
      const decoder = new TextDecoder();
      let buffered = "";
      const parse = (line: string) => {
        try {
          return eventFromJson(line);
        } catch {
          throw new LogClientError(200, "GET /api/events/export: a line is not JSON");
        }
      };
      for await (const bytes of response.body) {
        buffered += decoder.decode(bytes, { stream: true });
        let end = buffered.indexOf("\n");
        while (end >= 0) {
          const line = buffered.slice(0, end);
          buffered = buffered.slice(end + 1);
          if (line.trim() !== "") yield parse(line);
          end = buffered.indexOf("\n");
        }
      }
      buffered += decoder.decode();
      if (buffered.trim() !== "") yield parse(buffered);
    },
    async checkpoint() {
      return (await get("/api/log/checkpoint")).text();
    },
    async verifierKey() {
      return (await (await get("/api/log/key")).text()).trim();
    },
    inclusion(eventId, treeSize) {
      return getJson<InclusionProof>("/api/log/proof/inclusion", {
        eventId,
        treeSize: String(treeSize),
      });
    },
    consistency(from, to) {
      return getJson<ConsistencyProof>("/api/log/proof/consistency", {
        from: String(from),
        to: String(to),
      });
    },
  };
}
