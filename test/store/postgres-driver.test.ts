/**
 * The PostgreSQL driver when a transaction's connection is terminated while the
 * transaction waits on something other than a query (the integrator's pass awaits its
 * derivation worker): the transaction rejects with the connection's error, its next
 * query is not sent to postgres.js's closed connection, and nothing is left unhandled
 * (postgres.js 3.4.9 would write to its null socket inside an async function nobody
 * awaits: an unhandled rejection that ends the process, and fails this test run). The
 * pool serves the next transaction.
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/store/db.js";
import { createPostgresDb } from "../../src/store/postgres-driver.js";
import { createIsolatedStorage, type IsolatedStorage } from "../support/isolated-storage.js";
import { usingPostgres } from "../support/test-server.js";

describe.runIf(usingPostgres)("a transaction whose connection dies between two queries", () => {
  let storage: IsolatedStorage;
  let db: Db;
  let admin: postgres.Sql;

  beforeAll(async () => {
    storage = await createIsolatedStorage();
    const url = storage.env.DATABASE_URL ?? "";
    db = createPostgresDb({ url });
    admin = postgres(url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await db?.close();
    await admin?.end();
    await storage?.cleanup();
  });

  it("rejects, sends nothing more, and leaves the pool working", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      let resume: () => void = () => {};
      const paused = new Promise<void>((resolve) => {
        resume = resolve;
      });
      // Two transactions, both waiting between two queries: the first connection's loss
      // retires the pool (postgres-driver.ts `retire`), whose other connection is then
      // closed too, but not yet ended, when the second transaction goes on.
      const pids: Promise<number>[] = [];
      const reached: boolean[] = [];
      const outcomes = [0, 1].map((i) => {
        let pidSeen: (pid: number) => void = () => {};
        pids.push(
          new Promise<number>((resolve) => {
            pidSeen = resolve;
          }),
        );
        return db
          .transaction(async (tx) => {
            const [row] = await tx.query<{ pid: number }>("select pg_backend_pid() as pid");
            pidSeen(row?.pid ?? 0);
            await paused;
            reached[i] = true;
            // Over 1 KB, so postgres.js would write it at once rather than on an immediate.
            return tx.query("select length($1::text) as n", ["x".repeat(4_000)]);
          })
          .then(
            () => "committed",
            (error: { code?: string }) => error.code ?? "failed",
          );
      });
      for (const pid of await Promise.all(pids)) {
        await admin.unsafe("select pg_terminate_backend($1)", [pid]);
      }
      expect(await Promise.all(outcomes)).toEqual(["CONNECTION_CLOSED", "CONNECTION_CLOSED"]);
      resume();
      // The work went on to its next query, which was never sent.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(reached).toEqual([true, true]);
      expect(unhandled).toEqual([]);
      expect(await db.transaction((tx) => tx.query<{ one: number }>("select 1 as one"))).toEqual([
        { one: 1 },
      ]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
