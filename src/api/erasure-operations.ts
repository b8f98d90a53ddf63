/**
 * AdminService's EraseEvents and ListErasures over every RPC protocol, behind the admin
 * token like the other admin operations (admin-operations.ts): the request's shape is
 * checked here (400s: the selector, the ids, the environment), the rule runs in
 * lifecycle/erasure-service.ts.
 */
import { create } from "@bufbuild/protobuf";
import {
  AdminService,
  Environment,
  EraseEventsRequestSchema,
  EraseEventsResponseSchema,
  type Erasure,
  ErasureSchema,
  ListErasuresRequestSchema,
  ListErasuresResponseSchema,
} from "../../gen/audit/v1/admin_pb.js";
import type { AdminTokenGuard } from "../auth/admin-token.js";
import { ServiceError } from "../errors.js";
import { isUuid } from "../ids.js";
import {
  type EraseSelector,
  type ErasureService,
  type ErasureView,
  MAX_ERASE_IDS,
} from "../lifecycle/erasure-service.js";
import { isStorableText } from "../vocabulary/storable-text.js";
import { adminGuarded, environmentName, projectId } from "./admin-operations.js";
import { decodeRequest } from "./decode-request.js";
import type { Operation, Operations } from "./operation.js";

const ONE_SELECTOR = "exactly one selector is required: eventIds, actorId or tenantId";

/** The request's selector: exactly one, well formed. */
function selectorOf(request: {
  eventIds: string[];
  actorId?: string | undefined;
  tenantId?: string | undefined;
}): EraseSelector {
  const given = [
    request.eventIds.length > 0,
    request.actorId !== undefined,
    request.tenantId !== undefined,
  ].filter(Boolean).length;
  if (given !== 1) throw new ServiceError("bad_request", ONE_SELECTOR);
  if (request.eventIds.length > 0) {
    if (request.eventIds.length > MAX_ERASE_IDS) {
      throw new ServiceError("bad_request", `eventIds must hold at most ${MAX_ERASE_IDS} ids`);
    }
    const bad = request.eventIds.findIndex((id) => !isUuid(id));
    if (bad >= 0) throw new ServiceError("bad_request", `eventIds[${bad}] must be a UUID`);
    return { eventIds: request.eventIds.map((id) => id.toLowerCase()) };
  }
  const [name, value] =
    request.actorId !== undefined
      ? (["actorId", request.actorId] as const)
      : (["tenantId", request.tenantId ?? ""] as const);
  if (value.length === 0) throw new ServiceError("bad_request", `${name} must not be empty`);
  return name === "actorId" ? { actorId: value } : { tenantId: value };
}

/** Who asked: 1 to 200 characters, "admin" when absent. */
function requestedBy(value: string | undefined): string {
  if (value === undefined) return "admin";
  const trimmed = value.trim();
  if (trimmed.length === 0 || trimmed.length > 200 || !isStorableText(trimmed)) {
    throw new ServiceError("bad_request", "requestedBy must be 1 to 200 characters of text");
  }
  return trimmed;
}

/** An erasure record as the API shows it. */
export function erasureMessage(record: ErasureView): Erasure {
  const s = record.selector;
  return create(ErasureSchema, {
    id: record.id,
    projectId: record.projectId,
    environment: record.environment === "live" ? Environment.LIVE : Environment.TEST,
    ...("eventIds" in s ? { eventIds: s.eventIds } : {}),
    ...("actorId" in s ? { actorId: s.actorId } : {}),
    ...("tenantId" in s ? { tenantId: s.tenantId } : {}),
    ...("receivedBefore" in s ? { receivedBefore: s.receivedBefore.toISOString() } : {}),
    requestedBy: record.requestedBy,
    requestedAt: record.requestedAt.toISOString(),
    status: record.status,
    matched: record.matched,
    erased: record.erased,
    ...(record.completedAt ? { completedAt: record.completedAt.toISOString() } : {}),
  });
}

/** EraseEvents and ListErasures, each behind the admin token. */
export function erasureOperations(erasure: ErasureService, guard: AdminTokenGuard): Operations {
  const m = AdminService.method;
  const operations: [(typeof m)[keyof typeof m], Operation][] = [
    [
      m.eraseEvents,
      async (call) => {
        const request = decodeRequest(EraseEventsRequestSchema, call);
        const project = projectId(request.projectId);
        const environment = environmentName(request.environment);
        const selector = selectorOf(request);
        const result = await erasure.erase({
          projectId: project,
          environment,
          selector,
          dryRun: request.dryRun,
          requestedBy: requestedBy(request.requestedBy),
        });
        return {
          message: create(EraseEventsResponseSchema, {
            matched: result.matched,
            erased: result.erased,
            ...(result.erasureId ? { erasureId: result.erasureId } : {}),
          }),
        };
      },
    ],
    [
      m.listErasures,
      async (call) => {
        const request = decodeRequest(ListErasuresRequestSchema, call);
        const records = await erasure.list(projectId(request.projectId));
        return {
          message: create(ListErasuresResponseSchema, { erasures: records.map(erasureMessage) }),
        };
      },
    ],
  ];
  return adminGuarded(guard, operations);
}
