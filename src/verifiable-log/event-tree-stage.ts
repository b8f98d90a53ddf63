/**
 * The integrator's stage that grows each log's Merkle tree (tree-stage.ts) from the
 * journal's events: each event rendered as GET /api/events lists it (the renderer is the
 * API's own, passed in), with its context decrypted, so the leaf commits to exactly what a
 * reader will see. The integrator's derivation normally computes the leaves already
 * (createListedEventLeaf, log/deriver.ts); the stage renders those it did not. Events numbered before the tree existed are read back by log
 * index and decrypted the same way, a chunk at a time (tree-stage.ts), under the
 * integrator's lock of their log.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { contextOfPlaintext, openContext } from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import { type ListedEvent, openListedEvent } from "../events/reader-query.js";
import { millis } from "../log/derivation.js";
import type { IntegrationStage, SequencedBatch } from "../log/integrator.js";
import type { Queryable } from "../store/db.js";
import { lockLogs } from "../store/log-integration.js";
import type { LogCrypto } from "../tlog/crypto.js";
import {
  createTreeStage,
  EVENTS_PER_YIELD,
  type LeafSource,
  leafOfSource,
  type TreeStage,
  yieldToRequests,
} from "./tree-stage.js";
import type { LogAddress } from "./tree-store.js";

/** Options of createEventTreeStage. */
export interface EventTreeStageOptions {
  crypto: LogCrypto;
  keyring: Keyring;
  /** An event as GET /api/events renders it (its JSON object). */
  render(event: ListedEvent): Record<string, unknown>;
  /** Most events backfilled in one transaction (tree-stage.ts; default 5,000). */
  backfillChunk?: number;
}

/** A listed event as its leaf reads it (render: the API's JSON of it). */
function leafSource(
  listed: ListedEvent,
  render: (event: ListedEvent) => Record<string, unknown>,
): LeafSource {
  return {
    json: render(listed),
    logIndex: Number(listed.logIndex),
    eventId: listed.eventId,
    receivedAt: listed.receivedAt,
    salt: listed.salt,
  };
}

/**
 * The leaf of an event as GET /api/events lists it (`render`: the API's JSON of it): what
 * the integrator's derivation computes for each event, on the requests' thread or in its
 * worker (log/deriver.ts), and what this stage would compute from the same event.
 */
export function createListedEventLeaf(
  crypto: LogCrypto,
  render: (event: ListedEvent) => Record<string, unknown>,
): (event: ListedEvent) => Promise<Uint8Array> {
  return (event) => leafOfSource(crypto, leafSource(event, render));
}

interface BackfillRow {
  log_index: string;
  id: string;
  received_at: Date;
  occurred_us: string;
  key_version: number;
  payload: Uint8Array;
  context: Uint8Array | null;
}

/** The stage, for the integrator's `stages`; its `catchUp` backfills idle logs. */
export function createEventTreeStage(
  options: EventTreeStageOptions,
): IntegrationStage & TreeStage<SequencedBatch> {
  const { keyring, render } = options;
  return createTreeStage<SequencedBatch>({
    crypto: options.crypto,
    ...(options.backfillChunk === undefined ? {} : { backfillChunk: options.backfillChunk }),
    async lockLog(tx, lockId) {
      const [log] = await lockLogs(tx, [lockId]);
      return log === undefined ? undefined : Number(log.size);
    },
    computedLeaves(batch) {
      const leaves: Uint8Array[] = [];
      for (const event of batch.events) {
        if (event.leaf === undefined) return undefined;
        leaves.push(event.leaf);
      }
      return leaves;
    },
    async render(tx, batch) {
      const keys = await keyring.forProject(batch.projectId, tx);
      const sources: LeafSource[] = [];
      for (const [i, event] of batch.events.entries()) {
        if (i > 0 && i % EVENTS_PER_YIELD === 0) await yieldToRequests();
        if (event.payload === undefined) {
          throw new Error(`event ${event.eventId} came with neither its leaf nor its payload`);
        }
        const at = {
          projectId: batch.projectId,
          environment: batch.environment,
          eventId: event.eventId,
        };
        const context: JsonObject | undefined = event.plaintext
          ? contextOfPlaintext(event.plaintext.context)
          : await openContext(keys, at, event.keyVersion, event.context);
        const listed: ListedEvent = {
          eventId: event.eventId,
          occurredAt: new Date(millis(event.occurredMicros)),
          receivedAt: event.receivedAt,
          logIndex: event.logIndex,
          salt: event.salt,
          payload: event.payload,
          context,
        };
        sources.push(leafSource(listed, render));
      }
      return sources;
    },
    async backfill(tx: Queryable, log: LogAddress, from: number, to: number) {
      const keys = await keyring.forProject(log.projectId, tx);
      const rows = await tx.query<BackfillRow>(
        `select i.log_index::text as log_index, i.id, e.received_at,
                (extract(epoch from i.occurred_at) * 1000000)::int8::text as occurred_us,
                e.key_version, e.payload, c.ciphertext as context
           from event_index i
          -- Each event and context by its whole key, whatever the statistics say (a plain
          -- join may probe by the log alone and filter the rest: every row per event).
          cross join lateral (
            select e.received_at, e.key_version, e.payload from events e
             where e.project_id = i.project_id and e.environment = i.environment
               and e.xid = i.xid and e.id = i.id
            offset 0) as e
           left join lateral (
            select c.ciphertext from event_contexts c
             where c.project_id = i.project_id and c.environment = i.environment
               and c.event_id = i.id
            offset 0) as c on true
          where i.project_id = $1 and i.environment = $2
            and i.log_index >= $3 and i.log_index < $4
          order by i.log_index`,
        [log.projectId, log.environment, from, to],
      );
      const sources: LeafSource[] = [];
      for (const [i, row] of rows.entries()) {
        if (i > 0 && i % EVENTS_PER_YIELD === 0) await yieldToRequests();
        const listed = await openListedEvent(keys, log, {
          eventId: row.id,
          occurredAt: new Date(millis(BigInt(row.occurred_us))),
          receivedAt: row.received_at,
          logIndex: BigInt(row.log_index),
          keyVersion: row.key_version,
          payload: row.payload,
          context: row.context,
        });
        sources.push(leafSource(listed, render));
      }
      return sources;
    },
  });
}
