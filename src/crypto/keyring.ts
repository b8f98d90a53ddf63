/**
 * Envelope encryption of project data keys. The master key (MASTER_KEY) wraps one data
 * key per project and version, and one blind-index key per project; only wrapped keys
 * are stored. Unwrapped keys are cached in memory, up to a bound. Deleting a project's
 * keys makes its events unreadable (crypto-shredding).
 */
import { randomBytes } from "node:crypto";
import type { Db, Queryable } from "../store/db.js";
import { open, seal } from "./aead.js";

/** The keys of one project as the request path needs them. */
export interface ProjectKeys {
  projectId: string;
  /** The version new ciphertext is written with. */
  currentVersion: number;
  indexKey: Buffer;
  /** The data key of a version (the current one is always loaded). */
  dataKey(version: number): Promise<Buffer>;
}

/** Creates, rotates and loads project keys. */
export interface Keyring {
  /** New random keys for a new project, wrapped: its index key and data key version 1. */
  newProjectKeys(projectId: string): { wrappedIndexKey: Buffer; wrappedDataKey: Buffer };
  /** Adds a data key version and makes it current; returns the new version. */
  rotate(projectId: string): Promise<number>;
  /**
   * The project's keys, from the cache when they are there. Keys not cached are read
   * through `via` when given: a transaction in progress (on PGlite, whose one connection
   * that transaction holds, a read outside it would wait for it forever).
   */
  forProject(projectId: string, via?: Queryable): Promise<ProjectKeys>;
  /**
   * Whether the master key opens the keys stored in the database (those of its newest
   * project; true with no project yet): false when the database was written with
   * another MASTER_KEY.
   */
  opensStoredKeys(): Promise<boolean>;
}

interface CachedProject {
  projectId: string;
  currentVersion: number;
  indexKey: Buffer;
  dataKeys: Map<number, Buffer>;
  loadedAt: number;
}

/** Options of the keyring. */
export interface KeyringOptions {
  db: Db;
  masterKey: Buffer;
  /** How many projects' keys stay in memory. */
  cacheSize?: number;
  /**
   * How long a cached current version is trusted, so that a rotation on another instance
   * is picked up (default 5 s, as API keys' revocation: a rotation after a suspected
   * compromise must not leave a long window).
   */
  currentVersionTtlMs?: number;
  now?: () => number;
}

/** Creates the keyring. */
export function createKeyring(options: KeyringOptions): Keyring {
  const { db, masterKey } = options;
  const cacheSize = options.cacheSize ?? 10_000;
  const ttl = options.currentVersionTtlMs ?? 5_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, CachedProject>();

  const dataKeyAad = (projectId: string, version: number) => `data-key:${projectId}:${version}`;
  const indexKeyAad = (projectId: string) => `index-key:${projectId}`;

  const remember = (entry: CachedProject) => {
    cache.delete(entry.projectId);
    cache.set(entry.projectId, entry);
    if (cache.size > cacheSize) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
  };

  const load = async (projectId: string, q: Queryable): Promise<CachedProject> => {
    const [project] = await q.query<{ wrapped_index_key: Uint8Array; version: number }>(
      `select p.wrapped_index_key, k.version from projects p
         join project_keys k on k.project_id = p.id
        where p.id = $1 order by k.version desc limit 1`,
      [projectId],
    );
    if (!project) throw new Error(`no keys for project ${projectId}`);
    const entry: CachedProject = {
      projectId,
      currentVersion: project.version,
      indexKey: open(masterKey, project.wrapped_index_key, indexKeyAad(projectId)),
      dataKeys: cache.get(projectId)?.dataKeys ?? new Map(),
      loadedAt: now(),
    };
    await loadDataKey(entry, project.version, q);
    remember(entry);
    return entry;
  };

  const loadDataKey = async (
    entry: CachedProject,
    version: number,
    q: Queryable,
  ): Promise<Buffer> => {
    const known = entry.dataKeys.get(version);
    if (known) return known;
    const [row] = await q.query<{ wrapped_key: Uint8Array }>(
      "select wrapped_key from project_keys where project_id = $1 and version = $2",
      [entry.projectId, version],
    );
    if (!row) throw new Error(`no data key version ${version} for project ${entry.projectId}`);
    const key = open(masterKey, row.wrapped_key, dataKeyAad(entry.projectId, version));
    entry.dataKeys.set(version, key);
    return key;
  };

  const view = (entry: CachedProject, q: Queryable): ProjectKeys => ({
    projectId: entry.projectId,
    currentVersion: entry.currentVersion,
    indexKey: entry.indexKey,
    dataKey: (version) => loadDataKey(entry, version, q),
  });

  return {
    newProjectKeys(projectId) {
      return {
        wrappedIndexKey: seal(masterKey, randomBytes(32), indexKeyAad(projectId)),
        wrappedDataKey: seal(masterKey, randomBytes(32), dataKeyAad(projectId, 1)),
      };
    },
    async rotate(projectId) {
      const version = await db.transaction(async (tx) => {
        // Row lock on the project: concurrent rotations get consecutive versions.
        await tx.query("select id from projects where id = $1 for update", [projectId]);
        const [row] = await tx.query<{ next: number }>(
          "select coalesce(max(version), 0)::int + 1 as next from project_keys where project_id = $1",
          [projectId],
        );
        const next = row?.next ?? 1;
        await tx.query(
          "insert into project_keys (project_id, version, wrapped_key) values ($1, $2, $3)",
          [projectId, next, seal(masterKey, randomBytes(32), dataKeyAad(projectId, next))],
        );
        return next;
      });
      cache.delete(projectId);
      return version;
    },
    async opensStoredKeys() {
      const [project] = await db.query<{ id: string; wrapped_index_key: Uint8Array }>(
        "select id, wrapped_index_key from projects order by created_at desc limit 1",
      );
      if (!project) return true;
      try {
        open(masterKey, project.wrapped_index_key, indexKeyAad(project.id));
        return true;
      } catch {
        return false;
      }
    },

    async forProject(projectId, via = db) {
      const cached = cache.get(projectId);
      if (cached && now() - cached.loadedAt < ttl) return view(cached, via);
      return view(await load(projectId, via), via);
    },
  };
}
