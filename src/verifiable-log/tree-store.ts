/**
 * Storage of each log's Merkle tree, as tiles (Go's sumdb/tlog tile layout, height 8), its
 * leaves, and its signed checkpoints (tables of migration 8):
 *
 * - `log_tiles`: one row per tile, `(project_id, environment, level, n)`, `data` the tile's
 *   hashes (32 bytes each) or, at level -1, its leaves (65 bytes each); a partial tile is
 *   extended by its new bytes as the tree grows (`extendTiles`), a full one never changes. A proof in a tree of a
 *   million leaves reads four tiles in one query.
 * - `log_trees`: each log's tree size; written in the integrator's transaction with the
 *   tiles, so tiles always hold every hash of a tree that size.
 * - `log_checkpoints`: every published checkpoint, kept, keyed by size.
 *
 * Invariants: every function works through the Queryable it is given (the integrator's
 * transaction, or the database); hashes once written never change.
 */
import type { Queryable } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { LEAF_SIZE } from "../tlog/leaf.js";
import { hashFromTile, type Tile, tileForIndex } from "../tlog/tile.js";
import { HASH_SIZE, type Hash, type HashReader } from "../tlog/tree.js";

/** Tile height: 2^8 = 256 hashes (8 KiB) or leaves (16.25 KiB) a tile. */
export const TILE_HEIGHT = 8;
const TILE_WIDTH = 2 ** TILE_HEIGHT;
/** The level of leaf tiles. */
export const LEAF_LEVEL = -1;

/** A log: one project-environment. */
export interface LogAddress {
  readonly projectId: string;
  readonly environment: string;
}

/** A published checkpoint. */
export interface StoredCheckpoint {
  readonly size: number;
  readonly root: Hash;
  readonly note: string;
  readonly publishedAt: Date;
}

/** A stored tile: its hashes (level >= 0) or leaves (level -1). */
export interface TileRow {
  readonly level: number;
  readonly n: number;
  readonly data: Uint8Array;
}

type TileKey = `${number}/${number}`;

function key(level: number, n: number): TileKey {
  return `${level}/${n}`;
}

/** Tile rows by `level/n`. */
export function tilesByKey(rows: readonly TileRow[]): Map<TileKey, Uint8Array> {
  return new Map(rows.map((row) => [key(row.level, row.n), row.data]));
}

interface TileRecord {
  level: number;
  n: string;
  data: Uint8Array;
}

const tileOf = (row: TileRecord): TileRow => ({
  level: Number(row.level),
  n: Number(row.n),
  data: new Uint8Array(row.data),
});

/** Reads tiles by (level, n) in one query (one statement text, prepared once); absent tiles are left out. */
export async function readTiles(
  db: Queryable,
  log: LogAddress,
  wanted: readonly { level: number; n: number }[],
): Promise<TileRow[]> {
  if (wanted.length === 0) return [];
  const unique = [...new Map(wanted.map((t) => [key(t.level, t.n), t])).values()];
  // One index probe per tile, whatever the statistics say: a join the planner may reorder
  // can scan every tile of the log instead ("offset 0" keeps the subquery as written).
  const rows = await db.query<TileRecord>(
    `select w.level, w.n::text as n, t.data
       from unnest($3::int2[], $4::int8[]) as w(level, n)
      cross join lateral (
        select t.data from log_tiles t
         where t.project_id = $1 and t.environment = $2 and t.level = w.level and t.n = w.n
        offset 0) as t`,
    [log.projectId, log.environment, unique.map((t) => t.level), unique.map((t) => String(t.n))],
  );
  return rows.map(tileOf);
}

/** Writes tiles (insert, or replace a narrower version), in one statement. */
export async function writeTiles(
  db: Queryable,
  log: LogAddress,
  tiles: readonly TileRow[],
): Promise<void> {
  if (tiles.length === 0) return;
  await db.query(
    `insert into log_tiles (project_id, environment, level, n, data)
     select $1, $2, t.level, t.n, t.data
       from unnest($3::int2[], $4::int8[], $5::bytea[]) as t(level, n, data)
     on conflict (project_id, environment, level, n) do update set data = excluded.data`,
    [
      log.projectId,
      log.environment,
      tiles.map((tile) => tile.level),
      tiles.map((tile) => String(tile.n)),
      tiles.map((tile) => Buffer.from(tile.data.buffer, tile.data.byteOffset, tile.data.length)),
    ],
  );
}

/** The key of a log's tile in the answer of readTilesOfLogs. */
export function logTileKey(log: LogAddress, level: number, n: number): string {
  return `${log.projectId}/${log.environment}/${level}/${n}`;
}

/**
 * Reads tiles of several logs in one query, by logTileKey (absent tiles are left out): what
 * an append to the trees of every log of an integrator pass needs.
 */
export async function readTilesOfLogs(
  db: Queryable,
  wanted: readonly { log: LogAddress; level: number; n: number }[],
): Promise<Map<string, Uint8Array>> {
  if (wanted.length === 0) return new Map();
  // One index probe per tile, as in readTiles.
  const rows = await db.query<TileRecord & { project_id: string; environment: string }>(
    `select w.project_id, w.environment, w.level, w.n::text as n, t.data
       from unnest($1::uuid[], $2::text[], $3::int2[], $4::int8[])
              as w(project_id, environment, level, n)
      cross join lateral (
        select t.data from log_tiles t
         where t.project_id = w.project_id and t.environment = w.environment
           and t.level = w.level and t.n = w.n
        offset 0) as t`,
    [
      wanted.map((w) => w.log.projectId),
      wanted.map((w) => w.log.environment),
      wanted.map((w) => w.level),
      wanted.map((w) => String(w.n)),
    ],
  );
  return new Map(
    rows.map((row) => [
      logTileKey(
        { projectId: row.project_id, environment: row.environment },
        Number(row.level),
        Number(row.n),
      ),
      new Uint8Array(row.data),
    ]),
  );
}

/** New bytes for the end of a tile: its data from byte `at` on (0: a new tile). */
export interface TileExtension {
  readonly log: LogAddress;
  readonly level: number;
  readonly n: number;
  /** Where the new bytes start: the tile's length now. */
  readonly at: number;
  readonly data: Uint8Array;
}

/** A tree's growth: its size now and its new size. */
export interface TreeGrowth {
  readonly log: LogAddress;
  readonly oldSize: number;
  readonly size: number;
}

/**
 * Extends tiles by their new bytes and sets the trees' new sizes, in one statement. Only
 * the new bytes travel: each tile is extended in place (`data || new`), and only where it
 * is exactly `at` bytes long (a new tile only where none is), each tree only where its
 * size is `oldSize`. Throws, naming the first tile or tree that was not where expected,
 * unless every one was (the caller's transaction then rolls back).
 */
export async function extendTiles(
  db: Queryable,
  extensions: readonly TileExtension[],
  growths: readonly TreeGrowth[],
): Promise<void> {
  if (extensions.length === 0 && growths.length === 0) return;
  const rows = await db.query<{
    project_id: string;
    environment: string;
    level: number | null;
    n: string | null;
  }>(
    `with x as (
       select * from unnest($1::uuid[], $2::text[], $3::int2[], $4::int8[], $5::int4[], $6::bytea[])
                  as x(project_id, environment, level, n, at, data)),
     extended as (
       update log_tiles t set data = t.data || x.data
         from x
        where x.at > 0 and t.project_id = x.project_id and t.environment = x.environment
          and t.level = x.level and t.n = x.n and length(t.data) = x.at
       returning t.project_id, t.environment, t.level, t.n),
     created as (
       insert into log_tiles (project_id, environment, level, n, data)
       select x.project_id, x.environment, x.level, x.n, x.data from x where x.at = 0
       on conflict (project_id, environment, level, n) do nothing
       returning project_id, environment, level, n),
     g as (
       select * from unnest($7::uuid[], $8::text[], $9::int8[], $10::int8[])
                  as g(project_id, environment, old_size, size)),
     grown as (
       update log_trees t set size = g.size
         from g
        where g.old_size > 0 and t.project_id = g.project_id
          and t.environment = g.environment and t.size = g.old_size
       returning t.project_id, t.environment),
     planted as (
       insert into log_trees as t (project_id, environment, size)
       select g.project_id, g.environment, g.size from g where g.old_size = 0
       on conflict (project_id, environment) do update set size = excluded.size
        where t.size = 0
       returning t.project_id, t.environment)
     select project_id, environment, level, n::text as n from extended
     union all select project_id, environment, level, n::text from created
     union all select project_id, environment, null, null from grown
     union all select project_id, environment, null, null from planted`,
    [
      extensions.map((x) => x.log.projectId),
      extensions.map((x) => x.log.environment),
      extensions.map((x) => x.level),
      extensions.map((x) => String(x.n)),
      extensions.map((x) => x.at),
      extensions.map((x) => Buffer.from(x.data.buffer, x.data.byteOffset, x.data.length)),
      growths.map((g) => g.log.projectId),
      growths.map((g) => g.log.environment),
      growths.map((g) => String(g.oldSize)),
      growths.map((g) => String(g.size)),
    ],
  );
  if (rows.length === extensions.length + growths.length) return;
  const done = new Set(
    rows.map((row) =>
      row.level === null
        ? `${row.project_id}/${row.environment}`
        : logTileKey(
            { projectId: row.project_id, environment: row.environment },
            row.level,
            Number(row.n),
          ),
    ),
  );
  const sizeOf = new Map(
    growths.map((g) => [`${g.log.projectId}/${g.log.environment}`, g.oldSize]),
  );
  for (const x of extensions) {
    if (!done.has(logTileKey(x.log, x.level, x.n))) {
      throw new Error(
        `log tree: tile ${x.level}/${x.n} of ${x.log.projectId}/${x.log.environment} does not end at the tree size ${sizeOf.get(`${x.log.projectId}/${x.log.environment}`)}`,
      );
    }
  }
  for (const g of growths) {
    if (!done.has(`${g.log.projectId}/${g.log.environment}`)) {
      throw new Error(
        `log tree: the tree of ${g.log.projectId}/${g.log.environment} is not of size ${g.oldSize}`,
      );
    }
  }
  throw new Error("log tree: tiles or trees written twice");
}

/** Each log's tree size (0 before its first leaf), in order, in one query. */
export async function readTreeSizes(db: Queryable, logs: readonly LogAddress[]): Promise<number[]> {
  if (logs.length === 0) return [];
  const rows = await db.query<{ project_id: string; environment: string; size: string }>(
    `select t.project_id, t.environment, t.size::text as size
       from unnest($1::uuid[], $2::text[]) as l(project_id, environment)
       join log_trees t on t.project_id = l.project_id and t.environment = l.environment`,
    [logs.map((log) => log.projectId), logs.map((log) => log.environment)],
  );
  const sizes = new Map(
    rows.map((row) => [`${row.project_id}/${row.environment}`, Number(row.size)]),
  );
  return logs.map((log) => sizes.get(`${log.projectId}/${log.environment}`) ?? 0);
}

/**
 * A HashReader over a log's stored tiles: each call reads the tiles of all the hashes it
 * asks for in one query. The tiles must cover the hashes (a tree at least that large).
 */
export function tileHashReader(crypto: LogCrypto, db: Queryable, log: LogAddress): HashReader {
  return {
    async readHashes(indexes) {
      const tiles = indexes.map((index) => tileForIndex(TILE_HEIGHT, index));
      const data = tilesByKey(
        await readTiles(
          db,
          log,
          tiles.map((t) => ({ level: t.L, n: t.N })),
        ),
      );
      return Promise.all(
        indexes.map((index, i) => {
          const tile = tiles[i] as Tile;
          const bytes = data.get(key(tile.L, tile.N));
          if (bytes === undefined || bytes.length < tile.W * HASH_SIZE) {
            throw new Error(
              `log tree: tile ${tile.L}/${tile.N} missing or short for hash ${index}`,
            );
          }
          return hashFromTile(crypto, { ...tile, W: bytes.length / HASH_SIZE }, bytes, index);
        }),
      );
    },
  };
}

/** The leaf at a log index, from its leaf tile; undefined when not stored. */
export async function readLeaf(
  db: Queryable,
  log: LogAddress,
  logIndex: number,
): Promise<Uint8Array | undefined> {
  const n = Math.floor(logIndex / TILE_WIDTH);
  const [row] = await readTiles(db, log, [{ level: LEAF_LEVEL, n }]);
  const data = row?.data;
  const offset = (logIndex - n * TILE_WIDTH) * LEAF_SIZE;
  if (data === undefined || data.length < offset + LEAF_SIZE) return undefined;
  return data.slice(offset, offset + LEAF_SIZE);
}

/** A log's tree size (0 before its first leaf). */
export async function readTreeSize(db: Queryable, log: LogAddress): Promise<number> {
  const rows = await db.query<{ size: string }>(
    "select size::text as size from log_trees where project_id = $1 and environment = $2",
    [log.projectId, log.environment],
  );
  return rows[0] === undefined ? 0 : Number(rows[0].size);
}

/** Sets a log's tree size. */
export async function writeTreeSize(db: Queryable, log: LogAddress, size: number): Promise<void> {
  await db.query(
    `insert into log_trees (project_id, environment, size) values ($1, $2, $3)
     on conflict (project_id, environment) do update set size = excluded.size`,
    [log.projectId, log.environment, size],
  );
}

/** Logs whose tree is larger than their latest checkpoint. */
export async function logsToCheckpoint(db: Queryable): Promise<(LogAddress & { size: number })[]> {
  const rows = await db.query<{ project_id: string; environment: string; size: string }>(
    `select t.project_id, t.environment, t.size::text as size
       from log_trees t
      where t.size > coalesce((select max(c.size) from log_checkpoints c
                                where c.project_id = t.project_id
                                  and c.environment = t.environment), 0)`,
  );
  return rows.map((row) => ({
    projectId: row.project_id,
    environment: row.environment,
    size: Number(row.size),
  }));
}

/**
 * Logs whose tree holds fewer leaves than the log has numbered events (a database
 * migrated to the verifiable log, until the backfill has caught up), with their lock ids.
 */
export async function logsBehind(db: Queryable): Promise<(LogAddress & { lockId: number })[]> {
  const rows = await db.query<{ lock_id: number; project_id: string; environment: string }>(
    `select l.lock_id, l.project_id, l.environment
       from event_logs l
       left join log_trees t on t.project_id = l.project_id and t.environment = l.environment
      where l.size > coalesce(t.size, 0)
      order by l.lock_id`,
  );
  return rows.map((row) => ({
    lockId: row.lock_id,
    projectId: row.project_id,
    environment: row.environment,
  }));
}

/** Stores a published checkpoint; one of the same size already there is kept. */
export async function insertCheckpoint(
  db: Queryable,
  log: LogAddress,
  checkpoint: { size: number; root: Hash; note: string },
): Promise<void> {
  await db.query(
    `insert into log_checkpoints (project_id, environment, size, root, note)
     values ($1, $2, $3, $4, $5)
     on conflict (project_id, environment, size) do nothing`,
    [log.projectId, log.environment, checkpoint.size, checkpoint.root, checkpoint.note],
  );
}

/**
 * The issuers (the first part of the origin, before its first `/`) that the logs' latest
 * checkpoints name, sorted: one when every log's latest has the same, none before the
 * first checkpoint. The latest only: a log whose history already mixes issuers (a change
 * made before the check existed) goes on under the one it last published.
 */
export async function publishedIssuers(db: Queryable): Promise<string[]> {
  const issuers = new Set<string>();
  for (const latest of await latestCheckpoints(db)) issuers.add(latest.note.split("/", 1)[0] ?? "");
  return [...issuers].sort();
}

/** Every log's latest checkpoint: its size, root and note (one indexed read per log). */
export async function latestCheckpoints(
  db: Queryable,
): Promise<(LogAddress & { size: number; root: Hash; note: string })[]> {
  const rows = await db.query<{
    project_id: string;
    environment: string;
    size: string;
    root: Uint8Array;
    note: string;
  }>(
    `select t.project_id, t.environment, c.size::text as size, c.root, c.note
       from log_trees t
       cross join lateral (
         select size, root, note from log_checkpoints c
          where c.project_id = t.project_id and c.environment = t.environment
          order by c.size desc limit 1) c`,
  );
  return rows.map((row) => ({
    projectId: row.project_id,
    environment: row.environment,
    size: Number(row.size),
    root: new Uint8Array(row.root),
    note: row.note,
  }));
}

/**
 * Replaces a published checkpoint's note by the same checkpoint with one more signature
 * (checkpoint-publisher.ts, after a key rotation). False when the note changed since it
 * was read (another instance signed it first): nothing is written then.
 */
export async function cosignCheckpoint(
  db: Queryable,
  log: LogAddress & { size: number },
  note: { was: string; now: string },
): Promise<boolean> {
  const rows = await db.query(
    `update log_checkpoints set note = $5
      where project_id = $1 and environment = $2 and size = $3 and note = $4
      returning 1`,
    [log.projectId, log.environment, log.size, note.was, note.now],
  );
  return rows.length > 0;
}

interface CheckpointRow {
  size: string;
  root: Uint8Array;
  note: string;
  published_at: Date;
}

function checkpointOf(row: CheckpointRow): StoredCheckpoint {
  return {
    size: Number(row.size),
    root: new Uint8Array(row.root),
    note: row.note,
    publishedAt: row.published_at,
  };
}

/** The latest checkpoint of a log, or the one of a given size; undefined when none. */
export async function readCheckpoint(
  db: Queryable,
  log: LogAddress,
  size?: number,
): Promise<StoredCheckpoint | undefined> {
  const rows =
    size === undefined
      ? await db.query<CheckpointRow>(
          // Ordered by the column, not by the text alias ("5" > "12").
          `select c.size::text as size, c.root, c.note, c.published_at from log_checkpoints c
            where c.project_id = $1 and c.environment = $2 order by c.size desc limit 1`,
          [log.projectId, log.environment],
        )
      : await db.query<CheckpointRow>(
          `select size::text as size, root, note, published_at from log_checkpoints
            where project_id = $1 and environment = $2 and size = $3`,
          [log.projectId, log.environment, size],
        );
  return rows[0] === undefined ? undefined : checkpointOf(rows[0]);
}

/** What an inclusion proof starts from, read in one query (locateForProof). */
export interface ProofStart {
  /** The event's log index; undefined when the log has no such event (for the tenant). */
  readonly logIndex: number | undefined;
  /** The latest checkpoint, or the one of the size asked for; undefined when none. */
  readonly checkpoint: StoredCheckpoint | undefined;
  /** The event's leaf, when the event is in the checkpoint. */
  readonly leaf: Uint8Array | undefined;
  /**
   * The event's bottom hash tile, when the event is in the checkpoint: the tile a proof of
   * a random event rarely finds cached.
   */
  readonly tiles: TileRow[];
}

/**
 * An event's log index, the checkpoint (the latest, or of `size`), and, when the event is
 * in it, its leaf and its level-0 hash tile: one round trip for what the proof of an
 * event needs first.
 * Without a tenant, an erased event is found by its tombstone (docs/lifecycle.md): its
 * leaf is still in the tree, so its inclusion proof still verifies.
 */
export async function locateForProof(
  db: Queryable,
  log: LogAddress,
  eventId: string,
  tenantIdx: Uint8Array | undefined,
  size: number | undefined,
): Promise<ProofStart> {
  const params: unknown[] = [log.projectId, log.environment, eventId, size ?? null];
  let tenant = "";
  if (tenantIdx !== undefined) {
    params.push(tenantIdx);
    tenant = " and i.tenant_idx = $5";
  }
  const erased =
    tenantIdx === undefined
      ? ` union all select t.log_index from event_tombstones t
           where t.project_id = $1 and t.environment = $2 and t.id = $3`
      : "";
  // Two statement texts (latest, or of a size), so that each has a plan that uses the key.
  // Each tile is one index probe (see readTiles); of the leaf tile only the leaf is sent.
  const checkpoint =
    size === undefined
      ? `select c.size, c.root, c.note, c.published_at from log_checkpoints c
          where c.project_id = $1 and c.environment = $2 and $4::int8 is null
          order by c.size desc limit 1`
      : `select c.size, c.root, c.note, c.published_at from log_checkpoints c
          where c.project_id = $1 and c.environment = $2 and c.size = $4::int8`;
  const [row] = await db.query<{
    log_index: string | null;
    size: string | null;
    root: Uint8Array | null;
    note: string | null;
    published_at: Date | null;
    leaf: Uint8Array | null;
    tile_n: string | null;
    tile: Uint8Array | null;
  }>(
    `select i.log_index::text as log_index, c.size::text as size, c.root, c.note,
            c.published_at, l.leaf, h.n::text as tile_n, h.data as tile
       from (select 1) as one
       left join (select i.log_index from event_index i
                   where i.project_id = $1 and i.environment = $2 and i.id = $3${tenant}${erased}
                   limit 1) as i on true
       left join lateral (${checkpoint}) as c on true
       left join lateral (
         select substring(t.data from (i.log_index % ${TILE_WIDTH})::int4 * ${LEAF_SIZE} + 1
                          for ${LEAF_SIZE}) as leaf
           from log_tiles t
          where t.project_id = $1 and t.environment = $2 and t.level = ${LEAF_LEVEL}
            and t.n = i.log_index / ${TILE_WIDTH} and i.log_index < c.size
         offset 0) as l on true
       left join lateral (
         select t.n, t.data from log_tiles t
          where t.project_id = $1 and t.environment = $2 and t.level = 0
            and t.n = i.log_index / ${TILE_WIDTH} and i.log_index < c.size
         offset 0) as h on true`,
    params,
  );
  const found =
    row?.size == null || row.root === null || row.note === null || row.published_at === null
      ? undefined
      : checkpointOf({
          size: row.size,
          root: row.root,
          note: row.note,
          published_at: row.published_at,
        });
  return {
    logIndex: row?.log_index == null ? undefined : Number(row.log_index),
    checkpoint: found,
    leaf: row?.leaf == null || row.leaf.length !== LEAF_SIZE ? undefined : new Uint8Array(row.leaf),
    tiles:
      row?.tile_n == null || row.tile === null
        ? []
        : [tileOf({ level: 0, n: row.tile_n, data: row.tile })],
  };
}

/** The checkpoints of the given sizes that were published, by size. */
export async function readCheckpoints(
  db: Queryable,
  log: LogAddress,
  sizes: readonly number[],
): Promise<Map<number, StoredCheckpoint>> {
  const rows = await db.query<CheckpointRow>(
    `select size::text as size, root, note, published_at from log_checkpoints
      where project_id = $1 and environment = $2 and size = any($3::int8[])`,
    [log.projectId, log.environment, sizes.map(String)],
  );
  return new Map(rows.map((row) => [Number(row.size), checkpointOf(row)]));
}
