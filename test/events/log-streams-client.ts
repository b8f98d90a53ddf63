/**
 * What the export and follow tests share: REST exports read whole or cut off after some
 * lines, Server-Sent Events read until a condition holds, and an RFC 4180 CSV reader.
 */

/** A REST export read to its end. */
export interface ExportResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** GET /api/events/export with query parameters, read to the end. */
export async function exportEvents(
  server: { url: string },
  headers: Record<string, string>,
  params: Record<string, string | number> = {},
): Promise<ExportResponse> {
  const response = await fetch(exportUrl(server, params), { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The export's URL. */
export function exportUrl(
  server: { url: string },
  params: Record<string, string | number> = {},
  path = "/api/events/export",
): string {
  const query = new URLSearchParams(
    Object.entries(params).map(([name, value]): [string, string] => [name, String(value)]),
  ).toString();
  return `${server.url}${path}${query ? `?${query}` : ""}`;
}

/** The JSON objects of an NDJSON text. */
export function ndjson(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Reads an NDJSON export until `lines` whole lines arrived, then drops the connection:
 * the lines read (a partial last line is dropped, as a client resuming would).
 */
export async function exportCutAfter(
  url: string,
  headers: Record<string, string>,
  lines: number,
): Promise<Record<string, unknown>[]> {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  if (response.status !== 200 || !response.body) throw new Error(`export: ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.split("\n").length - 1 < lines) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    abort.abort();
  }
  const whole = text.slice(0, text.lastIndexOf("\n") + 1);
  return ndjson(whole).slice(0, lines);
}

/** One Server-Sent Event. */
export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/** An SSE stream being read. */
export interface SseStream {
  status: number;
  headers: Headers;
  /** The events so far. */
  events: SseEvent[];
  /** Comment lines so far (heartbeats). */
  comments: string[];
  /** Reads until `done` holds for what arrived (or the stream ends); returns the events. */
  until(done: (stream: SseStream) => boolean): Promise<SseEvent[]>;
  /** The body, when the response was not a stream (an error). */
  body(): Promise<string>;
  /** Drops the connection. */
  close(): void;
  /** True once the server ended the stream. */
  ended: boolean;
}

/** Opens GET /api/events/stream (or another SSE URL). */
export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const abort = new AbortController();
  const response = await fetch(url, {
    headers: { accept: "text/event-stream", ...headers },
    signal: abort.signal,
  });
  // Taken on the first read, so that an error's body can still be read as text.
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const decoder = new TextDecoder();
  let buffer = "";
  const stream: SseStream = {
    status: response.status,
    headers: response.headers,
    events: [],
    comments: [],
    ended: false,
    async until(done) {
      while (!done(stream) && !stream.ended) {
        reader ??= response.body?.getReader();
        if (!reader) throw new Error("no body");
        const { value, done: finished } = await reader.read();
        if (finished) {
          stream.ended = true;
          break;
        }
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: SseEvent = { id: undefined, event: "message", data: "" };
          let hasData = false;
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) stream.comments.push(line.slice(1).trim());
            else if (line.startsWith("id: ")) event.id = line.slice(4);
            else if (line.startsWith("event: ")) event.event = line.slice(7);
            else if (line.startsWith("data: ")) {
              event.data += line.slice(6);
              hasData = true;
            }
          }
          if (hasData) stream.events.push(event);
        }
      }
      return stream.events;
    },
    async body() {
      return response.text();
    },
    close() {
      abort.abort();
    },
  };
  return stream;
}

/** The rows of an RFC 4180 CSV text (CRLF line ends, quoted fields with doubled quotes). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === "") quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  if (field !== "" || row.length > 0) throw new Error("CSV does not end with CRLF");
  return rows;
}
