/**
 * The REST forms of the streaming methods (docs/export.md):
 * - `GET /api/events/export`: NDJSON (default) or CSV (`format=csv`), chunked, with a
 *   `Content-Disposition` file name and the range in `X-Export-From-Index` and
 *   `X-Export-End-Index`;
 * - `GET /api/events/stream`: Server-Sent Events, `id:` the event's logIndex, resumed
 *   with `Last-Event-ID` (or `fromIndex`); heartbeats are SSE comments.
 *
 * Invariants: every refusal (credential, parameters, range, header) is a JSON error
 * before the first byte of the stream. Writing waits for the socket to drain before the
 * next page is read (backpressure: never more than one page buffered here), and a
 * client that goes away aborts the stream at once: the page being read is discarded,
 * nothing stays open. A failure after the headers cannot change the status: the export
 * is cut (the client sees an incomplete chunked body and resumes with fromIndex); an SSE
 * stream ends with an `error` event carrying the error body (a frontend token that
 * expires ends so, with 401's body).
 */
import {
  ExportEventsRequestSchema,
  FollowEventsRequestSchema,
} from "../../gen/audit/v1/events_pb.js";
import {
  chunkEntries,
  type EventStreamOperations,
  type OpenedStream,
} from "../api/event-stream-operations.js";
import type { OperationCall } from "../api/operation.js";
import type { RequestFacts } from "../api/request-facts.js";
import { ServiceError } from "../errors.js";
import type { ErrorReporter } from "./error-reporter.js";
import { CSV_HEADER, csvRow, entryJson } from "./event-rendering.js";
import { exportRangeHeaders } from "./export-range.js";
import { headerValue, type NodeRequest, type NodeResponse, sendJson } from "./node-http.js";
import { queryFields } from "./rest.js";
import { toRestError } from "./rest-errors.js";

/** The paths served here. */
export const EXPORT_PATH = "/api/events/export";
export const STREAM_PATH = "/api/events/stream";

/** One request as the handler hands it over. */
export interface StreamExchange {
  req: NodeRequest;
  res: NodeResponse;
  facts: RequestFacts;
  /** The request's method. */
  method: string;
  /** The method that decides the route: GET for HEAD (HEAD is GET without the body). */
  readMethod: string;
  path: string;
  /** The query string, without its `?`. */
  query: string;
}

/** The REST streams. */
export interface RestStreams {
  /** True when the path is one of the streams (it is then answered). */
  handle(exchange: StreamExchange): boolean;
}

const FORMATS = {
  ndjson: { type: "application/x-ndjson; charset=utf-8", extension: "ndjson" },
  csv: { type: "text/csv; charset=utf-8; header=present", extension: "csv" },
} as const;

/** Creates the REST streams over the operations. */
export function createRestStreams(
  operations: EventStreamOperations,
  reporter: ErrorReporter,
  /** The `Allow` header of a stream's path (a 405's: cors.ts allowHeader). */
  allowAt: (path: string) => string,
): RestStreams {
  const refuse = (x: StreamExchange, error: unknown) => {
    reporter.report(error, x.facts, { route: x.path });
    const mapped = toRestError(error);
    if (x.res.headersSent) x.res.destroy();
    else sendJson(x.res, mapped.status, mapped.body, mapped.headers);
  };

  const serveExport = async (x: StreamExchange, call: OperationCall, signal: AbortSignal) => {
    const format = new URLSearchParams(x.query).get("format") ?? "ndjson";
    if (format !== "ndjson" && format !== "csv") {
      throw new ServiceError("bad_request", "format must be ndjson or csv");
    }
    const opened = await operations.exportEvents(call, signal);
    const { type, extension } = FORMATS[format];
    x.res.writeHead(200, {
      "content-type": type,
      "content-disposition": `attachment; filename="${fileName(opened, extension)}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...exportRangeHeaders(opened),
    });
    if (x.method === "HEAD") {
      await opened.chunks.return(undefined);
      x.res.end();
      return;
    }
    if (format === "csv" && !(await write(x.res, CSV_HEADER))) return;
    for await (const chunk of opened.chunks) {
      let text = "";
      for (const entry of chunkEntries(chunk)) {
        const json = entryJson(entry);
        text += format === "csv" ? csvRow(json) : `${JSON.stringify(json)}\n`;
      }
      if (text !== "" && !(await write(x.res, text))) break;
    }
    if (!signal.aborted) x.res.end();
  };

  const serveFollow = async (x: StreamExchange, call: OperationCall, signal: AbortSignal) => {
    const lastEventId = headerValue(x.req, "last-event-id");
    const opened = await operations.followEvents(call, signal, lastEventId);
    x.res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
    });
    if (x.method === "HEAD") {
      await opened.chunks.return(undefined);
      x.res.end();
      return;
    }
    // The reconnection delay for EventSource, and a first line so that proxies and
    // clients see the stream open at once.
    if (!(await write(x.res, `retry: 1000\n: following from ${opened.fromIndex}\n\n`))) return;
    try {
      for await (const chunk of opened.chunks) {
        let text = "";
        for (const entry of chunkEntries(chunk)) {
          const json = entryJson(entry);
          text += `id: ${json.logIndex}\ndata: ${JSON.stringify(json)}\n\n`;
        }
        if (text === "") text = `: heartbeat ${chunk.nextIndex}\n\n`;
        if (!(await write(x.res, text))) return;
      }
    } catch (error) {
      if (signal.aborted) return;
      reporter.report(error, x.facts, { route: x.path });
      const body = JSON.stringify(toRestError(error).body);
      await write(x.res, `event: error\ndata: ${body}\n\n`);
    }
    if (!signal.aborted) x.res.end();
  };

  return {
    handle(x) {
      const serve =
        x.path === EXPORT_PATH ? serveExport : x.path === STREAM_PATH ? serveFollow : undefined;
      if (!serve) return false;
      if (x.readMethod !== "GET") {
        sendJson(x.res, 405, { error: "Method not allowed" }, { allow: allowAt(x.path) });
        return true;
      }
      // The client going away (or the response failing) aborts the stream.
      const abort = new AbortController();
      x.res.once("close", () => abort.abort());
      const call: OperationCall = {
        facts: x.facts,
        header: (name) => headerValue(x.req, name),
        readJson: () => queryJson(new URLSearchParams(x.query), x.path === EXPORT_PATH),
      };
      serve(x, call, abort.signal).catch((error: unknown) => {
        if (abort.signal.aborted && x.res.headersSent) return;
        refuse(x, error);
      });
      return true;
    },
  };
}

/**
 * Names a log stream's query string may hold beyond its fields: the export's `format`,
 * and what the operation refuses with a message of its own (`limit` and `cursor`, a
 * list's paging; a follow's `toIndex` and `format`, an export's).
 */
const STREAM_NAMED = ["format", "limit", "cursor", "toIndex"] as const;

/**
 * The request's parameters from its query string; a repeated or unknown one is refused
 * (400). An export's `format` is the transport's (the operation never sees it), a
 * follow's is passed on for the operation to refuse.
 */
function queryJson(query: URLSearchParams, isExport: boolean): Record<string, string> {
  const schema = isExport ? ExportEventsRequestSchema : FollowEventsRequestSchema;
  const kept = STREAM_NAMED.filter((name) => !schema.fields.some((f) => f.jsonName === name));
  const json = queryFields(schema, query, { kept, taken: isExport ? ["format"] : [] });
  if (isExport) delete json.format;
  return json;
}

/** `audit-events-<project>-<environment>-<first>-<last>.<extension>` */
function fileName(opened: OpenedStream, extension: string): string {
  const last = (opened.endIndex ?? opened.fromIndex) - 1n;
  const range = last < opened.fromIndex ? "empty" : `${opened.fromIndex}-${last}`;
  return `audit-events-${opened.projectId}-${opened.environment}-${range}.${extension}`;
}

/**
 * Writes `text`; resolves when the response can take more (at once, or at its `drain`),
 * false when the response closed first (the client went away).
 */
function write(res: NodeResponse, text: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(text)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (drained: boolean) => {
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(drained);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}
