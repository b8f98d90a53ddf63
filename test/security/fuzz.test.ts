/**
 * Fuzzing Create Event (issue 7, hostile input) with fast-check. Each case is one request
 * on a raw socket: a body that starts from a complete valid event and is mutated
 * (fields dropped or replaced by random JSON, huge strings, deep nesting, prototype keys,
 * too many changes), or random JSON, random bytes, truncated or corrupted text, or over
 * 1 MB; random content types and charsets; valid, foreign, revoked, read-only and
 * malformed credentials; Idempotency-Key values with unicode and control characters;
 * sometimes chunked. Every answer must come within a bounded time, never be a 500, be
 * 201/200 or a status of spec section 7 with a JSON `error` body, and leave exactly one
 * new event row (for a 201, in the scope of a key the request carried) or none.
 *
 * The generators are in fuzz-cases.ts, shared with the long run (`npm run fuzz:long`,
 * scripts/fuzz-long.ts).
 *
 * Bounded: FUZZ_RUNS cases (1,000 by default; about 10 s on PGlite, 15 s on PostgreSQL
 * here) or FUZZ_TIME_LIMIT_MS (45 s), whichever comes first; the count run is logged.
 * A failure prints the seed; FUZZ_SEED=<seed> replays it.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { bearer, tokenFor } from "../events/events-client.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import {
  anyBody,
  type Credentials,
  contentType,
  credentialHeaders,
  extraHeaders,
  headerValue,
  idempotencyKey,
} from "./fuzz-cases.js";
import { countEvents, expectSpecError, type RawRequest, rawRequest } from "./raw-client.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1_000);
const TIME_LIMIT_MS = Number(process.env.FUZZ_TIME_LIMIT_MS ?? 45_000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
/** Longer than any honest answer takes, even for a 2 MB body on a busy machine. */
const REQUEST_TIMEOUT_MS = 15_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("fuzzing Create Event", () => {
  let server: TestServer;
  let keys: Credentials;
  /** Scope (`projectId/environment`) of each key that may create events. */
  let scopes: Map<string, string>;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    const a = await server.provision();
    const live = await server.admin.createApiKey({
      projectId: a.projectId,
      environment: Environment.LIVE,
    });
    const b = await server.provision();
    const revoked = await server.provision();
    await server.admin.revokeApiKey({ id: revoked.keyId });
    keys = {
      a: a.secret,
      aLive: live.secret,
      b: b.secret,
      revoked: revoked.secret,
      token: await tokenFor(server, a.secret, { expiresInSeconds: 3600 }),
    };
    scopes = new Map([
      [a.secret, `${a.projectId}/test`],
      [live.secret, `${a.projectId}/live`],
      [b.secret, `${b.projectId}/test`],
    ]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("random and mutated requests: never a 500 or a hang, always the spec's JSON error, no event from a refusal", async () => {
    const statuses = new Map<number, number>();
    let cases = 0;

    const property = fc.asyncProperty(
      anyBody,
      contentType,
      credentialHeaders(keys),
      idempotencyKey,
      extraHeaders,
      fc.boolean(),
      async (body, type, credentials, idempotency, extra, chunked) => {
        cases++;
        const headers: [string, string][] = [...credentials];
        if (type !== undefined) headers.push(["content-type", headerValue(type)]);
        if (idempotency !== undefined) headers.push(["idempotency-key", headerValue(idempotency)]);
        for (const [name, value] of extra) headers.push([name, headerValue(value)]);
        const request: RawRequest = { headers, body, chunked: chunked && body.length > 0 };

        const before = await countEvents(server);
        const response = await rawRequest(server.port, request, REQUEST_TIMEOUT_MS);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const after = await countEvents(server);
        const grown = [...after].filter(([scope, count]) => count !== (before.get(scope) ?? 0));

        expect(response.status, response.body).not.toBe(500);
        if (response.status === 201 || response.status === 200) {
          const json = JSON.parse(response.body) as Record<string, unknown>;
          expect(json.eventId).toMatch(UUID);
          expect(Number.isNaN(Date.parse(json.receivedAt as string))).toBe(false);
        } else {
          expectSpecError(response);
        }
        if (response.status === 200) {
          expect(idempotency, "a replay needs an Idempotency-Key").toBeDefined();
        }
        if (response.status === 201) {
          // Exactly one new row, in the scope of a key this request carried.
          expect(grown).toHaveLength(1);
          const [scope, count] = grown[0] ?? ["", 0];
          expect(count).toBe((before.get(scope) ?? 0) + 1);
          const carried = [...scopes]
            .filter(([secret]) => headers.some(([, value]) => value.includes(secret)))
            .map(([, keyScope]) => keyScope);
          expect(carried).toContain(scope);
        } else {
          expect(grown, `status ${response.status} left rows behind`).toEqual([]);
        }
      },
    );

    const details = await fc.check(property, {
      numRuns: RUNS,
      ...(SEED === undefined ? {} : { seed: SEED }),
      plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS)],
    });
    const histogram = Object.fromEntries([...statuses].sort(([x], [y]) => x - y));
    console.log(
      `fuzz: ${details.numRuns} cases run (${cases} requests with shrinking), seed ${details.seed}, ` +
        `statuses ${JSON.stringify(histogram)}`,
    );
    if (details.failed) throw new Error(fc.defaultReportMessage(details) ?? "property failed");
    expect(details.numRuns).toBeGreaterThanOrEqual(Math.min(RUNS, 100));
    // Both sides of the contract were exercised.
    expect(statuses.get(201) ?? 0).toBeGreaterThan(0);
    expect([...statuses.keys()].filter((status) => status >= 400).length).toBeGreaterThan(3);

    // The server is still well: no prototype polluted, and a valid event is created.
    expect(Object.keys(Object.prototype)).toEqual([]);
    const healthy = await postEvent(server, validEvent(), bearer(keys.a));
    expect(healthy.status).toBe(201);
  }, 120_000);
});
