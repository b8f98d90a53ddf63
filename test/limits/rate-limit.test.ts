/**
 * The Create Event rate limit through real HTTP and Connect: per API key, rolling
 * window, 429 with Retry-After and nothing else, after authentication and before
 * validation. Runs on the in-memory limiter, or on Redis when REDIS_URL is set.
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const WINDOW_SECONDS = 2;
const MAX = 5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("rate limit of Create Event", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT_MAX: String(MAX),
      RATE_LIMIT_WINDOW_SECONDS: String(WINDOW_SECONDS),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const send = (secret: string, body: unknown = validEvent()) =>
    postEvent(server, body, { authorization: `Bearer ${secret}` });

  it("request MAX+1 in the window gets 429 Rate limit exceeded with Retry-After and no other limit headers", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX; i++) expect((await send(secret)).status).toBe(201);
    const refused = await send(secret);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: "Rate limit exceeded" });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_SECONDS);
    const limitHeaders = [...refused.headers.keys()].filter((name) => /ratelimit/i.test(name));
    expect(limitHeaders).toEqual([]);
  });

  it("successful responses carry no rate-limit headers", async () => {
    const { secret } = await server.provision();
    const created = await send(secret);
    expect(created.status).toBe(201);
    expect(
      [...created.headers.keys()].filter((name) => /ratelimit|retry-after/i.test(name)),
    ).toEqual([]);
  });

  it("a slot frees when the window rolls past the oldest request", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX; i++) expect((await send(secret)).status).toBe(201);
    const refused = await send(secret);
    expect(refused.status).toBe(429);
    await sleep(Number(refused.headers.get("retry-after")) * 1000 + 100);
    expect((await send(secret)).status).toBe(201);
  });

  it("refused requests do not use up the budget", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX; i++) await send(secret);
    for (let i = 0; i < 10; i++) expect((await send(secret)).status).toBe(429);
    await sleep(WINDOW_SECONDS * 1000 + 100);
    const statuses = [];
    for (let i = 0; i < MAX + 1; i++) statuses.push((await send(secret)).status);
    expect(statuses).toEqual([...Array<number>(MAX).fill(201), 429]);
  });

  it("each API key has its own counter, even within one project", async () => {
    const first = await server.provision();
    const second = await server.admin.createApiKey({ projectId: first.projectId, environment: 1 });
    for (let i = 0; i < MAX; i++) await send(first.secret);
    expect((await send(first.secret)).status).toBe(429);
    expect((await send(second.secret)).status).toBe(201);
  });

  it("a request without valid credentials gets 401, never 429, and does not count", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX * 2; i++) {
      const anonymous = await postEvent(server, validEvent());
      expect(anonymous.status).toBe(401);
      const unknown = await postEvent(server, validEvent(), {
        authorization: "Bearer pk_test_unknownunknownunknown",
      });
      expect(unknown.status).toBe(401);
    }
    expect((await send(secret)).status).toBe(201);
  });

  it("the limit applies before validation: an invalid body on an exhausted key gets 429", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX; i++) await send(secret);
    const refused = await send(secret, { nothing: "valid" });
    expect(refused.status).toBe(429);
  });

  it("invalid bodies count against the limit (they were admitted)", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX; i++) expect((await send(secret, {})).status).toBe(422);
    expect((await send(secret)).status).toBe(429);
  });

  it("gRPC and Connect callers get ResourceExhausted with a retry delay, sharing the REST budget", async () => {
    const { secret } = await server.provision();
    for (let i = 0; i < MAX; i++) await send(secret);
    const client = rpcClient(IngestService, server.url);
    const error = await rpcFailure(
      client.createEvent(validEvent(), { headers: { authorization: `Bearer ${secret}` } }),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.rawMessage).toBe("Rate limit exceeded");
    const [retry] = error?.findDetails(RetryInfoSchema) ?? [];
    expect(Number(retry?.retryDelay?.seconds)).toBeGreaterThanOrEqual(1);
  });
});

describe("rate limit under concurrency", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "100", RATE_LIMIT_WINDOW_SECONDS: "60" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("200 parallel requests against a limit of 100 give exactly 100 successes", async () => {
    const { secret } = await server.provision();
    const responses = await Promise.all(
      Array.from({ length: 200 }, () =>
        postEvent(server, validEvent(), { "x-project-key": secret }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(100);
    expect(statuses.filter((status) => status === 429)).toHaveLength(100);
    const [{ count }] = await server.app.db.query<{ count: number }>(
      "select count(*)::int as count from events",
    );
    expect(count).toBe(100);
  });
});
