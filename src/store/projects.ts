/**
 * Projects and their API keys. A key is stored as the SHA-256 hash of its secret,
 * looked up through a unique index, with a short display prefix; the secret itself is
 * never stored.
 */
import type { Keyring } from "../crypto/keyring.js";
import { uuidv7 } from "../ids.js";
import type { ApiKeyStatusName, EnvironmentName, PlanName } from "../vocabulary/tenancy.js";
import type { Db } from "./db.js";

/** A project as stored. */
export interface ProjectRecord {
  id: string;
  name: string;
  plan: PlanName;
  createdAt: Date;
  keyVersion: number;
}

/** An API key as stored (without its secret). */
export interface ApiKeyRecord {
  id: string;
  projectId: string;
  environment: EnvironmentName;
  status: ApiKeyStatusName;
  prefix: string;
  createdAt: Date;
  statusChangedAt: Date | null;
}

/** An API key with its project's plan, as authentication needs it. */
export interface ApiKeyIdentity extends ApiKeyRecord {
  plan: PlanName;
}

interface ProjectRow {
  id: string;
  name: string;
  plan: PlanName;
  created_at: Date;
  key_version: number;
}

interface ApiKeyRow {
  id: string;
  project_id: string;
  environment: EnvironmentName;
  status: ApiKeyStatusName;
  prefix: string;
  created_at: Date;
  status_changed_at: Date | null;
}

const PROJECT_COLUMNS = `p.id, p.name, p.plan, p.created_at,
  (select max(version) from project_keys k where k.project_id = p.id)::int as key_version`;
const API_KEY_COLUMNS =
  "k.id, k.project_id, k.environment, k.status, k.prefix, k.created_at, k.status_changed_at";

const toProject = (row: ProjectRow): ProjectRecord => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  createdAt: row.created_at,
  keyVersion: row.key_version,
});

const toApiKey = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  projectId: row.project_id,
  environment: row.environment,
  status: row.status,
  prefix: row.prefix,
  createdAt: row.created_at,
  statusChangedAt: row.status_changed_at,
});

/** The repository of projects and API keys. */
export interface ProjectStore {
  createProject(name: string, plan: PlanName): Promise<ProjectRecord>;
  listProjects(): Promise<ProjectRecord[]>;
  getProject(id: string): Promise<ProjectRecord | undefined>;
  setPlan(id: string, plan: PlanName): Promise<ProjectRecord | undefined>;
  createApiKey(input: {
    projectId: string;
    environment: EnvironmentName;
    keyHash: Buffer;
    prefix: string;
  }): Promise<ApiKeyRecord>;
  listApiKeys(projectId: string): Promise<ApiKeyRecord[]>;
  /** Moves an active key to `revoked` or `retired`; retired is final. */
  setApiKeyStatus(id: string, status: "revoked" | "retired"): Promise<ApiKeyRecord | undefined>;
  getApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  findApiKeyByHash(keyHash: Buffer): Promise<ApiKeyIdentity | undefined>;
}

/** Creates the repository. */
export function createProjectStore(db: Db, keyring: Keyring): ProjectStore {
  const getProject = async (id: string) => {
    const [row] = await db.query<ProjectRow>(
      `select ${PROJECT_COLUMNS} from projects p where p.id = $1`,
      [id],
    );
    return row ? toProject(row) : undefined;
  };
  const getApiKey = async (id: string) => {
    const [row] = await db.query<ApiKeyRow>(
      `select ${API_KEY_COLUMNS} from api_keys k where k.id = $1`,
      [id],
    );
    return row ? toApiKey(row) : undefined;
  };

  return {
    async createProject(name, plan) {
      const id = uuidv7();
      const keys = keyring.newProjectKeys(id);
      await db.transaction(async (tx) => {
        await tx.query(
          "insert into projects (id, name, plan, wrapped_index_key) values ($1, $2, $3, $4)",
          [id, name, plan, keys.wrappedIndexKey],
        );
        await tx.query(
          "insert into project_keys (project_id, version, wrapped_key) values ($1, 1, $2)",
          [id, keys.wrappedDataKey],
        );
      });
      const project = await getProject(id);
      if (!project) throw new Error("project vanished after insert");
      return project;
    },
    async listProjects() {
      const rows = await db.query<ProjectRow>(
        `select ${PROJECT_COLUMNS} from projects p order by p.created_at, p.id`,
      );
      return rows.map(toProject);
    },
    getProject,
    async setPlan(id, plan) {
      const rows = await db.query("update projects set plan = $2 where id = $1 returning id", [
        id,
        plan,
      ]);
      return rows.length > 0 ? getProject(id) : undefined;
    },
    async createApiKey(input) {
      const id = uuidv7();
      const [row] = await db.query<ApiKeyRow>(
        `insert into api_keys (id, project_id, environment, key_hash, prefix)
         values ($1, $2, $3, $4, $5)
         returning ${API_KEY_COLUMNS.replaceAll("k.", "")}`,
        [id, input.projectId, input.environment, input.keyHash, input.prefix],
      );
      if (!row) throw new Error("api key insert returned no row");
      return toApiKey(row);
    },
    async listApiKeys(projectId) {
      const rows = await db.query<ApiKeyRow>(
        `select ${API_KEY_COLUMNS} from api_keys k where k.project_id = $1 order by k.created_at, k.id`,
        [projectId],
      );
      return rows.map(toApiKey);
    },
    async setApiKeyStatus(id, status) {
      // A retired key stays retired; revoking a revoked key changes nothing.
      await db.query(
        `update api_keys set status = $2, status_changed_at = now()
          where id = $1 and status <> 'retired' and status <> $2`,
        [id, status],
      );
      return getApiKey(id);
    },
    getApiKey,
    async findApiKeyByHash(keyHash) {
      const [row] = await db.query<ApiKeyRow & { plan: PlanName }>(
        `select ${API_KEY_COLUMNS}, p.plan from api_keys k
           join projects p on p.id = k.project_id
          where k.key_hash = $1`,
        [keyHash],
      );
      return row ? { ...toApiKey(row), plan: row.plan } : undefined;
    },
  };
}
