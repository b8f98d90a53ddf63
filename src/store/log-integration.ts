/**
 * The SQL of the integrator and of a log's position (docs/write-path.md). Mechanics
 * only: log/integrator.ts decides when and what to integrate.
 *
 * A log is one project-environment. Its journal is its rows of `events`, each stamped
 * with the id of the transaction that appended it (`xid`). The integrator's durable
 * position per log (`event_logs`) is a point in (xid, id) order: every journal row at
 * or before it has its `event_index` row, numbered 0, 1, 2 ... in that order, and `size`
 * of them exist. It only ever reads rows below a horizon, the oldest transaction of this
 * database still in flight (horizonAndWork): every transaction of this database below it
 * has ended, so every row below it is visible now and none can appear there later. Rows therefore never become visible behind the position, whatever
 * order their transactions commit in, and an event acknowledged before another was sent
 * has the smaller xid (its transaction took its id before the other began), so it gets
 * the smaller log index.
 *
 * One integrator at a time per log, across instances: a pass holds the log's advisory
 * transaction lock (`pg_try_advisory_xact_lock`), released at its commit or when its
 * connection dies. The pass reads, derives, writes and moves the position in one
 * transaction: a crash anywhere loses, repeats and skips nothing.
 */
import type { EventPlaintext } from "../crypto/event-cipher.js";
import type { Queryable } from "./db.js";

// The class of the logs' advisory locks (migrations.ts holds another constant).
const LOG_LOCK_CLASS = 727_310_002;

/** A point in a journal's (xid, id) order. */
export interface JournalPosition {
  xid: bigint;
  id: string;
}

/** The position before every row of a horizon's transaction and after all below it. */
export const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** A log, as the integrator locked it. */
export interface LockedLog {
  lockId: number;
  projectId: string;
  environment: string;
  /** Events integrated so far: the next log index. */
  size: bigint;
  position: JournalPosition;
}

/** A journal row to integrate. */
export interface JournalRow {
  xid: bigint;
  eventId: string;
  /** occurred_at as the database writes it (text), to copy back exactly. */
  occurredAtText: string;
  /** occurred_at in microseconds since the Unix epoch. */
  occurredMicros: bigint;
  receivedAt: Date;
  /**
   * received_at as the database writes it (text): to find the row and its context again
   * and to copy into the index row exactly (a Date keeps milliseconds, the column
   * microseconds).
   */
  receivedAtText: string;
  /** The retention period stamped on the row: its partition (migration 12). */
  retentionDays: number;
  keyVersion: number;
  /** The sealed payload; undefined when `plaintext` stands for the content. */
  payload: Buffer | undefined;
  /** The context's ciphertext, when asked for and present (and no `plaintext`). */
  context: Buffer | null;
  /** What this instance sealed for the event, when it still held it: nothing was read. */
  plaintext: EventPlaintext | undefined;
}

/** The blind indexes of one event (crypto/event-cipher.ts EventIndexes). */
export interface IndexValues {
  actorIdx: Buffer;
  entityTypeIdx: Buffer;
  entityIdIdx: Buffer;
  actionIdx: Buffer;
  tenantIdx: Buffer | undefined;
  legacyActionIdx: Buffer | undefined;
  /** The search token ids in decimal, joined by commas. */
  searchTokenText: string;
  searchTokenCount: number;
}

/** One event's row of `event_index`. */
export interface IndexRow {
  projectId: string;
  environment: string;
  logIndex: bigint;
  eventId: string;
  xid: bigint;
  occurredAtText: string;
  /**
   * The journal row's received_at (exact, as JournalRow.receivedAtText) and retention
   * period: the index row's partition.
   */
  receivedAtText: string;
  retentionDays: number;
  indexes: IndexValues;
}

/** A log's new integrated state. */
export interface LogAdvance {
  lockId: number;
  size: bigint;
  position: JournalPosition;
}

/**
 * The horizon and up to `limit` logs with journal rows past their
 * position and below it, those integrated least recently first: one statement, one
 * index probe per log. Its first statement in a pass, before the pass has a transaction
 * id of its own.
 *
 * The horizon is the oldest transaction of this database still running at the snapshot
 * (else the snapshot's xmax): transaction ids are the server's, so the snapshot's xmin
 * would let a long write transaction in any other database hold every log back. A running
 * id is set aside only when pg_stat_activity or pg_prepared_xacts places it in another
 * database; an id it cannot place (ended since the snapshot, or a session of another role
 * whose columns are hidden) still holds the horizon, which costs lag, never a row: a
 * transaction ended since the snapshot is visible to the pass's later statements (READ
 * COMMITTED), and one that starts later gets an id at or above the snapshot's xmax.
 */
export async function horizonAndWork(
  tx: Queryable,
  limit: number,
): Promise<{ horizon: bigint; lockIds: number[] }> {
  const rows = await tx.query<{ horizon: string; lock_id: number | null }>(
    `with s as (select pg_current_snapshot() as snap),
     other_databases as (
       select backend_xid as xid from pg_stat_activity
        where backend_xid is not null and datname is distinct from current_database()
       union all
       select transaction from pg_prepared_xacts where database <> current_database()),
     h as (
       select coalesce(
                (select min(running.xid) from pg_snapshot_xip(s.snap) as running(xid)
                  where not exists (select 1 from other_databases o where o.xid = xid(running.xid))),
                pg_snapshot_xmax(s.snap)) as horizon
         from s)
     select h.horizon::text as horizon, w.lock_id
       from h
       left join lateral (
         select l.lock_id, l.integrated_at from event_logs l
          where exists (select 1 from events e
                         where e.project_id = l.project_id
                           and e.environment = l.environment
                           and (e.xid, e.id) > (l.integrated_xid, l.integrated_id)
                           and e.xid < h.horizon)
          order by l.integrated_at nulls first, l.lock_id
          limit $1) as w on true
      order by w.integrated_at nulls first, w.lock_id`,
    [limit],
  );
  const [first] = rows;
  if (!first) throw new Error("no horizon read");
  return {
    horizon: BigInt(first.horizon),
    lockIds: rows.flatMap((row) => (row.lock_id === null ? [] : [row.lock_id])),
  };
}

/**
 * Takes the advisory locks of those of `lockIds` that no other pass holds, and reads
 * their state after taking them (so after the commit of any pass that held them).
 */
export async function lockLogs(tx: Queryable, lockIds: readonly number[]): Promise<LockedLog[]> {
  if (lockIds.length === 0) return [];
  const locked = await tx.query<{ lock_id: number }>(
    `select c.lock_id from unnest($1::int[]) as c(lock_id)
      where pg_try_advisory_xact_lock(${LOG_LOCK_CLASS}, c.lock_id)`,
    [lockIds],
  );
  if (locked.length === 0) return [];
  const rows = await tx.query<{
    lock_id: number;
    project_id: string;
    environment: string;
    size: string;
    integrated_xid: string;
    integrated_id: string;
  }>(
    `select lock_id, project_id, environment, size::text as size,
            integrated_xid::text as integrated_xid, integrated_id
       from event_logs where lock_id = any($1::int[]) order by lock_id`,
    [locked.map((row) => row.lock_id)],
  );
  return rows.map((row) => ({
    lockId: row.lock_id,
    projectId: row.project_id,
    environment: row.environment,
    size: BigInt(row.size),
    position: { xid: BigInt(row.integrated_xid), id: row.integrated_id },
  }));
}

/**
 * Each log's journal rows after its position and below `horizon`, in (xid, id) order, at
 * most `perLog` of each; with their contexts when `withContext`. A row whose plaintext
 * `plaintextOf` has (what this instance sealed for it, log/plaintext-cache.ts) comes with
 * that instead of its ciphertext, which is then not read: the rows are read without
 * their content first, and only the others' content after, in a second statement.
 */
export async function readJournal(
  tx: Queryable,
  logs: readonly LockedLog[],
  horizon: bigint,
  perLog: number,
  withContext: boolean,
  plaintextOf: (eventId: string) => EventPlaintext | undefined = () => undefined,
): Promise<Map<number, JournalRow[]>> {
  const byLog = new Map<number, JournalRow[]>(logs.map((log) => [log.lockId, []]));
  if (logs.length === 0) return byLog;
  const rows = await tx.query<{
    lock_id: number;
    xid: string;
    id: string;
    occurred_at: string;
    occurred_us: string;
    received_at: Date;
    received_text: string;
    retention_days: number;
    key_version: number;
  }>(
    `select l.lock_id, e.xid::text as xid, e.id, e.occurred_at::text as occurred_at,
            (extract(epoch from e.occurred_at) * 1000000)::int8::text as occurred_us,
            e.received_at, e.received_at::text as received_text, e.retention_days,
            e.key_version
       from unnest($1::int[], $2::uuid[], $3::text[], $4::text[], $5::uuid[])
              as l(lock_id, project_id, environment, after_xid, after_id)
      cross join lateral (
        select * from events e
         where e.project_id = l.project_id and e.environment = l.environment
           and (e.xid, e.id) > (l.after_xid::xid8, l.after_id)
           and e.xid < $6::xid8
         order by e.xid, e.id
         limit $7) as e
      order by l.lock_id, e.xid, e.id`,
    [
      logs.map((log) => log.lockId),
      logs.map((log) => log.projectId),
      logs.map((log) => log.environment),
      logs.map((log) => String(log.position.xid)),
      logs.map((log) => log.position.id),
      String(horizon),
      perLog,
    ],
  );
  const logOf = new Map(logs.map((log) => [log.lockId, log]));
  const unread: { log: LockedLog; row: JournalRow }[] = [];
  for (const row of rows) {
    const log = logOf.get(row.lock_id);
    if (log === undefined) continue;
    const plaintext = plaintextOf(row.id);
    const journalRow: JournalRow = {
      xid: BigInt(row.xid),
      eventId: row.id,
      occurredAtText: row.occurred_at,
      occurredMicros: BigInt(row.occurred_us),
      receivedAt: row.received_at,
      receivedAtText: row.received_text,
      retentionDays: row.retention_days,
      keyVersion: row.key_version,
      payload: undefined,
      context: null,
      plaintext,
    };
    byLog.get(row.lock_id)?.push(journalRow);
    if (plaintext === undefined) unread.push({ log, row: journalRow });
  }
  if (unread.length > 0) await readContent(tx, unread, withContext);
  return byLog;
}

/**
 * Reads the sealed payload (and context, when `withContext`) of journal rows read
 * without them, each by its whole key, into the rows.
 */
async function readContent(
  tx: Queryable,
  unread: readonly { log: LockedLog; row: JournalRow }[],
  withContext: boolean,
): Promise<void> {
  const contents = await tx.query<{ ord: string; payload: Buffer; context: Buffer | null }>(
    `select k.ord::text as ord, e.payload,
            ${withContext ? "c.ciphertext" : "null::bytea"} as context
       from unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::int[],
                   $6::timestamptz[])
              with ordinality as k(project_id, environment, xid, id, retention_days,
                                   received_at, ord)
      -- Each row and context by its whole key, whatever the statistics say (as a plain
      -- join the planner, with a fresh table's statistics, may probe by the log alone).
      cross join lateral (
        select e.payload from events e
         where e.project_id = k.project_id and e.environment = k.environment
           and e.xid = k.xid::xid8 and e.id = k.id
           and e.retention_days = k.retention_days and e.received_at = k.received_at
        offset 0) as e
      ${
        withContext
          ? `left join lateral (
               select c.ciphertext from event_contexts c
                where c.project_id = k.project_id and c.environment = k.environment
                  and c.event_id = k.id and c.retention_days = k.retention_days
                  and c.received_at = k.received_at
               offset 0) as c on true`
          : ""
      }`,
    [
      unread.map(({ log }) => log.projectId),
      unread.map(({ log }) => log.environment),
      unread.map(({ row }) => String(row.xid)),
      unread.map(({ row }) => row.eventId),
      unread.map(({ row }) => row.retentionDays),
      unread.map(({ row }) => row.receivedAtText),
    ],
  );
  for (const content of contents) {
    const target = unread[Number(content.ord) - 1];
    if (target === undefined) continue;
    target.row.payload = content.payload;
    target.row.context = content.context;
  }
  // The pass holds the log's lock and reads below the horizon: no row can go meanwhile.
  const missing = unread.find(({ row }) => row.payload === undefined);
  if (missing) throw new Error(`journal row ${missing.row.eventId} vanished while read`);
}

/**
 * Writes index rows in one statement. The four 16-byte indexes every event has travel
 * as one bytea cut up in SQL, and the search tokens as one int8[] sliced per row:
 * cheaper for the database to read than an array element per value.
 */
export async function writeIndex(tx: Queryable, rows: readonly IndexRow[]): Promise<void> {
  if (rows.length === 0) return;
  const fixed = Buffer.concat(
    rows.flatMap(({ indexes }) => [
      indexes.actorIdx,
      indexes.entityTypeIdx,
      indexes.entityIdIdx,
      indexes.actionIdx,
    ]),
  );
  // The tokens as one int8[] literal of the events' texts: digits need no quoting, and
  // this is ~60 values an event.
  let tokens = "";
  const tokenStarts: number[] = [];
  let count = 0;
  for (const { indexes } of rows) {
    tokenStarts.push(count + 1);
    if (indexes.searchTokenCount === 0) continue;
    tokens += `${count === 0 ? "" : ","}${indexes.searchTokenText}`;
    count += indexes.searchTokenCount;
  }
  tokenStarts.push(count + 1);
  await tx.query(
    `insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                              actor_idx, entity_type_idx, entity_id_idx, action_idx,
                              legacy_action_idx, tenant_idx, search_tokens, received_at,
                              retention_days)
     select r.project_id, r.environment, r.log_index, r.id, r.xid::xid8, r.occurred_at,
            substring($11::bytea from (r.n::int - 1) * 64 + 1 for 16),
            substring($11::bytea from (r.n::int - 1) * 64 + 17 for 16),
            substring($11::bytea from (r.n::int - 1) * 64 + 33 for 16),
            substring($11::bytea from (r.n::int - 1) * 64 + 49 for 16),
            r.legacy_action_idx, r.tenant_idx,
            coalesce(($9::int8[])[($10::int[])[r.n::int] : ($10::int[])[r.n::int + 1] - 1], '{}'),
            r.received_at, r.retention_days
       from unnest($1::uuid[], $2::text[], $3::int8[], $4::uuid[], $5::text[],
                   $6::timestamptz[], $7::bytea[], $8::bytea[], $12::timestamptz[], $13::int[])
              with ordinality
              as r(project_id, environment, log_index, id, xid, occurred_at,
                   legacy_action_idx, tenant_idx, received_at, retention_days, n)`,
    [
      rows.map((row) => row.projectId),
      rows.map((row) => row.environment),
      rows.map((row) => String(row.logIndex)),
      rows.map((row) => row.eventId),
      rows.map((row) => String(row.xid)),
      rows.map((row) => row.occurredAtText),
      rows.map((row) => row.indexes.legacyActionIdx ?? null),
      rows.map((row) => row.indexes.tenantIdx ?? null),
      `{${tokens}}`,
      tokenStarts,
      fixed,
      rows.map((row) => row.receivedAtText),
      rows.map((row) => row.retentionDays),
    ],
  );
}

/** Moves logs to their new size and position, in one statement. */
export async function advanceLogs(tx: Queryable, advances: readonly LogAdvance[]): Promise<void> {
  if (advances.length === 0) return;
  await tx.query(
    `update event_logs l
        set size = a.size, integrated_xid = a.xid::xid8, integrated_id = a.id,
            integrated_at = now()
       from unnest($1::int[], $2::int8[], $3::text[], $4::uuid[]) as a(lock_id, size, xid, id)
      where l.lock_id = a.lock_id`,
    [
      advances.map((a) => a.lockId),
      advances.map((a) => String(a.size)),
      advances.map((a) => String(a.position.xid)),
      advances.map((a) => a.position.id),
    ],
  );
}

/** Where a log's journal and its integration stand. */
export interface LogProgress {
  /** The last journal row (in xid, id order), if any. */
  head: JournalPosition | undefined;
  integrated: JournalPosition;
  /** Events integrated (the next log index). */
  size: bigint;
  /** When the last pass that moved this log committed. */
  integratedAt: Date | null;
}

/**
 * A log's head and integrated position: one row of event_logs and one backward step of
 * the journal's index (no scan). Undefined when the log does not exist.
 */
export async function readLogProgress(
  db: Queryable,
  projectId: string,
  environment: string,
): Promise<LogProgress | undefined> {
  const [row] = await db.query<{
    size: string;
    integrated_xid: string;
    integrated_id: string;
    integrated_at: Date | null;
    head_xid: string | null;
    head_id: string | null;
  }>(
    `select l.size::text as size, l.integrated_xid::text as integrated_xid,
            l.integrated_id, l.integrated_at, h.xid::text as head_xid, h.id as head_id
       from event_logs l
       left join lateral (
         select e.xid, e.id from events e
          where e.project_id = l.project_id and e.environment = l.environment
          order by e.xid desc, e.id desc
          limit 1) as h on true
      where l.project_id = $1 and l.environment = $2`,
    [projectId, environment],
  );
  if (!row) return undefined;
  return {
    head:
      row.head_xid === null || row.head_id === null
        ? undefined
        : { xid: BigInt(row.head_xid), id: row.head_id },
    integrated: { xid: BigInt(row.integrated_xid), id: row.integrated_id },
    size: BigInt(row.size),
    integratedAt: row.integrated_at,
  };
}

/** A log's integrated position alone (what a waiting reader polls). */
export async function readIntegratedPosition(
  db: Queryable,
  projectId: string,
  environment: string,
): Promise<JournalPosition | undefined> {
  const [row] = await db.query<{ xid: string; id: string }>(
    `select integrated_xid::text as xid, integrated_id as id
       from event_logs where project_id = $1 and environment = $2`,
    [projectId, environment],
  );
  return row ? { xid: BigInt(row.xid), id: row.id } : undefined;
}

/** `a` is at or after `b` in (xid, id) order. */
export function reached(a: JournalPosition, b: JournalPosition): boolean {
  // UUIDs in their canonical lower-case text compare as their bytes do, as PostgreSQL
  // compares uuid.
  return a.xid > b.xid || (a.xid === b.xid && a.id >= b.id);
}

/** A log with events not yet integrated, whose integrator is moving. */
export interface LogBacklog {
  projectId: string;
  environment: string;
  /** Seconds since the oldest of them was received, by the database's clock. */
  oldestAgeSeconds: number;
  /** How many there are, counted up to the cap the query was given. */
  pending: number;
}

/** The backlogs of the logs under load, and how many events every log has integrated. */
export interface BacklogSample {
  backlogs: LogBacklog[];
  /** The sum of every log's size: its growth between two samples is the integrators' rate. */
  integrated: bigint;
}

/**
 * The logs with rows past their integrated position that a pass moved within the last
 * `movedWithinSeconds` (behind because of load, not stalled): per log, the age of its
 * oldest pending row and their number, counted up to `countCap` (an index range of the
 * journal's primary key, never the whole journal); and the sum of every log's size.
 */
export async function readBacklogs(
  db: Queryable,
  countCap: number,
  movedWithinSeconds: number,
): Promise<BacklogSample> {
  const rows = await db.query<{
    project_id: string | null;
    environment: string | null;
    age: number | null;
    pending: number | null;
    integrated: string;
  }>(
    `with backlog as (
       select l.project_id, l.environment, p.pending,
              extract(epoch from now() - p.oldest)::float8 as age
         from event_logs l
        cross join lateral (
          select count(*)::int as pending, min(b.received_at) as oldest from (
            select e.received_at from events e
             where e.project_id = l.project_id and e.environment = l.environment
               and (e.xid, e.id) > (l.integrated_xid, l.integrated_id)
             order by e.xid, e.id
             limit $1) as b) as p
        where l.integrated_at > now() - make_interval(secs => $2::float8)
          and p.pending > 0)
     select b.project_id, b.environment, b.age, b.pending, t.integrated
       from (select coalesce(sum(size), 0)::text as integrated from event_logs) as t
       left join backlog b on true`,
    [countCap, movedWithinSeconds],
  );
  const backlogs: LogBacklog[] = [];
  for (const row of rows) {
    if (row.project_id === null || row.environment === null) continue;
    backlogs.push({
      projectId: row.project_id,
      environment: row.environment,
      oldestAgeSeconds: Math.max(0, row.age ?? 0),
      pending: row.pending ?? 0,
    });
  }
  return { backlogs, integrated: BigInt(rows[0]?.integrated ?? "0") };
}

/** Every log's figures summed: events acknowledged, integrated, and the oldest waiting. */
export interface LagSummary {
  head: bigint;
  integrated: bigint;
  /** receivedAt of the oldest journal row not yet integrated. */
  oldestPending: Date | null;
}

/**
 * The logs' lag, for metrics: each log's size plus its rows past its position (an index
 * range of the rows not yet integrated, usually few), so no journal is counted whole.
 */
export async function readLagSummary(db: Queryable): Promise<LagSummary> {
  const [row] = await db.query<{ integrated: string; pending: string; oldest: Date | null }>(
    `select coalesce(sum(l.size), 0)::text as integrated,
            coalesce(sum(p.pending), 0)::text as pending, min(p.oldest) as oldest
       from event_logs l
       cross join lateral (
         select count(*) as pending, min(e.received_at) as oldest from events e
          where e.project_id = l.project_id and e.environment = l.environment
            and (e.xid, e.id) > (l.integrated_xid, l.integrated_id)) as p`,
  );
  const integrated = BigInt(row?.integrated ?? "0");
  return {
    head: integrated + BigInt(row?.pending ?? "0"),
    integrated,
    oldestPending: row?.oldest ?? null,
  };
}

/** One log's figures: what its journal holds and how far it is integrated. */
export interface LogFigures {
  head: bigint;
  integrated: bigint;
  oldestPending: Date | null;
  integratedAt: Date | null;
}

/** One log's figures; undefined when the log does not exist. */
export async function readLogFigures(
  db: Queryable,
  projectId: string,
  environment: string,
): Promise<LogFigures | undefined> {
  const [row] = await db.query<{
    size: string;
    pending: string;
    oldest: Date | null;
    integrated_at: Date | null;
  }>(
    `select l.size::text as size, p.pending::text as pending, p.oldest, l.integrated_at
       from event_logs l
       cross join lateral (
         select count(*) as pending, min(e.received_at) as oldest from events e
          where e.project_id = l.project_id and e.environment = l.environment
            and (e.xid, e.id) > (l.integrated_xid, l.integrated_id)) as p
      where l.project_id = $1 and l.environment = $2`,
    [projectId, environment],
  );
  if (!row) return undefined;
  const integrated = BigInt(row.size);
  return {
    head: integrated + BigInt(row.pending),
    integrated,
    oldestPending: row.oldest,
    integratedAt: row.integrated_at,
  };
}
