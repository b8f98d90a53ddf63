/**
 * docs/api.md's REST examples run as written. Every ```sh block followed by an ```http
 * block (the answer shown), and every block that sets a shell variable for later ones, is
 * run in document order in one bash process with BASE and KEY set to a live service and a
 * fresh project's key; each answer must have the status shown, the headers shown, and the
 * body shown (same keys, same values; "…" matches any string).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/test-server.js";

const DOC = fileURLToPath(new URL("../../docs/api.md", import.meta.url));
const MARK = "@@example-answer@@";

interface Example {
  /** The first line of the command, to name the case. */
  title: string;
  script: string;
  expected?: { status: number; headers: [string, string][]; body: unknown };
}

/** The examples of the document, in order. */
function examples(markdown: string): Example[] {
  const blocks = [...markdown.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((found) => ({
    lang: found[1] ?? "",
    text: found[2] ?? "",
  }));
  const out: Example[] = [];
  blocks.forEach((block, index) => {
    if (block.lang !== "sh") return;
    const next = blocks[index + 1];
    const setsVariables = /^[A-Z]+=\$\(/m.test(block.text);
    if (next?.lang !== "http" && !setsVariables) return; // setup lines, buf curl
    const title = block.text.split("\n")[0] ?? "";
    if (next?.lang !== "http") {
      out.push({ title, script: block.text });
      return;
    }
    const [head = "", ...rest] = next.text.split(/\n\n/);
    const [statusLine = "", ...headerLines] = head.split("\n");
    const headers = headerLines.map((line): [string, string] => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    });
    const bodyText = rest.join("\n\n").trim();
    out.push({
      title,
      script: block.text,
      expected: {
        status: Number(statusLine.split(" ")[1]),
        headers,
        body: bodyText === "" ? undefined : JSON.parse(bodyText),
      },
    });
  });
  return out;
}

/** A received answer of `curl -i`. */
interface Answer {
  status: number;
  headers: Map<string, string>;
  body: unknown;
}

function parseAnswer(output: string): Answer {
  // With -i, curl prints the head (CRLF lines), a blank line, then the body.
  const split = output.indexOf("\r\n\r\n");
  const head = output.slice(0, split).split("\r\n");
  const body = output.slice(split + 4).trim();
  const headers = new Map<string, string>();
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return {
    status: Number(head[0]?.split(" ")[1]),
    headers,
    body: body === "" ? undefined : JSON.parse(body),
  };
}

/** Where `actual` differs from the documented `expected` ("…" is any string). */
function differences(expected: unknown, actual: unknown, at = "body"): string[] {
  if (typeof expected === "string" && expected.includes("…")) {
    return typeof actual === "string"
      ? []
      : [`${at}: expected a string, got ${JSON.stringify(actual)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      return [`${at}: expected ${expected.length} items, got ${JSON.stringify(actual)}`];
    }
    return expected.flatMap((item, i) => differences(item, actual[i], `${at}[${i}]`));
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) {
      return [`${at}: expected an object, got ${JSON.stringify(actual)}`];
    }
    const want = expected as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(want), ...Object.keys(got)])];
    return keys.flatMap((key) =>
      key in want && key in got
        ? differences(want[key], got[key], `${at}.${key}`)
        : [
            `${at}.${key}: ${key in want ? "missing" : `not documented (${JSON.stringify(got[key])})`}`,
          ],
    );
  }
  return Object.is(expected, actual)
    ? []
    : [`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

describe("docs/api.md examples", () => {
  const all = examples(readFileSync(DOC, "utf8"));
  let server: TestServer;
  let outputs: string[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    const key = await server.provision();
    // One script, so that variables set by one example reach the next; each checked
    // example's output follows a marker line.
    const script = all
      .map((example) => (example.expected ? `echo '${MARK}'\n${example.script}` : example.script))
      .join("\n");
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(
        "bash",
        ["-c", script],
        {
          env: { ...process.env, BASE: server.url, KEY: key.secret },
          maxBuffer: 8 << 20,
          timeout: 120_000,
        },
        (error, out, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(out),
      );
    });
    outputs = stdout.split(`${MARK}\n`).slice(1);
  }, 180_000);
  afterAll(async () => {
    await server?.close();
  });

  it("the document has the examples this test runs", () => {
    const checked = all.filter((example) => example.expected);
    expect(checked.length).toBeGreaterThanOrEqual(20);
    expect(outputs).toHaveLength(checked.length);
  });

  const checked = all.filter((example) => example.expected);
  it.each(checked.map((example, index) => [index, example.title, example] as const))(
    "example %i (%s) answers as documented",
    (index, _title, example) => {
      const expected = example.expected;
      if (!expected) throw new Error("unreachable: only checked examples");
      const answer = parseAnswer(outputs[index] ?? "");
      expect(answer.status, outputs[index]).toBe(expected.status);
      for (const [name, value] of expected.headers) {
        expect(answer.headers.has(name), `header ${name}`).toBe(true);
        if (!value.includes("…")) expect(answer.headers.get(name)).toBe(value);
      }
      expect(differences(expected.body, answer.body)).toEqual([]);
    },
  );

  it("the comparison reports a wrong value, a missing key and an undocumented key", () => {
    expect(differences({ a: "x", b: "…" }, { a: "y", c: 1 })).toEqual([
      'body.a: expected "x", got "y"',
      "body.b: missing",
      "body.c: not documented (1)",
    ]);
  });
});
