/**
 * CORS as a browser meets it: the list endpoint, the export and follow streams (REST and
 * their server-streaming RPCs over Connect and gRPC-Web) answer preflights and carry
 * Access-Control-Allow-Origin (on errors too); event ingestion answers neither. Any
 * origin by default; only the configured ones with CORS_ORIGINS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../gen/audit/v1/events_pb.js";
import { type RpcProtocol, rpcClient, rpcFailure } from "../support/rpc.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";
import { bearer, createEvents, tokenFor } from "./events-client.js";

const APP = "https://app.example.com";

const preflight = (url: string, origin: string, headers = "authorization") =>
  fetch(url, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "GET",
      "access-control-request-headers": headers,
    },
  });

describe("CORS", () => {
  let open: TestServer;
  let restricted: TestServer;

  beforeAll(async () => {
    [open, restricted] = await Promise.all([
      startTestServer({ RATE_LIMIT_MAX: "1000000000" }),
      startTestServer({ CORS_ORIGINS: `${APP}, http://localhost:5173` }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([open?.close(), restricted?.close()]);
  });

  describe("by default (any origin)", () => {
    it("a preflight of GET /api/events is answered 204 with the allowed method and headers", async () => {
      const response = await preflight(
        `${open.url}/api/events`,
        "https://anywhere.example",
        "authorization, x-request-id",
      );
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-allow-methods")).toMatch(/\bGET\b/);
      const allowed = (response.headers.get("access-control-allow-headers") ?? "")
        .split(",")
        .map((name) => name.trim().toLowerCase());
      expect(allowed).toEqual(
        expect.arrayContaining(["authorization", "content-type", "x-request-id"]),
      );
      expect(response.headers.get("access-control-allow-credentials")).toBeNull();
      expect(await response.text()).toBe("");
    });

    it("a preflight with a query string is answered the same", async () => {
      const response = await preflight(`${open.url}/api/events?limit=5`, "https://a.example");
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    });

    it("the actual GET carries Access-Control-Allow-Origin and exposes x-request-id", async () => {
      const key = await open.provision();
      const token = await tokenFor(open, key.secret);
      const response = await fetch(`${open.url}/api/events`, {
        headers: { origin: "https://a.example", ...bearer(token) },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-expose-headers")).toMatch(/x-request-id/i);
      // A 503's Retry-After too, which is not a CORS-safelisted response header.
      expect(response.headers.get("access-control-expose-headers")).toMatch(/retry-after/i);
    });

    it("an error of the list endpoint carries it too, so the page can read the error", async () => {
      const response = await fetch(`${open.url}/api/events`, {
        headers: { origin: "https://a.example" },
      });
      expect(response.status).toBe(401);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    });

    it("a preflight of POST /api/ingest/event is not answered", async () => {
      const response = await fetch(`${open.url}/api/ingest/event`, {
        method: "OPTIONS",
        headers: {
          origin: "https://a.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      });
      expect(response.status).not.toBe(204);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(response.headers.get("access-control-allow-methods")).toBeNull();
    });

    it("POST /api/ingest/event from a page carries no Access-Control-Allow-Origin", async () => {
      const key = await open.provision();
      const response = await fetch(`${open.url}/api/ingest/event`, {
        method: "POST",
        headers: {
          origin: "https://a.example",
          "content-type": "application/json",
          ...bearer(key.secret),
        },
        body: JSON.stringify(validEvent()),
      });
      expect(response.status).toBe(201);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });

    it("the token endpoint (a backend's call, with an API key) answers no preflight", async () => {
      const response = await fetch(`${open.url}/api/tokens/frontend`, {
        method: "OPTIONS",
        headers: { origin: "https://a.example", "access-control-request-method": "POST" },
      });
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });
  });

  describe("with CORS_ORIGINS", () => {
    it.each([APP, "http://localhost:5173"])(
      "a listed origin (%s) is echoed back",
      async (origin) => {
        const response = await preflight(`${restricted.url}/api/events`, origin);
        expect(response.status).toBe(204);
        expect(response.headers.get("access-control-allow-origin")).toBe(origin);
        expect(response.headers.get("vary")).toMatch(/origin/i);
      },
    );

    it("another origin gets no Access-Control-Allow-Origin", async () => {
      const response = await preflight(`${restricted.url}/api/events`, "https://evil.example");
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      const actual = await fetch(`${restricted.url}/api/events`, {
        headers: { origin: "https://evil.example" },
      });
      expect(actual.headers.get("access-control-allow-origin")).toBeNull();
      expect(actual.headers.get("vary")).toMatch(/origin/i);
    });

    it("the actual GET from a listed origin carries it", async () => {
      const response = await fetch(`${restricted.url}/api/events`, { headers: { origin: APP } });
      expect(response.status).toBe(401);
      expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    });
  });

  describe("the server-streaming RPCs (ExportEvents, FollowEvents) over Connect and gRPC-Web", () => {
    const STREAMS = ["ExportEvents", "FollowEvents"] as const;
    const PROTOCOLS: readonly RpcProtocol[] = ["connect-json", "grpc-web"];
    const rpcPreflight = (url: string, origin: string) =>
      fetch(url, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers":
            "authorization, content-type, connect-protocol-version, x-grpc-web, x-user-agent",
        },
      });
    const headerNames = (value: string | null) =>
      (value ?? "").split(",").map((name) => name.trim().toLowerCase());

    /**
     * Calls a stream from `origin` with `token`, reads its first message, then cancels:
     * the response headers and the events of that message.
     */
    const firstMessage = async (
      server: TestServer,
      method: (typeof STREAMS)[number],
      protocol: RpcProtocol,
      origin: string,
      token: string,
    ) => {
      const client = rpcClient(EventService, server.url, protocol);
      const abort = new AbortController();
      let headers = new Headers();
      const options = {
        headers: { origin, ...bearer(token) },
        signal: abort.signal,
        onHeader: (received: Headers) => {
          headers = received;
        },
      };
      const stream =
        method === "ExportEvents"
          ? client.exportEvents({}, options)
          : client.followEvents({}, options);
      try {
        for await (const message of stream) {
          return { headers, eventIds: message.events.map((event) => event.eventId) };
        }
        throw new Error(`${method} ended without a message`);
      } finally {
        abort.abort();
      }
    };

    let openToken: string;
    let openEventId: string;
    let restrictedToken: string;
    beforeAll(async () => {
      const [openKey, restrictedKey] = await Promise.all([
        open.provision(),
        restricted.provision(),
      ]);
      [openEventId = ""] = await createEvents(open, openKey.secret, [validEvent()]);
      await createEvents(restricted, restrictedKey.secret, [validEvent()]);
      [openToken, restrictedToken] = await Promise.all([
        tokenFor(open, openKey.secret),
        tokenFor(restricted, restrictedKey.secret),
      ]);
    });

    it.each(STREAMS)(
      "a preflight of %s is answered 204 with the headers connect-web and gRPC-Web send",
      async (method) => {
        const response = await rpcPreflight(
          `${open.url}/audit.v1.EventService/${method}`,
          "https://anywhere.example",
        );
        expect(response.status).toBe(204);
        expect(response.headers.get("access-control-allow-origin")).toBe("*");
        expect(response.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
        expect(headerNames(response.headers.get("access-control-allow-headers"))).toEqual(
          expect.arrayContaining([
            "authorization",
            "content-type",
            "connect-protocol-version",
            "connect-timeout-ms",
            "x-grpc-web",
            "x-user-agent",
            "grpc-timeout",
          ]),
        );
        expect(response.headers.get("access-control-allow-credentials")).toBeNull();
      },
    );

    it.each(STREAMS.flatMap((method) => PROTOCOLS.map((protocol) => [method, protocol] as const)))(
      "%s over %s from another origin streams the events, with the protocol's headers exposed",
      async (method, protocol) => {
        const { headers, eventIds } = await firstMessage(
          open,
          method,
          protocol,
          "https://a.example",
          openToken,
        );
        expect(eventIds).toEqual([openEventId]);
        expect(headers.get("access-control-allow-origin")).toBe("*");
        expect(headerNames(headers.get("access-control-expose-headers"))).toEqual(
          expect.arrayContaining([
            "x-request-id",
            "retry-after",
            "grpc-status",
            "grpc-message",
            "grpc-status-details-bin",
            "x-export-from-index",
            "x-export-end-index",
          ]),
        );
      },
    );

    it.each(PROTOCOLS)(
      "a refusal of a stream over %s (bad token) carries Access-Control-Allow-Origin too",
      async (protocol) => {
        let headers = new Headers();
        const failure = await rpcFailure(
          (async () => {
            const stream = rpcClient(EventService, open.url, protocol).exportEvents(
              {},
              {
                headers: { origin: "https://a.example", ...bearer("not-a-key") },
                onHeader: (received) => {
                  headers = received;
                },
              },
            );
            for await (const _ of stream);
          })(),
        );
        expect(failure.rawMessage).toBe("Invalid API key format");
        expect(headers.get("access-control-allow-origin")).toBe("*");
      },
    );

    it("IngestEvents (a bidirectional stream, not for browsers) answers no preflight", async () => {
      const response = await rpcPreflight(
        `${open.url}/audit.v1.IngestService/IngestEvents`,
        "https://a.example",
      );
      expect(response.status).not.toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });

    it.each(STREAMS)("with CORS_ORIGINS, a preflight of %s echoes a listed origin", async (m) => {
      const response = await rpcPreflight(`${restricted.url}/audit.v1.EventService/${m}`, APP);
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe(APP);
      expect(response.headers.get("vary")).toMatch(/origin/i);
    });

    it.each(STREAMS)(
      "with CORS_ORIGINS, a preflight of %s from another origin gets none",
      async (method) => {
        const response = await rpcPreflight(
          `${restricted.url}/audit.v1.EventService/${method}`,
          "https://evil.example",
        );
        expect(response.headers.get("access-control-allow-origin")).toBeNull();
        expect(response.headers.get("access-control-allow-methods")).toBeNull();
      },
    );

    it.each(PROTOCOLS)(
      "with CORS_ORIGINS, a stream over %s carries the listed origin, and none for another",
      async (protocol) => {
        const listed = await firstMessage(
          restricted,
          "FollowEvents",
          protocol,
          APP,
          restrictedToken,
        );
        expect(listed.headers.get("access-control-allow-origin")).toBe(APP);
        expect(listed.headers.get("vary")).toMatch(/origin/i);
        const refused = await firstMessage(
          restricted,
          "ExportEvents",
          protocol,
          "https://evil.example",
          restrictedToken,
        );
        expect(refused.headers.get("access-control-allow-origin")).toBeNull();
        expect(refused.headers.get("access-control-expose-headers")).toBeNull();
      },
    );
  });

  describe("the REST streams' own headers", () => {
    it("the export exposes its file name and range; the stream allows Last-Event-ID", async () => {
      const key = await open.provision();
      const token = await tokenFor(open, key.secret);
      const exported = await fetch(`${open.url}/api/events/export`, {
        headers: { origin: "https://a.example", ...bearer(token) },
      });
      expect(exported.status).toBe(200);
      await exported.text();
      expect(exported.headers.get("access-control-allow-origin")).toBe("*");
      expect((exported.headers.get("access-control-expose-headers") ?? "").split(", ")).toEqual(
        expect.arrayContaining([
          "x-request-id",
          "content-disposition",
          "x-export-from-index",
          "x-export-end-index",
        ]),
      );
      const response = await preflight(
        `${open.url}/api/events/stream`,
        "https://a.example",
        "authorization, last-event-id",
      );
      expect(response.status).toBe(204);
      expect((response.headers.get("access-control-allow-headers") ?? "").split(", ")).toContain(
        "last-event-id",
      );
    });
  });
});
