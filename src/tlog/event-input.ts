/**
 * Reading the events an auditor verifies, from text: an NDJSON export (one event or
 * tombstone per line), saved `GET /api/events` pages (`{"events": [...], ...}`, one per
 * line or one pretty-printed document), or a JSON array of events.
 *
 * An event whose JSON gives one member name twice is not passed on as parsed: JSON.parse
 * keeps the last value, other readers the first, so the verifier would vouch for content
 * another tool shows differently (RFC 8785 takes I-JSON, which forbids duplicates). It
 * becomes an `UnreadableEvent` naming the member, and the verifier fails that event.
 * So does an event with a number whose digits are not the value it reads as
 * (`9007199254740993` reads as 9007199254740992 here, as itself in a reader that keeps
 * every digit): the commitment covers the value read, so another reader's value would
 * pass unchecked. Each event of a page or an array is judged alone.
 */

/** An input item that is not an event the verifier can read, with why. */
export class UnreadableEvent {
  constructor(
    readonly problem: string,
    readonly eventId?: string,
  ) {}
}

/** The path (`context.geo.city`, `[2].actorId`) of the first member name given twice in a JSON text, if any. */
export function duplicateMember(text: string): string | undefined {
  return ambiguities(text).find((found) => found.duplicate)?.path;
}

/** A place where a JSON text (known to parse) reads differently in different readers. */
interface Ambiguity {
  /** The path of the member or number, as `duplicateMember` gives it. */
  path: string;
  /** A member name given twice (else a number). */
  duplicate: boolean;
  /** Why, in words, beginning with a verb ("gives the member … twice"), naming it by `path`. */
  why(path: string): string;
}

/**
 * Every ambiguity of a JSON text, in text order: member names given twice, and numbers
 * whose decimal value is not the value they read as (`9007199254740993` reads as
 * 9007199254740992 here, as itself in a reader that keeps every digit). `1.0`, `1e-07`
 * or `2.50` say exactly the value they read as: every reader agrees on them.
 */
export function ambiguities(text: string): Ambiguity[] {
  const scanner = new AmbiguityScanner(text);
  scanner.value("");
  return scanner.found;
}

/** The digits and exponent of a decimal number's text, normalised (`2.50` and `25e-1` alike). */
function decimalValue(text: string): string {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return text;
  const [, sign, whole = "", fraction = "", exponent = "0"] = match;
  const digits = `${whole}${fraction}`.replace(/^0+/, "");
  if (digits === "") return "0";
  const trimmed = digits.replace(/0+$/, "");
  const scale = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - trimmed.length);
  return `${sign}${trimmed}e${scale}`;
}

/**
 * A scan of JSON text already known to parse: it looks at member names and numbers, and
 * notes each ambiguity.
 */
class AmbiguityScanner {
  private at = 0;
  readonly found: Ambiguity[] = [];

  constructor(private readonly text: string) {}

  value(path: string): void {
    this.space();
    const c = this.text[this.at];
    if (c === "{") this.object(path);
    else if (c === "[") this.array(path);
    else if (c === '"') this.string();
    else this.scalar(path);
  }

  private object(path: string): void {
    this.at++;
    const names = new Set<string>();
    this.space();
    if (this.text[this.at] === "}") {
      this.at++;
      return;
    }
    for (;;) {
      this.space();
      const quoted = this.string();
      const name = quoted.includes("\\") ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
      const memberPath = path === "" ? name : `${path}.${name}`;
      if (names.has(name)) {
        this.found.push({
          path: memberPath,
          duplicate: true,
          why: (at) => `gives the member ${at} ${TWICE}`,
        });
      }
      names.add(name);
      this.space();
      this.at++; // ":"
      this.value(memberPath);
      this.space();
      if (this.text[this.at++] === "}") return;
    }
  }

  private array(path: string): void {
    this.at++;
    this.space();
    if (this.text[this.at] === "]") {
      this.at++;
      return;
    }
    for (let i = 0; ; i++) {
      this.value(`${path}[${i}]`);
      this.space();
      if (this.text[this.at++] === "]") return;
    }
  }

  /** Skips a string and returns its JSON text, quotes included. */
  private string(): string {
    const start = this.at;
    this.at++;
    for (;;) {
      const c = this.text[this.at++];
      if (c === "\\") this.at++;
      else if (c === '"' || c === undefined) break;
    }
    return this.text.slice(start, this.at);
  }

  private scalar(path: string): void {
    const start = this.at;
    while (this.at < this.text.length && !",]} \t\r\n".includes(this.text[this.at] as string)) {
      this.at++;
    }
    const written = this.text.slice(start, this.at);
    if (written === "true" || written === "false" || written === "null") return;
    const read = String(Number(written));
    if (read !== written && decimalValue(read) !== decimalValue(written)) {
      this.found.push({
        path,
        duplicate: false,
        why: (at) =>
          `writes the number ${at} as ${written}, which reads as ${read} here and as another value in a reader that keeps every digit`,
      });
    }
  }

  private space(): void {
    while (" \t\r\n".includes(this.text[this.at] ?? "x")) this.at++;
  }
}

const TWICE = "twice: readers disagree on which value is the event's";

/** An event parsed from its JSON text, or an UnreadableEvent when it is ambiguous. */
export function eventFromJson(text: string): unknown {
  return checkedEvent(JSON.parse(text), ambiguities(text)[0]);
}

/** `value`, or the UnreadableEvent naming its ambiguity, at `path` within it. */
function checkedEvent(value: unknown, found: Ambiguity | undefined, path = found?.path): unknown {
  if (found === undefined || path === undefined) return value;
  return new UnreadableEvent(`its JSON ${found.why(path)}`, eventIdOf(value));
}

function eventIdOf(value: unknown): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const id = (value as Record<string, unknown>).eventId;
  return typeof id === "string" ? id : undefined;
}

/** The events a page of GET /api/events or an array holds; undefined for anything else. */
function itemsOf(value: unknown): { items: unknown[]; prefix: string } | undefined {
  if (Array.isArray(value)) return { items: value, prefix: "" };
  if (value === null || typeof value !== "object" || "eventId" in value) return undefined;
  const { events } = value as Record<string, unknown>;
  return Array.isArray(events) ? { items: events, prefix: "events" } : undefined;
}

/**
 * The events of one JSON document (a line, or the whole text) parsed as `value`: a
 * page's or an array's events one by one, an event as itself. A repeated member name
 * fails only the event that holds it (the whole document when it is outside every event).
 */
function* eventsOfDocument(text: string, value: unknown): Generator<unknown> {
  const found = ambiguities(text);
  const list = itemsOf(value);
  if (list === undefined) {
    yield checkedEvent(value, found[0]);
    return;
  }
  // Which item holds each: `events[3].actorId` (a page), `[3].actorId` (an array); the
  // first of each item fails it, one outside every item the whole document.
  const item = new RegExp(`^${list.prefix}\\[(\\d+)\\]\\.?`);
  const byItem = new Map<number, { one: Ambiguity; path: string }>();
  for (const one of found) {
    const culprit = item.exec(one.path);
    if (culprit === null) {
      yield new UnreadableEvent(`the document ${one.why(one.path)}`);
      return;
    }
    const index = Number(culprit[1]);
    if (!byItem.has(index)) byItem.set(index, { one, path: one.path.slice(culprit[0].length) });
  }
  for (let i = 0; i < list.items.length; i++) {
    const held = byItem.get(i);
    yield checkedEvent(list.items[i], held?.one, held?.path);
  }
}

/**
 * The events of a text as `audit verify --events` reads it: NDJSON (an export), one or
 * more saved pages of GET /api/events, or one JSON document (a page, an array of events,
 * pretty-printed or not). A byte order mark is skipped; blank lines and CRLF endings are
 * fine. A line that is not JSON is passed on as a string (the verifier fails it).
 */
export function* eventsOfText(text: string): Generator<unknown> {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const trimmed = body.trim();
  if (trimmed === "") return;
  // A whole document first (a pretty-printed page); NDJSON fails this at its first line end.
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    let whole: unknown;
    try {
      whole = JSON.parse(trimmed);
    } catch {
      whole = undefined;
    }
    if (whole !== undefined) {
      yield* eventsOfDocument(trimmed, whole);
      return;
    }
  }
  for (const line of body.split("\n")) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      yield line;
      continue;
    }
    yield* eventsOfDocument(line, value);
  }
}
