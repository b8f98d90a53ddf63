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

// What each wrapped key is bound to: a key wrapped for one project or version does not
// open as another's.
const dataKeyAad = (projectId: string, version: number) => `data-key:${projectId}:${version}`;
const indexKeyAad = (projectId: string) => `index-key:${projectId}`;

/** Creates the keyring. */
export function createKeyring(options: KeyringOptions): Keyring {
  const { db, masterKey } = options;
  const cacheSize = options.cacheSize ?? 10_000;
  const ttl = options.currentVersionTtlMs ?? 5_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, CachedProject>();

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

/** What rewrapStoredKeys did. */
export interface Rewrap {
  /** Keys now wrapped under the new master key that were under the old one. */
  rewrapped: number;
  /** Keys that were under the new master key already (a rotation run again). */
  alreadyNew: number;
}

/**
 * Re-wraps every stored key (each project's index key and every version of its data keys)
 * from `oldKey` to `newKey`, in one transaction: all of them or none. A key already under
 * `newKey` is left as it is, so a rotation that committed can be run again; a key that
 * opens under neither fails the whole (nothing changes): the old key is not the one the
 * data was written with. The events themselves are untouched: they are sealed under the
 * data keys, which do not change.
 */
export async function rewrapStoredKeys(db: Db, oldKey: Buffer, newKey: Buffer): Promise<Rewrap> {
  return db.transaction(async (tx) => {
    // No project created nor key rotated meanwhile (under the old key) until this commits.
    await tx.query("lock table projects, project_keys in exclusive mode");
    const projects = await tx.query<{ id: string; wrapped_index_key: Uint8Array }>(
      "select id, wrapped_index_key from projects order by id for update",
    );
    const dataKeys = await tx.query<{
      project_id: string;
      version: number;
      wrapped_key: Uint8Array;
    }>(
      "select project_id, version, wrapped_key from project_keys order by project_id, version for update",
    );
    const done: Rewrap = { rewrapped: 0, alreadyNew: 0 };
    /** The key re-wrapped under newKey, or undefined when it is under newKey already. */
    const rewrapped = (wrapped: Uint8Array, aad: string, what: string): Buffer | undefined => {
      let key: Buffer;
      try {
        key = open(oldKey, wrapped, aad);
      } catch {
        try {
          open(newKey, wrapped, aad);
        } catch {
          throw new Error(`${what} opens under neither the old nor the new master key`);
        }
        done.alreadyNew++;
        return undefined;
      }
      done.rewrapped++;
      return seal(newKey, key, aad);
    };
    for (const project of projects) {
      const now = rewrapped(
        project.wrapped_index_key,
        indexKeyAad(project.id),
        `the index key of project ${project.id}`,
      );
      if (now) {
        await tx.query("update projects set wrapped_index_key = $2 where id = $1", [
          project.id,
          now,
        ]);
      }
    }
    for (const row of dataKeys) {
      const now = rewrapped(
        row.wrapped_key,
        dataKeyAad(row.project_id, row.version),
        `data key version ${row.version} of project ${row.project_id}`,
      );
      if (now) {
        await tx.query(
          "update project_keys set wrapped_key = $3 where project_id = $1 and version = $2",
          [row.project_id, row.version, now],
        );
      }
    }
    return done;
  });
}
