/**
 * Reading request bodies: chunks joined, the size limit applied while streaming, and a
 * client that goes away mid-body reported as its own fault (400), not as a failure of
 * the service. The streams here stand in for node's request objects.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ServiceError } from "../../src/errors.js";
import { parseJsonBody, readBody } from "../../src/transport/body.js";
import type { NodeRequest } from "../../src/transport/node-http.js";

function request(headers: Record<string, string> = {}) {
  const stream = new PassThrough();
  return { stream, req: Object.assign(stream, { headers }) as unknown as NodeRequest };
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${error}`);
  return error;
}

describe("readBody", () => {
  it("joins the chunks of a body in order", async () => {
    const { stream, req } = request();
    const body = readBody(req);
    stream.write('{"a":');
    stream.write("1");
    stream.end("}");
    expect((await body).toString()).toBe('{"a":1}');
  });

  it("refuses a declared length over the limit before reading", async () => {
    const { req } = request({ "content-length": "11" });
    expect((await failure(readBody(req, 10))).kind).toBe("payload_too_large");
  });

  it("refuses a body that grows past the limit as soon as it does", async () => {
    const { stream, req } = request();
    const body = readBody(req, 10);
    stream.write("123456");
    stream.write("78901");
    expect((await failure(body)).kind).toBe("payload_too_large");
  });

  it("takes a client gone mid-body for a bad request, on an error or a bare close", async () => {
    const errored = request();
    const first = readBody(errored.req);
    errored.stream.write("{");
    errored.stream.destroy(Object.assign(new Error("aborted"), { code: "ECONNRESET" }));
    const error = await failure(first);
    expect(error.kind).toBe("bad_request");
    expect(error.message).toBe("Request body was not fully received");

    const closed = request();
    const second = readBody(closed.req);
    closed.stream.write("{");
    closed.stream.destroy();
    expect((await failure(second)).kind).toBe("bad_request");
  });
});

describe("parseJsonBody nesting", () => {
  it("accepts 100 levels, refuses 101, and does not count brackets inside strings", () => {
    const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    expect(() => parseJsonBody("application/json", Buffer.from(nested(100)))).not.toThrow();
    expect(() => parseJsonBody("application/json", Buffer.from(nested(101)))).toThrow(
      /nested more than 100 levels/,
    );
    const brackets = JSON.stringify({ text: "[{".repeat(300) });
    expect(() => parseJsonBody("application/json", Buffer.from(brackets))).not.toThrow();
  });

  it("ends a string at its first unescaped quote: escaped quotes and backslashes before a quote", () => {
    const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    // Strings full of brackets, escaped quotes and runs of backslashes, around 101 levels
    // of real nesting: refused; the same strings around 100 levels: accepted.
    const tricky = ['[{"[', "\\", '\\"[[', '"[{"', "\\\\", "[\\", 'a\\\\"}'];
    for (const text of tricky) {
      const around = (depth: number) =>
        `[${JSON.stringify(text)},${nested(depth - 1)},${JSON.stringify({ [text]: text })}]`;
      expect(() => parseJsonBody("application/json", Buffer.from(around(100)))).not.toThrow();
      expect(() => parseJsonBody("application/json", Buffer.from(around(101)))).toThrow(
        /nested more than 100 levels/,
      );
      // Many such strings side by side: still counted as text, not brackets.
      const many = JSON.stringify(Array.from({ length: 120 }, () => [text]));
      expect(() => parseJsonBody("application/json", Buffer.from(many))).not.toThrow();
    }
  });
});
