/**
 * AdminService: projects, plans, API keys and data-key rotation. Every call needs the
 * admin token (`authorization: Bearer <ADMIN_TOKEN>`); without a configured token the
 * service refuses all calls. API key secrets are returned once, at creation, and only
 * their hash is stored.
 */

import { createHash, timingSafeEqual } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import {
  AdminService,
  type ApiKey,
  ApiKeySchema,
  ApiKeyStatus,
  CreateApiKeyRequestSchema,
  CreateApiKeyResponseSchema,
  CreateProjectRequestSchema,
  CreateProjectResponseSchema,
  Environment,
  ListApiKeysRequestSchema,
  ListApiKeysResponseSchema,
  ListProjectsResponseSchema,
  Plan,
  type Project,
  ProjectSchema,
  RetireApiKeyRequestSchema,
  RetireApiKeyResponseSchema,
  RevokeApiKeyRequestSchema,
  RevokeApiKeyResponseSchema,
  RotateProjectKeyRequestSchema,
  RotateProjectKeyResponseSchema,
  SetProjectPlanRequestSchema,
  SetProjectPlanResponseSchema,
} from "../../gen/audit/v1/admin_pb.js";
import { generateApiKey } from "../auth/api-keys.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { Keyring } from "../crypto/keyring.js";
import { ServiceError } from "../errors.js";
import { isUuid } from "../ids.js";
import type {
  ApiKeyRecord,
  EnvironmentName,
  PlanName,
  ProjectRecord,
  ProjectStore,
} from "../store/projects.js";
import type { Operation, OperationCall, Operations } from "../transport/operation.js";
import { decodeRequest } from "../transport/request-json.js";

/** Dependencies of the admin service. */
export interface AdminDeps {
  projects: ProjectStore;
  keyring: Keyring;
  authenticator: Authenticator;
  /** The admin token; undefined disables the service. */
  adminToken: string | undefined;
}

const PLAN_NAMES: Record<number, PlanName | undefined> = {
  [Plan.FREE]: "free",
  [Plan.START]: "start",
  [Plan.PRO]: "pro",
};
const PLANS: Record<PlanName, Plan> = { free: Plan.FREE, start: Plan.START, pro: Plan.PRO };
const ENVIRONMENT_NAMES: Record<number, EnvironmentName | undefined> = {
  [Environment.TEST]: "test",
  [Environment.LIVE]: "live",
};
const STATUSES = {
  active: ApiKeyStatus.ACTIVE,
  revoked: ApiKeyStatus.REVOKED,
  retired: ApiKeyStatus.RETIRED,
} as const;

/** The project as the API shows it. */
export function projectMessage(project: ProjectRecord): Project {
  return create(ProjectSchema, {
    id: project.id,
    name: project.name,
    plan: PLANS[project.plan],
    createdAt: project.createdAt.toISOString(),
    keyVersion: project.keyVersion,
  });
}

/** The API key as the API shows it (never its secret). */
export function apiKeyMessage(key: ApiKeyRecord): ApiKey {
  return create(ApiKeySchema, {
    id: key.id,
    projectId: key.projectId,
    environment: key.environment === "live" ? Environment.LIVE : Environment.TEST,
    status: STATUSES[key.status],
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    ...(key.statusChangedAt ? { statusChangedAt: key.statusChangedAt.toISOString() } : {}),
  });
}

/** The operations of AdminService. */
export function adminOperations(deps: AdminDeps): Operations {
  const { projects, keyring, authenticator } = deps;
  const expected = deps.adminToken
    ? createHash("sha256").update(deps.adminToken).digest()
    : undefined;

  // Compares digests, so the comparison takes the same time whatever the token.
  const guard = (call: OperationCall) => {
    if (!expected) {
      throw new ServiceError("permission_denied", "The admin API is disabled: set ADMIN_TOKEN");
    }
    const presented = /^Bearer\s+(.+)$/i.exec(call.header("authorization") ?? "")?.[1]?.trim();
    if (!presented) throw new ServiceError("unauthenticated", "Missing admin token");
    const digest = createHash("sha256").update(presented).digest();
    if (!timingSafeEqual(digest, expected)) {
      throw new ServiceError("unauthenticated", "Invalid admin token");
    }
  };

  const projectId = (id: string) => {
    if (!isUuid(id)) throw new ServiceError("bad_request", "projectId must be a UUID");
    return id;
  };
  const requireProject = async (id: string) => {
    const project = await projects.getProject(projectId(id));
    if (!project) throw new ServiceError("not_found", `Project ${id} not found`);
    return project;
  };
  const planName = (plan: Plan, fallback?: PlanName) => {
    const name = PLAN_NAMES[plan] ?? (plan === Plan.UNSPECIFIED ? fallback : undefined);
    if (!name)
      throw new ServiceError("bad_request", "plan must be PLAN_FREE, PLAN_START or PLAN_PRO");
    return name;
  };
  const changeStatus = async (id: string, status: "revoked" | "retired") => {
    if (!isUuid(id)) throw new ServiceError("bad_request", "id must be a UUID");
    const key = await projects.setApiKeyStatus(id, status);
    if (!key) throw new ServiceError("not_found", `API key ${id} not found`);
    authenticator.invalidate();
    return key;
  };

  const m = AdminService.method;
  const operations: [(typeof m)[keyof typeof m], Operation][] = [
    [
      m.createProject,
      async (call) => {
        const request = decodeRequest(CreateProjectRequestSchema, call);
        const name = request.name.trim();
        if (name.length === 0 || name.length > 200) {
          throw new ServiceError("bad_request", "name must be 1 to 200 characters");
        }
        const project = await projects.createProject(name, planName(request.plan, "free"));
        return {
          message: create(CreateProjectResponseSchema, { project: projectMessage(project) }),
        };
      },
    ],
    [
      m.listProjects,
      async () => {
        const all = await projects.listProjects();
        return {
          message: create(ListProjectsResponseSchema, { projects: all.map(projectMessage) }),
        };
      },
    ],
    [
      m.setProjectPlan,
      async (call) => {
        const request = decodeRequest(SetProjectPlanRequestSchema, call);
        const plan = planName(request.plan);
        const project = await projects.setPlan(projectId(request.projectId), plan);
        if (!project) throw new ServiceError("not_found", `Project ${request.projectId} not found`);
        authenticator.invalidate();
        return {
          message: create(SetProjectPlanResponseSchema, { project: projectMessage(project) }),
        };
      },
    ],
    [
      m.createApiKey,
      async (call) => {
        const request = decodeRequest(CreateApiKeyRequestSchema, call);
        const environment = ENVIRONMENT_NAMES[request.environment];
        if (!environment) {
          throw new ServiceError(
            "bad_request",
            "environment must be ENVIRONMENT_TEST or ENVIRONMENT_LIVE",
          );
        }
        const project = await requireProject(request.projectId);
        const key = generateApiKey(environment);
        const record = await projects.createApiKey({
          projectId: project.id,
          environment,
          keyHash: key.hash,
          prefix: key.prefix,
        });
        // A cached "unknown key" answer for this secret must not outlive its creation.
        authenticator.invalidate();
        return {
          message: create(CreateApiKeyResponseSchema, {
            apiKey: apiKeyMessage(record),
            secret: key.secret,
          }),
        };
      },
    ],
    [
      m.listApiKeys,
      async (call) => {
        const request = decodeRequest(ListApiKeysRequestSchema, call);
        const project = await requireProject(request.projectId);
        const keys = await projects.listApiKeys(project.id);
        return { message: create(ListApiKeysResponseSchema, { apiKeys: keys.map(apiKeyMessage) }) };
      },
    ],
    [
      m.revokeApiKey,
      async (call) => {
        const request = decodeRequest(RevokeApiKeyRequestSchema, call);
        const key = await changeStatus(request.id, "revoked");
        return { message: create(RevokeApiKeyResponseSchema, { apiKey: apiKeyMessage(key) }) };
      },
    ],
    [
      m.retireApiKey,
      async (call) => {
        const request = decodeRequest(RetireApiKeyRequestSchema, call);
        const key = await changeStatus(request.id, "retired");
        return { message: create(RetireApiKeyResponseSchema, { apiKey: apiKeyMessage(key) }) };
      },
    ],
    [
      m.rotateProjectKey,
      async (call) => {
        const request = decodeRequest(RotateProjectKeyRequestSchema, call);
        const project = await requireProject(request.projectId);
        await keyring.rotate(project.id);
        const rotated = await requireProject(project.id);
        return {
          message: create(RotateProjectKeyResponseSchema, { project: projectMessage(rotated) }),
        };
      },
    ],
  ];
  return new Map(
    operations.map(([method, operation]) => [
      method,
      async (call: OperationCall) => {
        guard(call);
        return operation(call);
      },
    ]),
  );
}
