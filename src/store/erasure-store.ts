/**
 * The SQL of erasure (docs/lifecycle.md): tombstones, and the records of erasure
 * requests. Mechanics only: lifecycle/erasure-service.ts decides what to erase and when.
 *
 * The tombstone model. An erased log position keeps exactly what its leaf in the log's
 * tree already shows, its `logIndex`, `eventId` and `receivedAt`, plus `erasedAt`: a row
 * of `event_tombstones`. Everything that held or was derived from the event's content is
 * deleted with it: its journal row in `events` (the ciphertext, and the salt inside it),
 * its `event_contexts` row, its `event_index` row (blind indexes and search tokens). The
 * tree's tiles are never touched: a leaf holds a commitment, not content, so every
 * inclusion and consistency proof still verifies. The body hash of an Idempotency-Key
 * claim on the event (an unkeyed hash of its content) is overwritten, so a replay of the
 * request is refused (409) rather than matched against the erased content or re-created.
 *
 * Deleted rows stay in the table files as dead tuples until VACUUM reclaims them:
 * `reclaimErasedSpace` is the cleanup (docs/lifecycle.md).
 */
import type { Db, Queryable } from "./db.js";

/** One log: a project's environment. */
export interface LogRef {
  projectId: string;
  environment: string;
}

/** A body hash no canonical body has: a claim holding it matches no replay. */
export const SCRUBBED_BODY_HASH = Buffer.alloc(32);

/**
 * Turns integrated events of one log into tombstones, in bulk, in the caller's
 * transaction (one statement for the event rows, one for the idempotency claims).
 *
 * Guarantees, for each of `logIndexes` that names an integrated event still holding
 * content: its `event_index` row (blind indexes, search tokens), its journal row in
 * `events` (ciphertext, key version, salt), its `event_contexts` row are deleted, and one
 * `event_tombstones` row (log index, event id, receivedAt, `erasedAt`, `erasureId`) is
 * written in their place; an idempotency claim naming it keeps its key but loses its body
 * hash. Indexes that name a tombstone already, or no integrated event (beyond the log's
 * size), are skipped: the function is idempotent, and two callers racing on one position
 * tombstone it once (the second finds the index row gone). Returns the log indexes it
 * tombstoned. The tree (`log_tiles`, `log_trees`) and the log's size are not touched.
 *
 * Journal rows not yet integrated have no log index and are out of its reach: callers
 * wait for the integrator first (the leaf is computed from the content at integration).
 * Retention that drops whole partitions of `events` must tombstone first: the
 * tombstone's receivedAt is read from the journal row.
 */
export async function tombstoneEvents(
  tx: Queryable,
  log: LogRef,
  logIndexes: readonly bigint[],
  options: { erasedAt: Date; erasureId?: string | undefined },
): Promise<bigint[]> {
  if (logIndexes.length === 0) return [];
  const rows = await tx.query<{ log_index: string; id: string }>(
    `with gone as (
       delete from event_index i
        where i.project_id = $1 and i.environment = $2 and i.log_index = any($3::int8[])
       returning i.log_index, i.id, i.xid, i.received_at, i.retention_days),
     -- With each row's partition keys (migration 12): one partition probed, not all.
     journal as (
       delete from events e using gone g
        where e.project_id = $1 and e.environment = $2 and e.xid = g.xid and e.id = g.id
          and e.retention_days = g.retention_days and e.received_at = g.received_at
       returning e.id, e.received_at),
     contexts as (
       delete from event_contexts c using gone g
        where c.project_id = $1 and c.environment = $2 and c.event_id = g.id
          and c.retention_days = g.retention_days and c.received_at = g.received_at)
     insert into event_tombstones
       (project_id, environment, log_index, id, received_at, erased_at, erasure_id)
     select $1, $2, g.log_index, g.id, j.received_at, $4, $5
       from gone g join journal j on j.id = g.id
     returning log_index::text as log_index, id`,
    [
      log.projectId,
      log.environment,
      logIndexes.map(String),
      options.erasedAt,
      options.erasureId ?? null,
    ],
  );
  if (rows.length > 0) {
    await tx.query(
      `update idempotency_keys set body_hash = $4
        where project_id = $1 and environment = $2 and event_id = any($3::uuid[])`,
      [log.projectId, log.environment, rows.map((row) => row.id), SCRUBBED_BODY_HASH],
    );
    await tx.query(
      `update batch_idempotency_keys set body_hash = $4
        where project_id = $1 and environment = $2 and event_ids && $3::uuid[]`,
      [log.projectId, log.environment, rows.map((row) => row.id), SCRUBBED_BODY_HASH],
    );
  }
  return rows.map((row) => BigInt(row.log_index)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The tables erasure deletes from. */
const ERASED_TABLES = [
  "events",
  "event_contexts",
  "event_index",
  "idempotency_keys",
  "batch_idempotency_keys",
  // A done erasure's record drops its blind index (completeErasure).
  "erasures",
] as const;

/**
 * Reclaims the space of the rows erasure deleted, outside any transaction.
 *
 * "full": VACUUM FULL rewrites each table erasure deletes from (with its indexes) into
 * new files and removes the old ones, so the deleted rows' bytes leave the table files;
 * on PGlite the write-ahead log is then switched to a new segment and a CHECKPOINT lets
 * the old one go (PGlite runs with wal_recycle off, store/pglite-driver.ts, so it is
 * removed rather than kept for reuse). Each table is locked while it is rewritten:
 * ingestion and reads wait meanwhile.
 * "vacuum": a plain VACUUM of the same tables: dead rows leave the indexes and their
 * space is marked reusable, without blocking anything; their bytes may stay in the
 * pages' free space until overwritten (docs/lifecycle.md, PostgreSQL's default).
 * Either way it first waits for the snapshots older than the call to end
 * (`waitForEarlierSnapshots`), since no VACUUM removes a row an open snapshot can see.
 */
export async function reclaimErasedSpace(
  db: Db,
  mode: "full" | "vacuum",
  options: { snapshotWaitMs?: number } = {},
): Promise<{ snapshotsPassed: boolean }> {
  const snapshotsPassed = await waitForEarlierSnapshots(db, options.snapshotWaitMs ?? 30_000);
  for (const table of ERASED_TABLES) {
    await db.query(mode === "full" ? `vacuum full ${table}` : `vacuum ${table}`);
  }
  if (mode === "full" && db.driver === "pglite") {
    await db.query("select pg_switch_wal()");
    await db.query("checkpoint");
  }
  return { snapshotsPassed };
}

/**
 * Waits, at most `timeoutMs`, until no other session of the server holds a snapshot or a
 * transaction id older than the call. VACUUM (FULL or not) keeps every deleted row that
 * some open transaction may still see ("recently dead"): a report, an export or an
 * autovacuum ANALYZE that started before the erasure committed would otherwise keep the
 * erased bytes in the rewritten files. Sessions of other databases count too: a migration's
 * CREATE INDEX in another database of the server was seen holding this database's dead
 * rows (VACUUM VERBOSE: "3 dead row versions cannot be removed yet"). Returns whether the
 * horizon passed in time; past the bound the clean-up goes ahead and the next erasure's
 * clean-up takes what this one had to leave. Sessions of other roles show no transaction
 * ids without pg_read_all_stats, so they are not waited for. PGlite has one session, ours,
 * so there is nothing to wait for.
 */
export async function waitForEarlierSnapshots(db: Db, timeoutMs: number): Promise<boolean> {
  if (db.driver === "pglite") return true;
  // The first transaction id not yet assigned: every erasure before the call is below it.
  const [start] = await db.query<{ horizon: string }>(
    "select (pg_snapshot_xmax(pg_current_snapshot())::text::int8 % 4294967296)::text as horizon",
  );
  const horizon = start?.horizon ?? "0";
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // age() orders 32-bit transaction ids modulo wraparound: older means a larger age.
    const [row] = await db.query<{ holders: number }>(
      `select count(*)::int as holders from pg_stat_activity
        where pid <> pg_backend_pid()
          and (age(backend_xmin) > age($1::text::xid) or age(backend_xid) > age($1::text::xid))`,
      [horizon],
    );
    if ((row?.holders ?? 0) === 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What an erasure request selects. */
export type ErasureSelector =
  | { kind: "event_ids"; eventIds: string[] }
  /** `matchIdx`: the value's blind index; `sealedValue`: the value under the data key. */
  | { kind: "actor_id" | "tenant_id"; matchIdx: Buffer; sealedValue: Buffer; keyVersion: number }
  | { kind: "retention"; receivedBefore: Date };

/** A point in a journal's (xid, id) order. */
export interface ErasureBound {
  xid: bigint;
  id: string;
}

/** An erasure request as recorded. */
export interface ErasureRecord extends LogRef {
  id: string;
  selector: ErasureSelector;
  requestedBy: string;
  requestedAt: Date;
  /** Only events at or before it in the journal's (xid, id) order are erased. */
  bound: ErasureBound;
  status: "pending" | "done";
  /** Null until counted. */
  matched: bigint | null;
  erased: bigint;
  completedAt: Date | null;
}

interface ErasureRow {
  id: string;
  project_id: string;
  environment: string;
  selector: "event_ids" | "actor_id" | "tenant_id" | "retention";
  event_ids: string[] | null;
  match_idx: Buffer | null;
  sealed_value: Buffer | null;
  key_version: number | null;
  received_before: Date | null;
  requested_by: string;
  requested_at: Date;
  bound_xid: string;
  bound_id: string;
  status: "pending" | "done";
  matched: string | null;
  erased: string;
  completed_at: Date | null;
}

const ERASURE_COLUMNS = `id, project_id, environment, selector, to_json(event_ids) as event_ids, match_idx,
  sealed_value, key_version, received_before, requested_by, requested_at,
  bound_xid::text as bound_xid, bound_id, status, matched::text as matched,
  erased::text as erased, completed_at`;

function toRecord(row: ErasureRow): ErasureRecord {
  let selector: ErasureSelector;
  if (row.selector === "event_ids") selector = { kind: "event_ids", eventIds: row.event_ids ?? [] };
  else if (row.selector === "retention") {
    selector = { kind: "retention", receivedBefore: row.received_before ?? new Date(0) };
  } else {
    selector = {
      kind: row.selector,
      matchIdx: Buffer.from(row.match_idx ?? []),
      sealedValue: Buffer.from(row.sealed_value ?? []),
      keyVersion: row.key_version ?? 0,
    };
  }
  return {
    id: row.id,
    projectId: row.project_id,
    environment: row.environment,
    selector,
    requestedBy: row.requested_by,
    requestedAt: row.requested_at,
    bound: { xid: BigInt(row.bound_xid), id: row.bound_id },
    status: row.status,
    matched: row.matched === null ? null : BigInt(row.matched),
    erased: BigInt(row.erased),
    completedAt: row.completed_at,
  };
}

/** Records an erasure request, pending, before any of its work. */
export async function insertErasure(
  db: Queryable,
  record: Omit<ErasureRecord, "status" | "matched" | "erased" | "completedAt" | "requestedAt">,
): Promise<ErasureRecord> {
  const s = record.selector;
  const [row] = await db.query<ErasureRow>(
    `insert into erasures (id, project_id, environment, selector, event_ids, match_idx,
                           sealed_value, key_version, received_before, requested_by,
                           bound_xid, bound_id)
     values ($1, $2, $3, $4, $5::uuid[], $6, $7, $8, $9, $10, $11::xid8, $12)
     returning ${ERASURE_COLUMNS}`,
    [
      record.id,
      record.projectId,
      record.environment,
      s.kind,
      s.kind === "event_ids" ? s.eventIds : null,
      s.kind === "actor_id" || s.kind === "tenant_id" ? s.matchIdx : null,
      s.kind === "actor_id" || s.kind === "tenant_id" ? s.sealedValue : null,
      s.kind === "actor_id" || s.kind === "tenant_id" ? s.keyVersion : null,
      s.kind === "retention" ? s.receivedBefore : null,
      record.requestedBy,
      String(record.bound.xid),
      record.bound.id,
    ],
  );
  if (!row) throw new Error("erasure not recorded");
  return toRecord(row);
}

/** A project's erasure records, newest first. */
export async function listErasures(db: Queryable, projectId: string): Promise<ErasureRecord[]> {
  const rows = await db.query<ErasureRow>(
    `select ${ERASURE_COLUMNS} from erasures where project_id = $1
      order by requested_at desc, id desc`,
    [projectId],
  );
  return rows.map(toRecord);
}

/** Every erasure not yet done, oldest first (to finish after a crash). */
export async function pendingErasures(db: Queryable): Promise<ErasureRecord[]> {
  const rows = await db.query<ErasureRow>(
    `select ${ERASURE_COLUMNS} from erasures where status = 'pending'
      order by requested_at, id`,
  );
  return rows.map(toRecord);
}

/**
 * Log indexes of integrated events still holding content that `selector` matches in the
 * log, at or before `bound` in (xid, id) order, above log index `after`; at most `limit`
 * of them, lowest first.
 * Actor and tenant selectors match on event_index's blind indexes. Retention's selector
 * is not matched here.
 */
export async function matchLive(
  db: Queryable,
  log: LogRef,
  selector: ErasureSelector,
  bound: ErasureBound,
  limit: number,
  after = -1n,
): Promise<bigint[]> {
  const params: unknown[] = [
    log.projectId,
    log.environment,
    String(bound.xid),
    bound.id,
    limit,
    String(after),
  ];
  let condition: string;
  if (selector.kind === "event_ids") {
    params.push(selector.eventIds);
    condition = "id = any($7::uuid[])";
  } else if (selector.kind === "actor_id") {
    params.push(selector.matchIdx);
    condition = "actor_idx = $7";
  } else if (selector.kind === "tenant_id") {
    params.push(selector.matchIdx);
    condition = "tenant_idx = $7";
  } else {
    throw new Error("retention is not matched by matchLive");
  }
  const rows = await db.query<{ log_index: string }>(
    `select log_index::text as log_index from event_index
      where project_id = $1 and environment = $2 and ${condition}
        and (xid, id) <= ($3::xid8, $4::uuid) and log_index > $6::int8
      -- The column, not the text alias of the same name (text orders "108" before "2").
      order by event_index.log_index limit $5`,
    params,
  );
  return rows.map((row) => BigInt(row.log_index));
}

/** Sets the count of matched events of an erasure (once, before its work). */
export async function setErasureMatched(db: Queryable, id: string, matched: bigint): Promise<void> {
  await db.query("update erasures set matched = $2 where id = $1 and matched is null", [
    id,
    String(matched),
  ]);
}

/** Adds to an erasure's count of erased events (in the transaction that erased them). */
export async function addErased(db: Queryable, id: string, erased: number): Promise<void> {
  if (erased === 0) return;
  await db.query("update erasures set erased = erased + $2 where id = $1", [id, erased]);
}

/**
 * Marks an erasure done; returns the record as it ends. Its blind index goes: it matched
 * the erased events and would link them to the subject (the selector stays sealed). A
 * retention run counts no matches before its work: what it selected with content is what
 * it expired, so its `matched` is its `erased`.
 */
export async function completeErasure(db: Queryable, id: string): Promise<ErasureRecord> {
  const [row] = await db.query<ErasureRow>(
    `update erasures set status = 'done', completed_at = coalesce(completed_at, now()),
            match_idx = null,
            matched = case when selector = 'retention' then coalesce(matched, erased)
                           else matched end
      where id = $1 returning ${ERASURE_COLUMNS}`,
    [id],
  );
  if (!row) throw new Error(`erasure ${id} not found`);
  return toRecord(row);
}
