/**
 * Values at the edges of what can be stored and read back exactly, through real HTTP:
 * - occurredAt (and the list's from/to) between years 0001 and 9999 in UTC, the range
 *   that PostgreSQL and the answers' RFC 3339 form both hold: inside it an event is
 *   stored and listed with the same instant (years below 100 included, which V8's
 *   loose date parsing would turn into 19xx/20xx); outside it, 422 (or 400 on the list)
 *   rather than a database error;
 * - numbers in context, before and after beyond the range of a double (`1e400`), which
 *   JSON.parse turns into Infinity and JSON writes as null: 422 rather than a changed
 *   record; over Connect and gRPC (Infinity or NaN in a binary google.protobuf.Value),
 *   InvalidArgument with the same message rather than an internal error.
 */

import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { ListValueSchema, StructSchema, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeSchema, EventSchema } from "../../gen/audit/v1/event_pb.js";
import { IngestService } from "../../gen/audit/v1/ingest_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { fromBase64 } from "../../src/tlog/bytes.js";
import { listedEventLeaf } from "../../src/tlog/leaf.js";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { bearer, listEvents, listedEvents } from "../events/events-client.js";
import { exportEvents, ndjson } from "../events/log-streams-client.js";
import { rpcClient, rpcFailure } from "../support/rpc.js";
import {
  type ProvisionedKey,
  postEvent,
  startTestServer,
  type TestServer,
  validEvent,
} from "../support/test-server.js";

let server: TestServer;
let key: ProvisionedKey;

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
  key = await server.provision();
});

afterAll(async () => {
  await server?.close();
});

const post = (body: unknown) => postEvent(server, body, bearer(key.secret));

describe("occurredAt", () => {
  it.each([
    ["0000-06-15T12:00:00Z"],
    ["0001-01-01T00:00:00+01:00"],
    ["0000-12-31T23:59:59.999Z"],
    ["9999-12-31T23:59:59-01:00"],
    ["9999-12-31T23:30:00-00:31"],
  ])("%s, outside years 0001 to 9999 in UTC, is refused with 422", async (occurredAt) => {
    const response = await post(validEvent({ actorId: "out-of-range", occurredAt }));
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      error: "Validation failed",
      details: [{ path: ["occurredAt"], message: "Invalid datetime", code: "invalid_string" }],
    });
  });

  it("is stored and listed as sent from year 0001 to 9999, in order", async () => {
    // In ascending order: listed newest first, it comes back reversed.
    const sent = [
      ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"],
      ["0001-06-15T12:00:00+00:00", "0001-06-15T12:00:00.000Z"],
      ["0049-06-15T12:00:00Z", "0049-06-15T12:00:00.000Z"],
      ["0050-06-15T12:00:00Z", "0050-06-15T12:00:00.000Z"],
      ["0099-12-31T23:59:59.5Z", "0099-12-31T23:59:59.500Z"],
      ["1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"],
      ["9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59.000Z"],
      ["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"],
    ] as const;
    for (const [occurredAt] of sent) {
      const response = await post(validEvent({ actorId: "edges", occurredAt }));
      expect(response.status, occurredAt).toBe(201);
    }
    const listed = await listedEvents(server, bearer(key.secret), { actorId: "edges" });
    expect(listed.map((event) => event.occurredAt)).toEqual(
      sent.map(([, stored]) => stored).reverse(),
    );

    const firstCentury = await listedEvents(server, bearer(key.secret), {
      actorId: "edges",
      from: "0001-01-01T00:00:00Z",
      to: "0099-12-31T23:59:59Z",
    });
    expect(firstCentury.map((event) => event.occurredAt)).toEqual([
      "0050-06-15T12:00:00.000Z",
      "0049-06-15T12:00:00.000Z",
      "0001-06-15T12:00:00.000Z",
      "0001-01-01T00:00:00.000Z",
    ]);
  });

  it.each([
    ["from", "0000-01-01T00:00:00Z"],
    ["to", "9999-12-31T23:59:59-01:00"],
  ])("List Events refuses %s=%s with 400", async (name, value) => {
    const response = await listEvents(server, bearer(key.secret), { [name]: value });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: `${name} must be an ISO 8601 date-time with a time zone, like 2024-05-01T00:00:00Z, between years 0001 and 9999 in UTC`,
    });
  });
});

describe("numbers in context, before and after", () => {
  it.each([
    ['{"context":{"n":1e400}}', ["context", "n"]],
    ['{"context":{"list":[1,-1e309]}}', ["context", "list", 1]],
    ['{"changes":[{"op":"set","path":"p","before":1e999,"after":1}]}', ["changes", 0, "before"]],
    [
      '{"changes":[{"op":"set","path":"p","before":1,"after":{"x":[-1e400]}}]}',
      ["changes", 0, "after", "x", 0],
    ],
  ])("%s beyond the range of a double is refused with 422", async (fields, path) => {
    const body = `${JSON.stringify(validEvent({ actorId: "numbers" })).slice(0, -1)},${fields.slice(1)}`;
    const response = await post(body);
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      error: "Validation failed",
      details: [
        {
          path,
          message: "Number out of range: it must fit in a 64-bit floating-point number",
          code: "custom",
        },
      ],
    });
    const listed = await listedEvents(server, bearer(key.secret), { actorId: "numbers" });
    expect(listed).toEqual([]);
  });

  it("keeps numbers within that range as JSON.parse reads them", async () => {
    const body = `${JSON.stringify(validEvent({ actorId: "in-range" })).slice(0, -1)},"context":{"max":1.7976931348623157e308,"tiny":5e-324,"neg":-0.5,"big":123456789012345678901234567890}}`;
    expect((await post(body)).status).toBe(201);
    const [event] = await listedEvents(server, bearer(key.secret), { actorId: "in-range" });
    expect(event?.context).toEqual({
      max: 1.7976931348623157e308,
      tiny: 5e-324,
      neg: -0.5,
      big: 1.2345678901234568e29,
    });
  });
});

describe("numbers beyond a double over Connect and gRPC", () => {
  const protocols = { "Connect (binary)": "connect-binary", gRPC: "grpc" } as const;
  it.each(Object.keys(protocols) as (keyof typeof protocols)[])(
    "%s: Infinity and NaN in context are InvalidArgument, nothing stored",
    async (name) => {
      const client = rpcClient(IngestService, server.url, protocols[name]);
      const headers = bearer(key.secret);
      const actorId = `rpc-numbers-${name}`;
      for (const fields of [
        // (The client cannot encode them in a change's before or after.)
        { context: { n: Number.POSITIVE_INFINITY } },
        { context: { n: Number.NaN } },
      ]) {
        const error = await rpcFailure(
          client.createEvent(validEvent({ actorId, ...fields }), { headers }),
        );
        expect(error?.code, String(error)).toBe(Code.InvalidArgument);
        expect(error?.rawMessage).toBe("Validation failed");
        const [badRequest] = error?.findDetails(BadRequestSchema) ?? [];
        expect(badRequest?.fieldViolations).toEqual([
          expect.objectContaining({
            field: "context.n",
            description: "Number out of range: it must fit in a 64-bit floating-point number",
            reason: "custom",
          }),
        ]);
      }
      expect(await listedEvents(server, bearer(key.secret), { actorId })).toEqual([]);
    },
  );

  it.each(Object.keys(protocols) as (keyof typeof protocols)[])(
    "%s: a batch stores its valid events and refuses, as its own item, one with NaN or a Value without a kind",
    async (name) => {
      const client = rpcClient(IngestService, server.url, protocols[name]);
      const headers = bearer(key.secret);
      const actorId = `rpc-batch-numbers-${name}`;
      const kindless = create(EventSchema, {
        ...(fromJson(EventSchema, validEvent({ actorId }) as never) as object),
        changes: [
          create(ChangeSchema, {
            op: "set",
            path: "p",
            before: create(ValueSchema),
            after: create(ValueSchema, { kind: { case: "numberValue", value: 1 } }),
          }),
        ],
      });
      const reply = await client.createEvents(
        {
          events: [
            validEvent({ actorId, context: { n: Number.NaN } }),
            validEvent({ actorId }),
            kindless,
          ] as never,
        },
        { headers },
      );
      const results = reply.results.map((result) => ({
        stored: result.eventId !== undefined,
        details: result.details.map((issue) => ({
          path: toJson(ListValueSchema, issue.path as never),
          message: issue.message,
        })),
      }));
      expect(results).toEqual([
        {
          stored: false,
          details: [
            {
              path: [0, "context", "n"],
              message: "Number out of range: it must fit in a 64-bit floating-point number",
            },
          ],
        },
        { stored: true, details: [] },
        { stored: false, details: [{ path: [2, "changes", 0, "before"], message: "Required" }] },
      ]);
      expect(await listedEvents(server, bearer(key.secret), { actorId })).toHaveLength(1);
    },
  );
});

describe("a google.protobuf.Value with no kind inside before or after", () => {
  const protocols = { "Connect (binary)": "connect-binary", gRPC: "grpc" } as const;
  const kindless = () => create(ValueSchema);
  const number = (value: number) => create(ValueSchema, { kind: { case: "numberValue", value } });
  it.each(Object.keys(protocols) as (keyof typeof protocols)[])(
    "%s: refused with its path, in a list and in a struct (it was stored as null, or dropped)",
    async (name) => {
      const client = rpcClient(IngestService, server.url, protocols[name]);
      const headers = bearer(key.secret);
      const actorId = `rpc-kindless-${name}`;
      const cases: [Value, (string | number)[]][] = [
        [
          create(ValueSchema, {
            kind: {
              case: "listValue",
              value: create(ListValueSchema, { values: [kindless(), number(1)] }),
            },
          }),
          ["changes", 0, "after", 0],
        ],
        [
          create(ValueSchema, {
            kind: {
              case: "structValue",
              value: create(StructSchema, { fields: { x: kindless(), y: number(2) } }),
            },
          }),
          ["changes", 0, "after", "x"],
        ],
      ];
      for (const [after, path] of cases) {
        const event = create(EventSchema, {
          ...(fromJson(EventSchema, validEvent({ actorId }) as never) as object),
          changes: [create(ChangeSchema, { op: "set", path: "p", before: number(0), after })],
        });
        const error = await rpcFailure(client.createEvent(event, { headers }));
        expect(error?.code, String(error)).toBe(Code.InvalidArgument);
        const [badRequest] = error?.findDetails(BadRequestSchema) ?? [];
        expect(badRequest?.fieldViolations).toEqual([
          expect.objectContaining({
            field: path
              .map((part, i) =>
                typeof part === "number" ? `[${part}]` : i === 0 ? part : `.${part}`,
              )
              .join(""),
            description:
              "Value has no kind set: a google.protobuf.Value holds null, a number, a string, a bool, a struct or a list",
            reason: "invalid_type",
          }),
        ]);
      }
      expect(await listedEvents(server, bearer(key.secret), { actorId })).toEqual([]);
    },
  );
});

describe("empty strings", () => {
  // The spec sets only maximum lengths on entityType, entityId and actorId, so "" is a
  // value (present, as "required" asks) and is read back as sent. (Over RPC these are
  // proto3 strings, which read "" whether empty or left out.)
  it('entityType, entityId and actorId sent as "" are listed as "" over REST', async () => {
    const tenantId = `empty-${Date.now()}`;
    const sent = validEvent({
      entityType: "",
      entityId: "",
      actorId: "",
      tenantId,
      changes: [{ op: "set", path: "", before: "", after: "" }],
    });
    expect((await post(sent)).status).toBe(201);

    const [listed] = await listedEvents(server, bearer(key.secret), { tenantId });
    expect(listed).toMatchObject({
      entityType: "",
      entityId: "",
      actorId: "",
      changes: [{ op: "set", path: "", before: "", after: "" }],
    });

    // The export writes the list's object, "" included: the leaf the log signed is the
    // one recomputed from the exported line (audit verify reads exports).
    const exported = ndjson((await exportEvents(server, bearer(key.secret), { tenantId })).text);
    expect(exported).toEqual([listed]);
    const line = exported[0] as Record<string, unknown>;
    let proof: { leaf?: string } = {};
    for (const deadline = Date.now() + 30_000; proof.leaf === undefined; ) {
      const response = await fetch(
        `${server.url}/api/log/proof/inclusion?eventId=${String(line.eventId)}`,
        { headers: bearer(key.secret) },
      );
      if (response.status === 200) proof = (await response.json()) as { leaf: string };
      else if (Date.now() > deadline) throw new Error(`no proof: ${await response.text()}`);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const recomputed = await listedEventLeaf(createNodeLogCrypto(), line);
    expect(Buffer.from(recomputed.leaf).toString("base64")).toBe(proof.leaf);
    expect(fromBase64(proof.leaf ?? "")).toHaveLength(65);
  });
});

describe("__proto__ keys over Connect and gRPC", () => {
  // REST refuses them (test/security/hostile-input.test.ts); over RPC the protobuf runtime
  // used to turn the key into a map object's prototype while decoding, and the event was
  // stored without it (transport/proto-key.ts).
  const PROTO = "Key __proto__ is not allowed: it cannot be read back";

  it("Connect JSON: a __proto__ key in context or before is InvalidArgument, nothing stored", async () => {
    for (const [actorId, extra] of [
      ["rpc-proto-context", '"context":{"__proto__":{"polluted":1},"a":1}'],
      [
        "rpc-proto-before",
        '"changes":[{"op":"set","path":"x","before":{"__proto__":5,"b":2},"after":null}]',
      ],
    ] as const) {
      const response = await fetch(`${server.url}/audit.v1.IngestService/CreateEvent`, {
        method: "POST",
        headers: { ...bearer(key.secret), "content-type": "application/json" },
        body: `{"actionKey":"a.b","entityType":"e","entityId":"e","actorId":"${actorId}",${extra}}`,
      });
      const body = (await response.json()) as { code?: string; message?: string };
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(body).toMatchObject({ code: "invalid_argument", message: "Validation failed" });
      expect(JSON.stringify(body)).toContain("__proto__");
      expect(await listedEvents(server, bearer(key.secret), { actorId })).toEqual([]);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  const protocols = { "Connect (binary)": "connect-binary", gRPC: "grpc" } as const;
  it.each(Object.keys(protocols) as (keyof typeof protocols)[])(
    "%s: a __proto__ key in context is InvalidArgument naming it, nothing stored",
    async (name) => {
      const client = rpcClient(IngestService, server.url, protocols[name]);
      const actorId = `rpc-proto-${name}`;
      const context = JSON.parse('{"kept":1,"__proto__":{"x":1}}') as Record<string, unknown>;
      const error = await rpcFailure(
        client.createEvent(validEvent({ actorId, context }), { headers: bearer(key.secret) }),
      );
      expect(error?.code, String(error)).toBe(Code.InvalidArgument);
      const [badRequest] = error?.findDetails(BadRequestSchema) ?? [];
      expect(badRequest?.fieldViolations).toEqual([
        expect.objectContaining({ field: "context.__proto__", description: PROTO }),
      ]);
      expect(await listedEvents(server, bearer(key.secret), { actorId })).toEqual([]);
    },
  );
});
