/**
 * Storage of created events (spec 1.2, 5.7; issue 3 "Storage and encryption"): the raw
 * rows hold none of the event's strings, the context lives in its own table, and test
 * and live keys write apart.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "../../gen/audit/v1/admin_pb.js";
import { postEvent, startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** A string no ciphertext or index would contain by chance. */
const marker = (field: string) => `Zq${field}${randomBytes(6).toString("hex")}Xv`;

/** The ways a plaintext could show up in a row rendered as JSON text (bytea as hex). */
function forms(plain: string): string[] {
  const bytes = Buffer.from(plain, "utf8");
  return [plain.toLowerCase(), bytes.toString("hex"), bytes.toString("base64").toLowerCase()];
}

interface CreatedEvent {
  eventId: string;
  receivedAt: string;
}

describe("storage of created events", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const create = async (secret: string, body: unknown, extra: Record<string, string> = {}) => {
    const res = await postEvent(server, body, { ...bearer(secret), ...extra });
    expect(res.status).toBe(201);
    return res.body as unknown as CreatedEvent;
  };

  /** Every row of `table` for the project, each rendered whole as JSON text, lower-cased. */
  const rowsAsText = async (table: string, projectId: string): Promise<string[]> => {
    const rows = await server.app.db.query<{ row: string }>(
      `select row_to_json(t)::text as row from ${table} t where project_id = $1`,
      [projectId],
    );
    return rows.map((row) => row.row.toLowerCase());
  };

  it("the raw rows of events, event_contexts and idempotency_keys hold none of the event's strings", async () => {
    const key = await server.provision();
    const values = {
      actionKey: marker("ActionKey"),
      action: marker("Action"),
      actionDescription: marker("Description"),
      entityType: marker("EntityType"),
      entityId: marker("EntityId"),
      actorId: marker("ActorId"),
      actorDisplay: marker("ActorDisplay"),
      tenantId: marker("TenantId"),
      source: marker("Source"),
    };
    const hidden = {
      contextKey: marker("CtxKey"),
      contextValue: marker("CtxValue"),
      contextNested: marker("CtxNested"),
      changePath: marker("ChangePath"),
      changeBefore: marker("Before"),
      changeAfter: marker("After"),
      changeNested: marker("ChangeNested"),
      idempotencyKey: marker("Idem"),
    };
    const body = {
      ...values,
      actorType: "service",
      context: {
        [hidden.contextKey]: hidden.contextValue,
        nested: { deep: [hidden.contextNested] },
      },
      changes: [
        {
          op: "set",
          path: hidden.changePath,
          before: hidden.changeBefore,
          after: { value: hidden.changeAfter, list: [hidden.changeNested] },
          redacted: true,
        },
      ],
    };
    const created = await create(key.secret, body, { "idempotency-key": hidden.idempotencyKey });

    const rows = [
      ...(await rowsAsText("events", key.projectId)),
      ...(await rowsAsText("event_contexts", key.projectId)),
      ...(await rowsAsText("idempotency_keys", key.projectId)),
    ];
    expect(rows).toHaveLength(3);
    expect(rows[0]).toContain(created.eventId);

    const plaintexts = [...Object.values(values), ...Object.values(hidden)];
    const found = plaintexts.filter((plain) =>
      forms(plain).some((form) => rows.some((row) => row.includes(form))),
    );
    expect(found).toEqual([]);

    // Filter columns are keyed (blind) indexes, not plain hashes anyone could recompute.
    const digests = Object.values(values).map((plain) =>
      createHash("sha256").update(plain, "utf8").digest("hex"),
    );
    expect(digests.filter((digest) => rows.some((row) => row.includes(digest)))).toEqual([]);
  });

  it("the database holds no plaintext strings of the event in any table", async () => {
    const key = await server.provision();
    const actorId = marker("AnywhereActor");
    const contextValue = marker("AnywhereContext");
    await create(key.secret, validEvent({ actorId, context: { v: contextValue } }));

    const tables = await server.app.db.query<{ table_name: string }>(
      `select table_name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE'`,
    );
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(["events", "event_contexts", "idempotency_keys"]),
    );
    const leaks: string[] = [];
    for (const { table_name } of tables) {
      const rows = await server.app.db.query<{ row: string }>(
        `select row_to_json(t)::text as row from "${table_name}" t`,
      );
      for (const { row } of rows) {
        const text = row.toLowerCase();
        for (const plain of [actorId, contextValue]) {
          if (forms(plain).some((form) => text.includes(form)))
            leaks.push(`${table_name}: ${plain}`);
        }
      }
    }
    expect(leaks).toEqual([]);
  });

  it("the API key secret is not stored", async () => {
    const key = await server.provision();
    const rows = await server.app.db.query<{ row: string }>(
      "select row_to_json(k)::text as row from api_keys k where project_id = $1",
      [key.projectId],
    );
    expect(rows).toHaveLength(1);
    const text = rows[0]?.row ?? "";
    expect(text).not.toContain(key.secret);
    expect(text).not.toContain(Buffer.from(key.secret).toString("hex"));
  });

  it("the context is stored in event_contexts, apart from the event row", async () => {
    const key = await server.provision();
    const context = { blob: "c".repeat(8000), more: { n: 1 } };
    const serialized = Buffer.byteLength(JSON.stringify(context));
    const withContext = await create(key.secret, validEvent({ context }));
    const withoutContext = await create(key.secret, validEvent());

    const contexts = await server.app.db.query<{
      event_id: string;
      environment: string;
      size: number;
    }>(
      `select event_id, environment, octet_length(ciphertext)::int as size
         from event_contexts where project_id = $1`,
      [key.projectId],
    );
    expect(contexts.map((row) => row.event_id)).toEqual([withContext.eventId]);
    expect(contexts[0]?.environment).toBe("test");
    expect(contexts[0]?.size).toBeGreaterThanOrEqual(serialized);

    // The event rows are the same size with or without an 8 KB context: it is not in them.
    const events = await server.app.db.query<{ id: string; size: number }>(
      "select id, octet_length(payload)::int as size from events where project_id = $1",
      [key.projectId],
    );
    const sizeOf = (id: string) => events.find((row) => row.id === id)?.size;
    expect(events).toHaveLength(2);
    expect(sizeOf(withContext.eventId)).toBe(sizeOf(withoutContext.eventId));
    expect(sizeOf(withContext.eventId)).toBeLessThan(serialized);
  });

  it("an event without context writes no event_contexts row", async () => {
    const key = await server.provision();
    await create(key.secret, validEvent());
    const rows = await server.app.db.query<{ n: number }>(
      "select count(*)::int as n from event_contexts where project_id = $1",
      [key.projectId],
    );
    expect(rows[0]?.n).toBe(0);
  });

  it("test and live keys of one project write apart (environment column)", async () => {
    const testKey = await server.provision({ environment: Environment.TEST });
    const live = await server.admin.createApiKey({
      projectId: testKey.projectId,
      environment: Environment.LIVE,
    });
    expect(testKey.secret).toMatch(/^pk_test_/);
    expect(live.secret).toMatch(/^pk_live_/);
    const body = validEvent({ context: { k: "v" } });
    const fromTest = await create(testKey.secret, body, { "idempotency-key": "same-key" });
    const fromLive = await create(live.secret, body, { "idempotency-key": "same-key" });

    const environmentOf = async (table: string, idColumn: string) => {
      const rows = await server.app.db.query<{ id: string; environment: string }>(
        `select ${idColumn} as id, environment from ${table} where project_id = $1`,
        [testKey.projectId],
      );
      return Object.fromEntries(rows.map((row) => [row.id, row.environment]));
    };
    const expected = { [fromTest.eventId]: "test", [fromLive.eventId]: "live" };
    expect(await environmentOf("events", "id")).toEqual(expected);
    expect(await environmentOf("event_contexts", "event_id")).toEqual(expected);
    expect(await environmentOf("idempotency_keys", "event_id")).toEqual(expected);
  });

  it("the same event sent twice is encrypted differently (fresh nonce per event)", async () => {
    const key = await server.provision();
    const body = validEvent({ context: { same: "context" } });
    await create(key.secret, body);
    await create(key.secret, body);
    const rows = await server.app.db.query<{ payload: string; context: string }>(
      `select encode(e.payload, 'hex') as payload, encode(c.ciphertext, 'hex') as context
         from events e join event_contexts c
           on c.project_id = e.project_id and c.environment = e.environment and c.event_id = e.id
        where e.project_id = $1`,
      [key.projectId],
    );
    expect(rows).toHaveLength(2);
    expect(rows[0]?.payload).not.toBe(rows[1]?.payload);
    expect(rows[0]?.context).not.toBe(rows[1]?.context);
  });

  it("a typical event row stays whole (no TOAST row); an event over 8 KB is still stored and read back", async () => {
    const key = await server.provision();
    // `events` is partitioned (by retention period, then day): its rows are in the leaf
    // partitions, each with its own TOAST table.
    const toastRows = async () => {
      const toasts = await server.app.db.query<{ name: string }>(
        `select c.reltoastrelid::regclass::text as name
           from pg_partition_tree('events') t join pg_class c on c.oid = t.relid
          where t.isleaf and c.reltoastrelid <> 0`,
      );
      expect(toasts.length).toBeGreaterThan(0);
      let rows = 0;
      for (const { name } of toasts) {
        const [count] = await server.app.db.query<{ n: number }>(
          `select count(*)::int as n from ${name}`,
        );
        rows += Number(count?.n);
      }
      return rows;
    };
    const before = await toastRows();
    for (let i = 0; i < 5; i++) {
      await create(
        key.secret,
        validEvent({
          actionDescription: "Invoice amount and due date changed from the billing dashboard",
          actorDisplay: "Jane Cooper <jane.cooper@example.com>",
          context: { ip: "203.0.113.42", userAgent: "x".repeat(300), requestId: `req_${i}` },
          // Larger than the bench's event (the journal row holds no search tokens).
          changes: [
            { op: "set", path: "amount", before: 1250.5, after: 1399.99 },
            { op: "set", path: "notes", before: "n".repeat(400), after: "m".repeat(400) },
          ],
        }),
      );
    }
    expect(await toastRows()).toBe(before);

    const large = validEvent({
      changes: Array.from({ length: 4 }, (_, i) => ({
        op: "set",
        path: `field${i}`,
        before: "b".repeat(4_000),
        after: "a".repeat(4_000),
      })),
    });
    const created = await create(key.secret, large);
    // The count above sees TOAST rows when there are some: the sealed large event has them.
    expect(await toastRows()).toBeGreaterThan(before);
    const response = await fetch(`${server.url}/api/events?limit=1`, {
      headers: bearer(key.secret),
    });
    const page = (await response.json()) as {
      events: { eventId: string; changes: unknown[] }[];
    };
    expect(page.events[0]?.eventId).toBe(created.eventId);
    expect(page.events[0]?.changes).toHaveLength(4);
  });
});
