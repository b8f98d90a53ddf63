/**
 * AdminService's rules: projects, plans, API keys and data-key rotation, for any
 * protocol (the admin token is checked before, by auth/admin-token.ts; the request's
 * shape by api/admin-operations.ts). API key secrets are returned once, at creation, and
 * only their hash is stored. Every change that alters what a key may do (plan, status,
 * a new key whose "unknown" answer may be cached) clears the authenticator's cache.
 */
import { generateApiKey } from "../auth/api-keys.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { Keyring } from "../crypto/keyring.js";
import { ServiceError } from "../errors.js";
import type { Db } from "../store/db.js";
import { type LogFigures, readLogFigures } from "../store/log-integration.js";
import type { ApiKeyRecord, ProjectRecord, ProjectStore } from "../store/projects.js";
import type { LogSigning } from "../verifiable-log/log-signing.js";
import type { EnvironmentName, PlanName } from "../vocabulary/tenancy.js";

/** Dependencies of the admin service. */
export interface AdminDeps {
  projects: ProjectStore;
  keyring: Keyring;
  authenticator: Authenticator;
  /** Where the logs' figures are read. */
  db: Db;
  /** The logs' signing identity, whose verifier keys the admin may read. */
  signing: Pick<LogSigning, "origin" | "verifierKey">;
}

/** A key just created, with its secret (shown once). */
export interface CreatedApiKey {
  record: ApiKeyRecord;
  secret: string;
}

/**
 * The admin operations. Ids are UUIDs (checked by the caller); an unknown one is a 404
 * `Project <id> not found` or `API key <id> not found`.
 */
export interface AdminService {
  createProject(name: string, plan: PlanName): Promise<ProjectRecord>;
  listProjects(): Promise<ProjectRecord[]>;
  setProjectPlan(projectId: string, plan: PlanName): Promise<ProjectRecord>;
  createApiKey(projectId: string, environment: EnvironmentName): Promise<CreatedApiKey>;
  listApiKeys(projectId: string): Promise<ApiKeyRecord[]>;
  setApiKeyStatus(id: string, status: "revoked" | "retired"): Promise<ApiKeyRecord>;
  /** A new data key for the project; its events stay readable. */
  rotateProjectKey(projectId: string): Promise<ProjectRecord>;
  /** How far a log is integrated (docs/write-path.md). */
  logPosition(projectId: string, environment: EnvironmentName): Promise<LogFigures>;
  /** A log's verifier key, as GET /api/log/key answers it (docs/verifiable-log.md). */
  logVerifierKey(projectId: string, environment: EnvironmentName): Promise<string>;
}

/** Creates the admin service. */
export function createAdminService(deps: AdminDeps): AdminService {
  const { projects, keyring, authenticator } = deps;

  const requireProject = async (id: string) => {
    const project = await projects.getProject(id);
    if (!project) throw new ServiceError("not_found", `Project ${id} not found`);
    return project;
  };

  return {
    createProject: (name, plan) => projects.createProject(name, plan),
    listProjects: () => projects.listProjects(),
    async setProjectPlan(projectId, plan) {
      const project = await projects.setPlan(projectId, plan);
      if (!project) throw new ServiceError("not_found", `Project ${projectId} not found`);
      authenticator.invalidate();
      return project;
    },
    async createApiKey(projectId, environment) {
      const project = await requireProject(projectId);
      const key = generateApiKey(environment);
      const record = await projects.createApiKey({
        projectId: project.id,
        environment,
        keyHash: key.hash,
        prefix: key.prefix,
      });
      // A cached "unknown key" answer for this secret must not outlive its creation.
      authenticator.invalidate();
      return { record, secret: key.secret };
    },
    async listApiKeys(projectId) {
      const project = await requireProject(projectId);
      return projects.listApiKeys(project.id);
    },
    async setApiKeyStatus(id, status) {
      const key = await projects.setApiKeyStatus(id, status);
      if (!key) throw new ServiceError("not_found", `API key ${id} not found`);
      authenticator.invalidate();
      return key;
    },
    async rotateProjectKey(projectId) {
      const project = await requireProject(projectId);
      await keyring.rotate(project.id);
      return requireProject(project.id);
    },
    async logPosition(projectId, environment) {
      const project = await requireProject(projectId);
      const figures = await readLogFigures(deps.db, project.id, environment);
      if (!figures) throw new ServiceError("not_found", `Project ${projectId} not found`);
      return figures;
    },
    async logVerifierKey(projectId, environment) {
      const project = await requireProject(projectId);
      return deps.signing.verifierKey(deps.signing.origin(project.id, environment));
    },
  };
}
