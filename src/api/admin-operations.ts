/**
 * AdminService's operations over REST and every RPC protocol: each call presents the
 * admin token (auth/admin-token.ts) before anything else is looked at, then its request
 * is decoded and its shape checked (names, enum values, UUIDs: 400s, in the order the
 * fields are read), and the rule runs (admin/admin-service.ts).
 */
import { create, type DescMethod } from "@bufbuild/protobuf";
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
  GetLogPositionRequestSchema,
  GetLogPositionResponseSchema,
  GetLogVerifierKeyRequestSchema,
  GetLogVerifierKeyResponseSchema,
  ListApiKeysRequestSchema,
  ListApiKeysResponseSchema,
  ListProjectsResponseSchema,
  Plan,
  type Project,
  ProjectSchema,
  RetentionSchema,
  RetireApiKeyRequestSchema,
  RetireApiKeyResponseSchema,
  RevokeApiKeyRequestSchema,
  RevokeApiKeyResponseSchema,
  RotateProjectKeyRequestSchema,
  RotateProjectKeyResponseSchema,
  SetProjectPlanRequestSchema,
  SetProjectPlanResponseSchema,
  SetRetentionRequestSchema,
  SetRetentionResponseSchema,
} from "../../gen/audit/v1/admin_pb.js";
import type { AdminService as Admin } from "../admin/admin-service.js";
import type { AdminTokenGuard } from "../auth/admin-token.js";
import { bearerOf, unambiguous } from "../auth/credentials.js";
import { ServiceError } from "../errors.js";
import { isUuid } from "../ids.js";
import type { RetentionService } from "../lifecycle/retention-service.js";
import type { ApiKeyRecord, ProjectRecord } from "../store/projects.js";
import type { RetentionDays } from "../store/retention.js";
import { isStorableText } from "../vocabulary/storable-text.js";
import type { EnvironmentName, PlanName } from "../vocabulary/tenancy.js";
import { longerThan } from "../vocabulary/text-length.js";
import { decodeRequest } from "./decode-request.js";
import type { Operation, OperationCall, Operations } from "./operation.js";

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
export function projectMessage(
  project: ProjectRecord,
  retention: RetentionDays = { test: 0, live: 0 },
): Project {
  return create(ProjectSchema, {
    id: project.id,
    name: project.name,
    plan: PLANS[project.plan],
    createdAt: project.createdAt.toISOString(),
    keyVersion: project.keyVersion,
    retention: [
      create(RetentionSchema, {
        environment: Environment.TEST,
        retentionDays: retention.test,
      }),
      create(RetentionSchema, {
        environment: Environment.LIVE,
        retentionDays: retention.live,
      }),
    ],
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

/** The longest project name, in characters (code points). */
const MAX_PROJECT_NAME_CHARS = 200;

/** A project name: 1 to 200 characters once trimmed, storable as SQL text. */
function projectName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || longerThan(trimmed, MAX_PROJECT_NAME_CHARS)) {
    throw new ServiceError("bad_request", `name must be 1 to ${MAX_PROJECT_NAME_CHARS} characters`);
  }
  if (!isStorableText(trimmed)) {
    throw new ServiceError(
      "bad_request",
      "name must not contain NUL characters or unpaired surrogates",
    );
  }
  return trimmed;
}

/** A project id from a request: a UUID (400 otherwise). */
export function projectId(id: string): string {
  if (!isUuid(id)) throw new ServiceError("bad_request", "projectId must be a UUID");
  return id;
}

function apiKeyId(id: string): string {
  if (!isUuid(id)) throw new ServiceError("bad_request", "id must be a UUID");
  return id;
}

function planName(plan: Plan, fallback?: PlanName): PlanName {
  const name = PLAN_NAMES[plan] ?? (plan === Plan.UNSPECIFIED ? fallback : undefined);
  if (!name)
    throw new ServiceError("bad_request", "plan must be PLAN_FREE, PLAN_START or PLAN_PRO");
  return name;
}

/** A log's environment from a request: test or live (400 otherwise). */
export function environmentName(environment: Environment): EnvironmentName {
  const name = ENVIRONMENT_NAMES[environment];
  if (!name) {
    throw new ServiceError(
      "bad_request",
      "environment must be ENVIRONMENT_TEST or ENVIRONMENT_LIVE",
    );
  }
  return name;
}

/** The data-lifecycle rules AdminService serves besides its own (lifecycle/). */
export interface LifecycleRules {
  retention: RetentionService;
}

/** The operations of AdminService, each behind the admin token. */
export function adminOperations(
  admin: Admin,
  lifecycle: LifecycleRules,
  guard: AdminTokenGuard,
): Operations {
  const m = AdminService.method;
  // A project as every call returns it: with its retention (a new one keeps for ever).
  const shown = async (project: ProjectRecord) =>
    projectMessage(project, (await lifecycle.retention.retentionOf([project.id])).get(project.id));
  const operations: [(typeof m)[keyof typeof m], Operation][] = [
    [
      m.createProject,
      async (call) => {
        const request = decodeRequest(CreateProjectRequestSchema, call);
        const name = projectName(request.name);
        const project = await admin.createProject(name, planName(request.plan, "free"));
        return {
          message: create(CreateProjectResponseSchema, { project: projectMessage(project) }),
        };
      },
    ],
    [
      m.listProjects,
      async () => {
        const all = await admin.listProjects();
        const retention = await lifecycle.retention.retentionOf(all.map((each) => each.id));
        const projects = all.map((each) => projectMessage(each, retention.get(each.id)));
        return {
          message: create(ListProjectsResponseSchema, { projects }),
        };
      },
    ],
    [
      m.setProjectPlan,
      async (call) => {
        const request = decodeRequest(SetProjectPlanRequestSchema, call);
        const plan = planName(request.plan);
        const project = await admin.setProjectPlan(projectId(request.projectId), plan);
        return {
          message: create(SetProjectPlanResponseSchema, { project: await shown(project) }),
        };
      },
    ],
    [
      m.createApiKey,
      async (call) => {
        const request = decodeRequest(CreateApiKeyRequestSchema, call);
        const environment = environmentName(request.environment);
        const key = await admin.createApiKey(projectId(request.projectId), environment);
        return {
          message: create(CreateApiKeyResponseSchema, {
            apiKey: apiKeyMessage(key.record),
            secret: key.secret,
          }),
        };
      },
    ],
    [
      m.listApiKeys,
      async (call) => {
        const request = decodeRequest(ListApiKeysRequestSchema, call);
        const keys = await admin.listApiKeys(projectId(request.projectId));
        return { message: create(ListApiKeysResponseSchema, { apiKeys: keys.map(apiKeyMessage) }) };
      },
    ],
    [
      m.revokeApiKey,
      async (call) => {
        const request = decodeRequest(RevokeApiKeyRequestSchema, call);
        const key = await admin.setApiKeyStatus(apiKeyId(request.id), "revoked");
        return { message: create(RevokeApiKeyResponseSchema, { apiKey: apiKeyMessage(key) }) };
      },
    ],
    [
      m.retireApiKey,
      async (call) => {
        const request = decodeRequest(RetireApiKeyRequestSchema, call);
        const key = await admin.setApiKeyStatus(apiKeyId(request.id), "retired");
        return { message: create(RetireApiKeyResponseSchema, { apiKey: apiKeyMessage(key) }) };
      },
    ],
    [
      m.rotateProjectKey,
      async (call) => {
        const request = decodeRequest(RotateProjectKeyRequestSchema, call);
        const project = await admin.rotateProjectKey(projectId(request.projectId));
        return {
          message: create(RotateProjectKeyResponseSchema, { project: await shown(project) }),
        };
      },
    ],
    [
      m.getLogPosition,
      async (call) => {
        const request = decodeRequest(GetLogPositionRequestSchema, call);
        const environment = environmentName(request.environment);
        const log = await admin.logPosition(projectId(request.projectId), environment);
        return {
          message: create(GetLogPositionResponseSchema, {
            head: log.head,
            integrated: log.integrated,
            lagSeconds: log.oldestPending
              ? Math.max(0, (Date.now() - log.oldestPending.getTime()) / 1000)
              : 0,
            ...(log.integratedAt ? { integratedAt: log.integratedAt.toISOString() } : {}),
          }),
        };
      },
    ],
    [
      m.getLogVerifierKey,
      async (call) => {
        const request = decodeRequest(GetLogVerifierKeyRequestSchema, call);
        const environment = environmentName(request.environment);
        const verifierKey = await admin.logVerifierKey(projectId(request.projectId), environment);
        return { message: create(GetLogVerifierKeyResponseSchema, { verifierKey }) };
      },
    ],
    [
      m.setRetention,
      async (call) => {
        const request = decodeRequest(SetRetentionRequestSchema, call);
        const id = projectId(request.projectId);
        // Unset: both environments; any other value must name one.
        const environment =
          request.environment === Environment.UNSPECIFIED
            ? undefined
            : environmentName(request.environment);
        const set = await lifecycle.retention.setRetention(id, environment, request.retentionDays);
        return {
          message: create(SetRetentionResponseSchema, {
            project: projectMessage(set.project, set.retention),
          }),
        };
      },
    ],
  ];
  return adminGuarded(guard, operations);
}

/**
 * The operations as AdminService serves them: each checks the admin token before it runs.
 * Every AdminService method goes through here, whichever module defines it.
 */
export function adminGuarded(
  guard: AdminTokenGuard,
  operations: ReadonlyArray<readonly [DescMethod, Operation]>,
): Operations {
  return new Map(
    operations.map(([method, operation]) => [
      method,
      async (call: OperationCall) => {
        guard.check(bearerOf(unambiguous(call.facts.credential)));
        const { bodyProblem } = call.facts;
        if (bodyProblem !== undefined) throw new ServiceError("bad_request", bodyProblem);
        return operation(call);
      },
    ]),
  );
}
