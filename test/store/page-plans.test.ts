/**
 * The reads of a page (the list's, and the export's and follow's in log-index order)
 * probe the stored rows by primary key, one index row at a time, whatever the planner
 * knows of the tables. As plain joins, a planner without statistics (PGlite runs no
 * autovacuum, so its tables are never analyzed; PostgreSQL right after a bulk load)
 * scanned every event of the log once per page, and joined it against the page's index
 * rows: 8 s for 500 events in a log of 66,000, a whole export of it 9 min 50 s
 * (outside audit, 2026-11-29). Checked on the plan the database executes (EXPLAIN
 * ANALYZE of the reader's own statement), not on a time: the rows read from `events`
 * and `event_contexts` are those of the page. (The app analyzes PGlite's tables a minute
 * after its start, store/auto-analyze.ts; this test reads its plans well before, while
 * the planner still knows nothing of them, which is the case the old joins failed.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/store/db.js";
import { createEventReader } from "../../src/store/event-reads.js";
import { createLogReader } from "../../src/store/log-reads.js";
import { bearer, listAll } from "../events/events-client.js";
import { startTestServer, type TestServer, validEvent } from "../support/test-server.js";

const EVENTS = 1_000;
const PAGE = 50;

interface PlanNode {
  "Relation Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  Plans?: PlanNode[];
}

/** Rows read from the relations whose name starts with `prefix`, over the whole plan. */
function rowsRead(node: PlanNode, prefix: string): number {
  const own = node["Relation Name"]?.startsWith(prefix)
    ? (node["Actual Rows"] ?? 0) * (node["Actual Loops"] ?? 1)
    : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, prefix), 0);
}

describe("a page's plan", () => {
  let server: TestServer;
  let projectId: string;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    const key = await server.provision();
    projectId = key.projectId;
    for (let sent = 0; sent < EVENTS; sent += 100) {
      const response = await fetch(`${server.url}/api/ingest/events`, {
        method: "POST",
        headers: { ...bearer(key.secret), "content-type": "application/json" },
        body: JSON.stringify({
          events: Array.from({ length: 100 }, (_, i) =>
            validEvent({ entityId: `e-${sent + i}`, context: { n: sent + i } }),
          ),
        }),
      });
      expect(response.status).toBe(201);
    }
    // Listed: integrated, every index row written.
    expect((await listAll(server, bearer(key.secret), { limit: 100 })).events).toHaveLength(EVENTS);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  /** The plans of the statements `read` runs, executed (EXPLAIN ANALYZE), instead of their rows. */
  async function plansOf(read: (db: Db) => Promise<unknown>): Promise<PlanNode[]> {
    const db = server.app.db;
    const plans: PlanNode[] = [];
    const explaining = {
      ...db,
      query: async (sql: string, params?: unknown[]) => {
        const [row] = await db.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
          `explain (analyze, format json) ${sql}`,
          params,
        );
        const plan = row?.["QUERY PLAN"]?.[0]?.Plan;
        if (plan) plans.push(plan);
        return [];
      },
    } as unknown as Db;
    await read(explaining);
    return plans;
  }

  it("of the export and follow streams reads the page's rows, not the log's", async () => {
    const [plan] = await plansOf((db) =>
      createLogReader(db).page({
        projectId,
        environment: "test",
        fromIndex: BigInt(EVENTS - PAGE),
        endIndex: BigInt(EVENTS),
        limit: PAGE,
        maxBytes: 2 * 1024 * 1024,
      }),
    );
    expect(plan).toBeDefined();
    expect(rowsRead(plan as PlanNode, "events")).toBe(PAGE);
    expect(rowsRead(plan as PlanNode, "event_contexts")).toBe(PAGE);
  });

  it("of the list reads the page's rows, not the log's", async () => {
    const [plan] = await plansOf((db) =>
      createEventReader(db).page({
        projectId,
        environment: "test",
        limit: PAGE,
        maxBytes: 2 * 1024 * 1024,
      }),
    );
    expect(plan).toBeDefined();
    // One row more than the page tells whether another page follows.
    expect(rowsRead(plan as PlanNode, "events")).toBe(PAGE + 1);
    expect(rowsRead(plan as PlanNode, "event_contexts")).toBe(PAGE + 1);
  });
});
