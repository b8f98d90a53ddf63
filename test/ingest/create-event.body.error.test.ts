/**
 * Create Event refused for its body: 400 for the content type, encoding and JSON, 413 past
 * 1 MB (spec 7, 8); a refused request stores nothing.
 */
import { request as httpRequest } from "node:http";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type ProvisionedKey,
  postEvent,
  type TestServer,
  validEvent,
} from "../support/test-server.js";
import { bearer, bodyOfBytes, expectError, MB, TOO_LARGE, useRefusalServer } from "./refusals.js";

describe("POST /api/ingest/event: refused requests", () => {
  const refusals = useRefusalServer();
  const { noNewEvent, send } = refusals;
  let server: TestServer;
  beforeAll(() => {
    server = refusals.server;
  });

  describe("400: content type and JSON", () => {
    let key: ProvisionedKey;
    beforeEach(async () => {
      key = await server.provision();
    });

    const body = () => new TextEncoder().encode(JSON.stringify(validEvent()));

    it("400 when Content-Type is missing", async () => {
      await noNewEvent(
        () => send({ headers: bearer(key.secret), body: body() }),
        (res) => expectError(res, 400),
      );
    });

    it.each([
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonp",
      "application/xml",
    ])("400 when Content-Type is %s", async (contentType) => {
      await noNewEvent(
        () =>
          send({ headers: { ...bearer(key.secret), "content-type": contentType }, body: body() }),
        (res) => expectError(res, 400),
      );
    });

    it.each([
      ["a truncated object", '{"actionKey":"user.login",'],
      ["single quotes", "{'actionKey':'user.login'}"],
      ["a trailing comma", '{"actionKey":"user.login",}'],
      ["an empty body", ""],
      ["plain text", "hello"],
      ["two objects", "{}{}"],
    ])("400 for malformed JSON: %s", async (_name, text) => {
      await noNewEvent(
        () => postEvent(server, text, bearer(key.secret)),
        (res) => expectError(res, 400),
      );
    });

    it.each([
      ["an array", "[]"],
      ["an array of an event", JSON.stringify([validEvent()])],
      ["a string", '"user.login"'],
      ["null", "null"],
      ["a number", "42"],
      ["a boolean", "true"],
    ])(
      "422 with a whole-body detail (empty path) for JSON that is not an object: %s",
      async (_name, text) => {
        await noNewEvent(
          () => postEvent(server, text, bearer(key.secret)),
          (res) => {
            expect(res.status).toBe(422);
            expect(res.body).toEqual({
              error: "Validation failed",
              details: [
                {
                  path: [],
                  message: expect.stringMatching(/^Expected object, received /),
                  code: "invalid_type",
                },
              ],
            });
          },
        );
      },
    );
  });

  describe("413: request size (spec 7, 8)", () => {
    it("413 Request payload too large for 1 MB + 1 byte", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, bodyOfBytes(MB + 1), bearer(key.secret)),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("413 for a body far over 1 MB", async () => {
      const key = await server.provision();
      await noNewEvent(
        () => postEvent(server, bodyOfBytes(3 * MB), bearer(key.secret)),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("413 for a chunked body (no Content-Length) that grows past 1 MB", async () => {
      const key = await server.provision();
      const text = bodyOfBytes(MB + 64 * 1024);
      await noNewEvent(
        () =>
          new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
            let answered = false;
            const req = httpRequest(
              `${server.url}/api/ingest/event`,
              {
                method: "POST",
                headers: {
                  "content-type": "application/json",
                  "transfer-encoding": "chunked",
                  ...bearer(key.secret),
                },
              },
              (response) => {
                answered = true;
                const chunks: Buffer[] = [];
                response.on("data", (chunk: Buffer) => chunks.push(chunk));
                response.on("end", () =>
                  resolve({
                    status: response.statusCode ?? 0,
                    body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<
                      string,
                      unknown
                    >,
                  }),
                );
                response.on("error", reject);
              },
            );
            // After the answer, the server may close the socket while the upload is still
            // being written: that write error is expected and the answer already arrived.
            req.on("error", (error) => {
              if (!answered) reject(error);
            });
            const bytes = Buffer.from(text, "utf8");
            for (let offset = 0; offset < bytes.length; offset += 64 * 1024) {
              req.write(bytes.subarray(offset, offset + 64 * 1024));
            }
            req.end();
          }),
        (res) => expectError(res, 413, TOO_LARGE),
      );
    });

    it("accepts a valid body of exactly 1 MB", async () => {
      const key = await server.provision();
      const res = await postEvent(server, bodyOfBytes(MB), bearer(key.secret));
      expect(res.status).toBe(201);
    });

    it("accepts a valid body of 1 MB - 1 byte", async () => {
      const key = await server.provision();
      const res = await postEvent(server, bodyOfBytes(MB - 1), bearer(key.secret));
      expect(res.status).toBe(201);
    });
  });
});
