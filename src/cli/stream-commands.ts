/**
 * `audit export` and `audit follow`: the first stage of a SIEM pipeline (docs/export.md).
 *
 * export: GET /api/events/export to a file or stdout, NDJSON or CSV. The range is fixed
 * by the first response (`X-Export-End-Index`); a cut connection is resumed at once from
 * the last complete record + 1 (up to --retries times), and `--resume` continues a file
 * an earlier run left incomplete (its partial last record is cut off first). Only whole
 * records are written, so the output never holds half an event. On a terminal, progress
 * goes to stderr.
 *
 * follow: GET /api/events/stream, each event's JSON on one stdout line (NDJSON). With
 * --cursor-file, the position to resume from is written there after each batch (written
 * to a temporary file and renamed, so it is never half-written) and read at start: a
 * restarted follower neither loses nor repeats events, give or take the batch in flight
 * when it was killed (an event is printed before the cursor moves past it: at least
 * once). It reconnects after a cut with a growing delay; a refused credential ends it.
 */
import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { readFile, rename, stat, truncate, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { errorMessage } from "./log-client.js";

/** A usage mistake or a refusal that retrying cannot mend: exit code 2. */
export class StreamCommandError extends Error {}

const FILTERS = ["actor-id", "entity-type", "entity-id", "action", "tenant-id", "q", "from", "to"];

/** The usage text of the two commands. */
export const STREAM_USAGE = `audit export [options]
  Writes the events of a log-index range in log order (GET /api/events/export).
  --out <file>            write to a file (default: stdout)
  --format <ndjson|csv>   one JSON event a line (default), or CSV (RFC 4180)
  --resume                continue --out from its last complete event
  --from-index <n>        first log index (default 0)
  --to-index <n>          last log index (default: the log's end when the export starts)
  --retries <n>           resume a cut connection this many times (default 5)
  --actor-id, --entity-type, --entity-id, --action, --tenant-id, --q, --from, --to
                          the filters and search of GET /api/events
  --url, --api-key        as for verify

audit follow [options]
  Prints the backlog, then every new event, one JSON object a line (GET /api/events/stream).
  --cursor-file <file>    read the position to start from, and keep it there
  --from-index <n>        where to start without a cursor file (default 0)
  --actor-id ... --to     filters, as for export
  --url, --api-key        as for verify
`;

interface Common {
  base: string;
  apiKey: string;
  filters: Record<string, string>;
}

function common(values: Record<string, string | boolean | undefined>): Common {
  const apiKey = (values["api-key"] as string | undefined) ?? process.env.AUDIT_API_KEY ?? "";
  if (apiKey === "") throw new StreamCommandError("give --api-key (or AUDIT_API_KEY)");
  const base = (
    (values.url as string | undefined) ??
    process.env.AUDIT_URL ??
    "http://127.0.0.1:3000"
  ).replace(/\/+$/, "");
  const filters: Record<string, string> = {};
  for (const name of FILTERS) {
    const value = values[name];
    if (typeof value === "string")
      filters[name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  return { base, apiKey, filters };
}

const filterOptions = Object.fromEntries(
  FILTERS.map((name) => [name, { type: "string" as const }]),
);

/** GET with the credential; the service's JSON error as a StreamCommandError (4xx) or Error. */
async function get(
  url: string,
  apiKey: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${apiKey}`, ...headers },
    ...(signal ? { signal } : {}),
  });
  if (response.ok) return response;
  const message = await errorMessage(response);
  const error = `${new URL(url).pathname}: ${response.status} ${message}`;
  throw response.status >= 400 && response.status < 500 && response.status !== 429
    ? new StreamCommandError(error)
    : new Error(error);
}

/**
 * Splits a stream of text into whole records: NDJSON lines, or CSV records (a CRLF
 * outside quotes ends one). Returns the records found and keeps the rest.
 */
export function createRecordSplitter(format: "ndjson" | "csv") {
  let pending = "";
  let quoted = false;
  let scanned = 0;
  return {
    push(text: string): string[] {
      pending += text;
      const records: string[] = [];
      let start = 0;
      if (format === "ndjson") {
        for (let end = pending.indexOf("\n"); end >= 0; end = pending.indexOf("\n", start)) {
          records.push(pending.slice(start, end + 1));
          start = end + 1;
        }
      } else {
        for (let i = scanned; i < pending.length; i++) {
          const c = pending[i];
          if (c === '"') quoted = !quoted;
          else if (!quoted && c === "\n" && pending[i - 1] === "\r") {
            records.push(pending.slice(start, i + 1));
            start = i + 1;
          }
        }
      }
      pending = pending.slice(start);
      scanned = pending.length;
      return records;
    },
  };
}

/** The log index of a record: NDJSON's logIndex, CSV's first column. */
export function recordIndex(format: "ndjson" | "csv", record: string): number {
  const value =
    format === "ndjson"
      ? (JSON.parse(record) as { logIndex?: unknown }).logIndex
      : Number(record.slice(0, record.indexOf(",")));
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw new Error(`a record without a log index: ${record.slice(0, 80)}`);
  }
  return value;
}

/**
 * The last whole record's log index in an export file, after cutting off a partial
 * last record; undefined for a file without records.
 */
async function resumePoint(path: string, format: "ndjson" | "csv"): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  // A file of the other format would hold no whole record of this one, and be cut to
  // nothing: refused instead.
  const opening = format === "csv" ? "logIndex," : "{";
  if (text !== "" && !text.startsWith(opening)) {
    throw new StreamCommandError(
      `${path} does not hold a ${format} export: resume it with the --format it was written in`,
    );
  }
  const splitter = createRecordSplitter(format);
  const records = splitter.push(text);
  const whole = records.reduce((bytes, record) => bytes + Buffer.byteLength(record), 0);
  if (whole < (await stat(path)).size) await truncate(path, whole);
  const data = format === "csv" ? records.slice(1) : records;
  const last = data.at(-1);
  return last === undefined ? undefined : recordIndex(format, last);
}

/**
 * The output failed (a closed pipe, a full disk): no retry of the request mends it, so
 * the command ends (exit code 2) instead of reconnecting.
 */
export class OutputError extends StreamCommandError {}

type Output = WriteStream | NodeJS.WriteStream;

/**
 * Keeps an output's failure for the next write to report: without a listener, a pipe
 * closed by its reader (EPIPE) would end the process with a stack trace.
 */
function watchOutput(out: Output): void {
  out.on("error", () => {});
}

/** Throws OutputError once the output has failed. */
function checkOutput(out: Output): void {
  if (out.errored) throw new OutputError(`the output failed: ${out.errored.message}`);
  if (out.destroyed) throw new OutputError("the output was closed");
}

async function write(out: Output, text: string): Promise<void> {
  checkOutput(out);
  try {
    if (!out.write(text)) await once(out, "drain");
  } catch (error) {
    throw new OutputError(`the output failed: ${error instanceof Error ? error.message : error}`);
  }
  checkOutput(out);
}

/** Resolves when what was written reached the output; OutputError if it failed. */
function flush(out: Output): Promise<void> {
  checkOutput(out);
  return new Promise((resolve, reject) => {
    out.write("", (error) => {
      if (error) reject(new OutputError(`the output failed: ${error.message}`));
      else resolve();
    });
  });
}

/** `audit export`. */
export async function exportCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      format: { type: "string", default: "ndjson" },
      resume: { type: "boolean", default: false },
      "from-index": { type: "string" },
      "to-index": { type: "string" },
      retries: { type: "string", default: "5" },
      url: { type: "string" },
      "api-key": { type: "string" },
      ...filterOptions,
    },
  });
  if (positionals.length > 0) throw new StreamCommandError(`unexpected argument ${positionals[0]}`);
  const format = values.format;
  if (format !== "ndjson" && format !== "csv") {
    throw new StreamCommandError("--format must be ndjson or csv");
  }
  if (values.resume && values.out === undefined) {
    throw new StreamCommandError("--resume needs --out (the file to continue)");
  }
  const { base, apiKey, filters } = common(values);
  const retries = Number(values.retries);
  let next = values["from-index"];
  let toIndex = values["to-index"];
  let header = true;
  if (values.resume && values.out !== undefined) {
    const last = await resumePoint(values.out, format);
    const size = await stat(values.out).then(
      (s) => s.size,
      () => 0,
    );
    if (last !== undefined) next = String(last + 1);
    // A CSV file already has its header row once it has anything.
    header = size === 0;
  }
  const out =
    values.out === undefined
      ? process.stdout
      : createWriteStream(values.out, { flags: values.resume ? "a" : "w" });
  watchOutput(out);
  const progress = process.stderr.isTTY ? createProgress() : undefined;
  let written = 0;
  let failures = 0;
  for (;;) {
    const query = new URLSearchParams({ ...filters, format });
    if (next !== undefined) query.set("fromIndex", next);
    if (toIndex !== undefined) query.set("toIndex", toIndex);
    try {
      const response = await get(`${base}/api/events/export?${query}`, apiKey);
      const end = Number(response.headers.get("x-export-end-index"));
      // A resumed request covers the same range as the first, whatever arrived since.
      if (toIndex === undefined && end > 0) toIndex = String(end - 1);
      const first = Number(next ?? 0);
      const splitter = createRecordSplitter(format);
      const decoder = new TextDecoder();
      let isHeader = format === "csv";
      if (!response.body) throw new Error("the export has no body");
      for await (const bytes of response.body) {
        let text = "";
        for (const record of splitter.push(decoder.decode(bytes, { stream: true }))) {
          if (isHeader) {
            isHeader = false;
            if (!header) continue;
            header = false;
          } else {
            next = String(recordIndex(format, record) + 1);
            written++;
          }
          text += record;
        }
        if (text !== "") await write(out, text);
        progress?.show(written, Number(next ?? first) - first, end - first);
      }
      failures = 0;
      break;
    } catch (error) {
      if (error instanceof StreamCommandError || ++failures > retries) throw error;
      process.stderr.write(
        `${progress ? "\n" : ""}audit: export cut (${error instanceof Error ? error.message : error}); resuming at ${next ?? 0}\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** failures));
    }
  }
  // Done only once every record reached the output (a reader that left, a full disk).
  await flush(out);
  progress?.done(written);
  if (out !== process.stdout) {
    out.end();
    await once(out, "finish");
  }
  return 0;
}

function createProgress() {
  const started = performance.now();
  let shown = 0;
  return {
    show(events: number, covered: number, range: number) {
      const now = performance.now();
      if (now - shown < 200) return;
      shown = now;
      const rate = Math.round(events / ((now - started) / 1000));
      const share = range > 0 ? Math.min(1, covered / range) : 1;
      const bar = "#".repeat(Math.round(share * 30)).padEnd(30, ".");
      process.stderr.write(`\r[${bar}] ${Math.round(share * 100)}% ${events} events, ${rate}/s `);
    },
    done(events: number) {
      const seconds = (performance.now() - started) / 1000;
      process.stderr.write(
        `\r${" ".repeat(70)}\rexported ${events} events in ${seconds.toFixed(1)} s\n`,
      );
    },
  };
}

/** `audit follow`. */
export async function followCommand(argv: string[], signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "cursor-file": { type: "string" },
      "from-index": { type: "string" },
      url: { type: "string" },
      "api-key": { type: "string" },
      ...filterOptions,
    },
  });
  if (positionals.length > 0) throw new StreamCommandError(`unexpected argument ${positionals[0]}`);
  const { base, apiKey, filters } = common(values);
  const cursorFile = values["cursor-file"];
  let next = values["from-index"] ?? "0";
  if (cursorFile !== undefined) {
    const saved = await readFile(cursorFile, "utf8").catch(() => undefined);
    if (saved !== undefined) {
      if (!/^\d+\s*$/.test(saved)) {
        throw new StreamCommandError(`${cursorFile} does not hold a log index`);
      }
      next = saved.trim();
    }
  }
  const saveCursor = async () => {
    if (cursorFile === undefined) return;
    await writeFile(`${cursorFile}.tmp`, `${next}\n`);
    await rename(`${cursorFile}.tmp`, cursorFile);
  };
  watchOutput(process.stdout);
  let failures = 0;
  while (!signal?.aborted) {
    try {
      const query = new URLSearchParams({ ...filters, fromIndex: next });
      const response = await get(`${base}/api/events/stream?${query}`, apiKey, {}, signal);
      failures = 0;
      if (!response.body) throw new Error("the stream has no body");
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const bytes of response.body) {
        buffer += decoder.decode(bytes, { stream: true });
        let lines = "";
        let moved = false;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = "message";
          let data = "";
          let id: string | undefined;
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
            else if (line.startsWith("id: ")) id = line.slice(4);
            else if (line.startsWith(": heartbeat ")) {
              next = line.slice(12);
              moved = true;
            }
          }
          if (event === "error") throw new StreamCommandError(`stream ended: ${data}`);
          if (data !== "" && id !== undefined) {
            lines += `${data}\n`;
            next = String(BigInt(id) + 1n);
            moved = true;
          }
        }
        // A heartbeat ends the follower on a failure an earlier write reported late (a
        // closed pipe is seen only when written to).
        if (lines !== "") await write(process.stdout, lines);
        else checkOutput(process.stdout);
        if (moved) await saveCursor();
      }
    } catch (error) {
      if (signal?.aborted) break;
      if (error instanceof StreamCommandError) throw error;
      failures++;
      const delay = Math.min(200 * 2 ** failures, 10_000);
      process.stderr.write(
        `audit: follow cut (${error instanceof Error ? error.message : error}); reconnecting at ${next} in ${delay} ms\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
  return 0;
}
