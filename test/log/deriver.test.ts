/**
 * The integrator's derivation in the worker thread (log/deriver.ts, derivation-worker.ts)
 * gives byte for byte what it gives on the requests' thread: the opened payload and salt,
 * every blind index and search token, and the leaf. A log whose rows cannot be opened fails
 * alone in both. A worker that cannot start leaves derivation on the requests' thread.
 */
import { randomBytes, randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { derivationWorker } from "../../src/app.js";
import { type EventPlaintext, sealEvent } from "../../src/crypto/event-cipher.js";
import type { ProjectKeys } from "../../src/crypto/keyring.js";
import { encodeHtml } from "../../src/ingest/html-encoding.js";
import { listedEventLeaf } from "../../src/listed-event-leaf.js";
import {
  type DerivationKeys,
  type DerivationRequest,
  type DerivedEvent,
  type DerivedLog,
  deriveLogs,
} from "../../src/log/derivation.js";
import { createDeriver, type Deriver } from "../../src/log/deriver.js";

const logger = pino({ level: "silent" });
const leafOf = listedEventLeaf();

/** The events of a log's result (fails the test on an error). */
function eventsOf(log: DerivedLog | undefined): DerivedEvent[] {
  if (log === undefined || "error" in log) throw new Error(`no events: ${JSON.stringify(log)}`);
  return log.events;
}
const deriversToClose: Deriver[] = [];

afterAll(async () => {
  for (const deriver of deriversToClose) await deriver.close();
});

/** A deriver with the service's worker and leaf, closed after the tests. */
function workerDeriver(minEventsForWorker: number): Deriver {
  const deriver = createDeriver({ logger, leafOf, worker: derivationWorker(), minEventsForWorker });
  deriversToClose.push(deriver);
  return deriver;
}

function keysOf(projectId: string, keys: DerivationKeys, currentVersion: number): ProjectKeys {
  return {
    projectId,
    currentVersion,
    indexKey: keys.indexKey,
    async dataKey(version) {
      const key = keys.dataKeys.get(version);
      if (!key) throw new Error("no key");
      return key;
    },
  };
}

/** The texts each event of `logRequest` was sealed from, by event id. */
const plaintexts = new Map<string, EventPlaintext | undefined>();

/** `request` with every row's content given as the plaintext it was sealed from. */
function fromPlaintexts(request: DerivationRequest): DerivationRequest {
  return {
    ...request,
    rows: request.rows.map((row) => {
      const plaintext = plaintexts.get(row.eventId);
      if (plaintext === undefined) throw new Error("no plaintext kept");
      return { ...row, payload: undefined, context: null, plaintext };
    }),
  };
}

/** A log of `n` sealed events, under two data key versions, some with context. */
async function logRequest(n: number, firstIndex: bigint): Promise<DerivationRequest> {
  const projectId = randomUUID();
  const environment = "live";
  const keys: DerivationKeys = {
    indexKey: randomBytes(32),
    dataKeys: new Map([
      [1, randomBytes(32)],
      [2, randomBytes(32)],
    ]),
  };
  const rows: DerivationRequest["rows"] = [];
  for (let i = 0; i < n; i++) {
    const eventId = randomUUID();
    const version = (i % 2) + 1;
    const sealed = await sealEvent(
      keysOf(projectId, keys, version),
      { projectId, environment, eventId },
      {
        actionKey: `doc.${i % 3 === 0 ? "created" : "updated"}`,
        ...(i % 4 === 0 ? { action: "legacy action" } : {}),
        entityType: "document",
        entityId: encodeHtml(`doc <${i}> & co`),
        actorType: "user",
        actorId: `user_${i % 5}`,
        ...(i % 3 === 1 ? { tenantId: `tenant ${i % 2}`, actorDisplay: "Zoë O'Brien" } : {}),
        changes: [{ op: "set", path: "title", before: "a", after: `b ${i}` }],
      },
      i % 2 === 0 ? { ip: "10.0.0.1", nested: { n: i, list: [1, "two", null] } } : undefined,
    );
    plaintexts.set(eventId, sealed.plaintext);
    rows.push({
      eventId,
      keyVersion: sealed.keyVersion,
      payload: sealed.payload,
      context: sealed.context ?? null,
      plaintext: undefined,
      occurredMicros: 1_700_000_000_123_456n + BigInt(i),
      receivedAt: new Date(1_700_000_001_000 + i),
    });
  }
  return { projectId, environment, firstIndex, keys, rows };
}

describe("derivation in the worker thread", () => {
  it("gives exactly what derivation on the requests' thread gives", async () => {
    const requests = [await logRequest(150, 0n), await logRequest(7, 1_000n)];
    const here = await deriveLogs(requests, leafOf);
    const deriver = workerDeriver(0);
    const there = await deriver.derive(requests);
    expect(deriver.workerPasses).toBe(1);
    expect(there).toHaveLength(2);
    for (const log of there) {
      expect("events" in log && log.events.every((event) => event.leaf?.length === 65)).toBe(true);
    }
    // The same bytes; the payloads stay in the worker, which derived the leaves (the only
    // thing the integrator's stages would read them for).
    const withoutPayloads = here.map((log) =>
      "error" in log
        ? log
        : { events: log.events.map((event) => ({ ...event, payload: undefined })) },
    );
    expect(there).toEqual(withoutPayloads);
    // Buffers on this side, as the integrator's writes expect.
    const first = eventsOf(there[0])[0];
    expect(Buffer.isBuffer(first?.salt)).toBe(true);
    expect(Buffer.isBuffer(first?.indexes.actorIdx)).toBe(true);
    expect(first?.indexes.searchTokenCount).toBeGreaterThan(10);
    expect(first?.indexes.searchTokenText.split(",")).toHaveLength(
      first?.indexes.searchTokenCount ?? -1,
    );
  });

  it("derives from the plaintexts an instance sealed exactly what it derives from the ciphertexts", async () => {
    const sealed = [await logRequest(120, 0n), await logRequest(9, 500n)];
    // One log wholly from plaintexts, one mixed (another instance's rows are read sealed).
    const mixed = fromPlaintexts(sealed[1] as DerivationRequest);
    mixed.rows = mixed.rows.map((row, i) => (i % 2 === 0 ? (sealed[1]?.rows[i] ?? row) : row));
    const plain = [fromPlaintexts(sealed[0] as DerivationRequest), mixed];
    expect(plain[0]?.rows.every((row) => row.payload === undefined)).toBe(true);
    const here = await deriveLogs(sealed, leafOf);
    expect(await deriveLogs(plain, leafOf)).toEqual(here);
    expect(await deriveLogs(plain, undefined)).toEqual(await deriveLogs(sealed, undefined));
    const there = await workerDeriver(0).derive(plain);
    expect(there).toEqual(await workerDeriver(0).derive(sealed));
    expect(eventsOf(there[0]).every((event) => event.leaf?.length === 65)).toBe(true);
  });

  it("sends the payloads back when it derives no leaves (the tree stage then renders them)", async () => {
    const requests = [await logRequest(40, 0n)];
    const deriver = createDeriver({ logger, worker: derivationWorker(), minEventsForWorker: 0 });
    deriversToClose.push(deriver);
    const there = await deriver.derive(requests);
    expect(deriver.workerPasses).toBe(1);
    expect(there).toEqual(await deriveLogs(requests, undefined));
    expect(eventsOf(there[0]).every((event) => event.payload !== undefined)).toBe(true);
    expect(eventsOf(there[0]).every((event) => event.leaf === undefined)).toBe(true);
  });

  it("fails a log whose row does not open, and only that log", async () => {
    const good = await logRequest(40, 0n);
    const bad = await logRequest(40, 0n);
    const row = bad.rows[17];
    if (!row) throw new Error("no row");
    const payload = Uint8Array.from(row.payload ?? []);
    payload[payload.length - 1] = (payload.at(-1) ?? 0) ^ 1;
    row.payload = payload;
    const deriver = workerDeriver(0);
    for (const results of [
      await deriveLogs([good, bad], leafOf),
      await deriver.derive([good, bad]),
    ]) {
      expect(eventsOf(results[0])).toHaveLength(40);
      expect(results[1]).toEqual({ error: expect.any(String) });
    }
  });

  it("stays on the requests' thread when the worker cannot start", async () => {
    const deriver = createDeriver({
      logger,
      worker: { script: "throw new Error('no worker here')", options: { eval: true } },
      minEventsForWorker: 0,
    });
    deriversToClose.push(deriver);
    const request = await logRequest(3, 0n);
    // The pass that met the broken worker fails (the integrator retries it) ...
    await expect(deriver.derive([request])).rejects.toThrow(/no worker here/);
    // ... and every later one is derived here.
    const results = await deriver.derive([request]);
    expect(results).toEqual(await deriveLogs([request], undefined));
    expect(deriver.workerPasses).toBe(1);
  });

  it("fails the passes a dying worker held, and starts a new one for the next", async () => {
    // A stand-in worker: answers its first message (every log failed), then exits.
    const script = `
      const { parentPort } = require("node:worker_threads");
      let seen = 0;
      parentPort.on("message", (message) => {
        if (seen++ > 0) process.exit(7);
        parentPort.postMessage({ id: message.id, results: message.requests.map(() => ({ error: "first" })) });
      });`;
    const deriver = createDeriver({
      logger,
      worker: { script, options: { eval: true } },
      minEventsForWorker: 0,
    });
    deriversToClose.push(deriver);
    const request = await logRequest(2, 0n);
    expect(await deriver.derive([request])).toEqual([{ error: "first" }]);
    await expect(deriver.derive([request])).rejects.toThrow(/exited with code 7/);
    // A new worker, not derivation on this thread: the old one had worked.
    expect(await deriver.derive([request])).toEqual([{ error: "first" }]);
    expect(deriver.workerPasses).toBe(3);
  });

  it("answers the indexes first and the leaves after, the same as at once, in the worker and here", async () => {
    const requests = [await logRequest(60, 0n), await logRequest(5, 300n)];
    const whole = await deriveLogs(requests, leafOf);
    for (const deriver of [workerDeriver(0), workerDeriver(1_000)]) {
      const staged = await deriver.deriveStaged(requests);
      // The indexes are there; the leaves not yet (they come while the pass writes).
      const events = staged.logs.flatMap(eventsOf);
      expect(events.every((event) => event.leaf === undefined)).toBe(true);
      expect(events.map((event) => event.indexes)).toEqual(
        whole.flatMap(eventsOf).map((event) => event.indexes),
      );
      expect(await staged.leaves).toEqual(new Map());
      expect(staged.logs.flatMap(eventsOf).map((event) => event.leaf)).toEqual(
        whole.flatMap(eventsOf).map((event) => event.leaf),
      );
    }
  });

  it("names a log whose leaves fail, its indexes answered, the others' leaves derived", async () => {
    const good = await logRequest(4, 0n);
    const bad = await logRequest(4, 0n);
    const badIds = new Set(bad.rows.map((row) => row.eventId));
    const deriver = createDeriver({
      logger,
      leafOf: async (event) => {
        if (badIds.has(event.eventId)) throw new Error("no leaf for this one");
        return leafOf(event);
      },
    });
    const staged = await deriver.deriveStaged([good, bad]);
    expect(staged.logs.map((log) => eventsOf(log).length)).toEqual([4, 4]);
    expect(await staged.leaves).toEqual(new Map([[1, "no leaf for this one"]]));
    expect(eventsOf(staged.logs[0]).every((event) => event.leaf?.length === 65)).toBe(true);
    // Derived at once, the log is failed as a whole.
    const results = await deriver.derive([good, bad]);
    expect(eventsOf(results[0])).toHaveLength(4);
    expect(results[1]).toEqual({ error: "no leaf for this one" });
  });

  it("indexes a log whose context does not open, and fails its leaves alone, in the worker", async () => {
    const good = await logRequest(40, 0n);
    const bad = await logRequest(40, 0n);
    const row = bad.rows[18];
    if (!row?.context) throw new Error("no row with a context");
    const context = Uint8Array.from(row.context);
    context[context.length - 1] = (context.at(-1) ?? 0) ^ 1;
    row.context = context;
    const staged = await workerDeriver(0).deriveStaged([good, bad]);
    expect(staged.logs.map((log) => eventsOf(log).length)).toEqual([40, 40]);
    const failures = await staged.leaves;
    expect([...failures.keys()]).toEqual([1]);
    expect(eventsOf(staged.logs[0]).every((event) => event.leaf?.length === 65)).toBe(true);
  });

  it("fails the leaves of a pass whose worker died after answering its indexes", async () => {
    // A stand-in worker: answers the indexes (no log), then exits before the leaves.
    const script = `
      const { parentPort } = require("node:worker_threads");
      parentPort.on("message", (message) => {
        parentPort.postMessage({ id: message.id, results: message.requests.map(() => ({ error: "none" })) });
        setTimeout(() => process.exit(9), 20);
      });`;
    const deriver = createDeriver({
      logger,
      leafOf,
      worker: { script, options: { eval: true } },
      minEventsForWorker: 0,
    });
    deriversToClose.push(deriver);
    const staged = await deriver.deriveStaged([await logRequest(2, 0n)]);
    expect(staged.logs).toEqual([{ error: "none" }]);
    await expect(staged.leaves).rejects.toThrow(/exited with code 9/);
  });

  it("leaves small passes on the requests' thread", async () => {
    const deriver = workerDeriver(32);
    const results = await deriver.derive([await logRequest(31, 0n)]);
    expect(eventsOf(results[0])).toHaveLength(31);
    expect(deriver.workerPasses).toBe(0);
  });
});
