#!/usr/bin/env node
/**
 * `audit-admin`: the administration CLI, a thin client of AdminService over Connect.
 * It holds no rules of its own; the service checks everything. The admin token comes
 * from --admin-token, ADMIN_TOKEN, or the embedded default's DATA_DIR/admin.token.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type DescMessage, type MessageShape, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type ApiKey,
  ApiKeySchema,
  ApiKeyStatus,
  Environment,
  EraseEventsResponseSchema,
  type Erasure,
  ErasureSchema,
  GetLogPositionResponseSchema,
  Plan,
  type Project,
  ProjectSchema,
} from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "./admin-client.js";

const USAGE = `Usage: audit-admin <command> [options]

Commands:
  project create <name> [--plan free|start|pro]   create a project (default plan: free)
  project list                                     list projects
  project set-plan <projectId> <free|start|pro>    change a project's plan (takes effect at once)
  project rotate-key <projectId>                   rotate the project's data key (new
                                                   events use it: on every instance
                                                   within 5 s)
  project set-retention <projectId> <days> [--env test|live]
                                                   expire events <days> to <days>+1 after
                                                   receipt, by whole UTC day (0: keep for
                                                   ever; without --env: both environments)
  key create <projectId> [--env test|live]         create an API key (the secret is shown once)
  key list <projectId>                             list a project's API keys
  key revoke <keyId>                               revoke a key (403 from then on: on
                                                   every instance within 5 s)
  key retire <keyId>                               retire a key permanently (likewise)
  log position <projectId> [--env test|live]       events acknowledged and integrated
  log key <projectId> [--env test|live]            the log's verifier key (for 'audit verify')
  events erase <projectId> [--env test|live] (--event-id <id>... | --actor-id <id> | --tenant-id <id>)
               [--dry-run] [--requested-by <who>]  erase events' content, keeping tombstones
                                                   (in one environment: test unless --env live)
  erasures list <projectId>                        a project's erasure records, newest first

Options:
  --url <url>            service address (default: AUDIT_URL or http://127.0.0.1:3000)
  --admin-token <token>  admin token (default: ADMIN_TOKEN, or <data-dir>/admin.token)
  --data-dir <dir>       data directory of the embedded default (default: DATA_DIR or ./data)
  --json                 print JSON instead of text
  -h, --help             show this help
`;

const PLANS: Record<string, Plan> = { free: Plan.FREE, start: Plan.START, pro: Plan.PRO };
const ENVIRONMENTS: Record<string, Environment> = {
  test: Environment.TEST,
  live: Environment.LIVE,
};

/** A usage mistake: printed with the usage text, exit code 2. */
class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "admin-token": { type: "string" },
      "data-dir": { type: "string" },
      plan: { type: "string" },
      env: { type: "string" },
      "event-id": { type: "string", multiple: true },
      "actor-id": { type: "string" },
      "tenant-id": { type: "string" },
      "requested-by": { type: "string" },
      "dry-run": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(USAGE);
    return;
  }

  const url = values.url ?? process.env.AUDIT_URL ?? "http://127.0.0.1:3000";
  const token =
    values["admin-token"] ?? process.env.ADMIN_TOKEN ?? (await tokenFromDataDir(values));
  const client = createAdminClient(url, token || undefined);
  const print = (text: string, json: unknown) =>
    process.stdout.write(`${values.json ? JSON.stringify(json, null, 2) : text}\n`);

  const [area, command, ...args] = positionals;
  const arg = (index: number, name: string): string => {
    const value = args[index];
    if (value === undefined) throw new UsageError(`missing <${name}>`);
    return value;
  };

  switch (`${area} ${command}`) {
    case "project create": {
      const { project } = await client.createProject({
        name: arg(0, "name"),
        plan: choose(PLANS, values.plan ?? "free", "--plan"),
      });
      if (project) print(describeProject(project), asJson(ProjectSchema, project));
      return;
    }
    case "project list": {
      const { projects } = await client.listProjects({});
      print(
        projects.map(describeProject).join("\n") || "no projects",
        projects.map((p) => asJson(ProjectSchema, p)),
      );
      return;
    }
    case "project set-plan": {
      const { project } = await client.setProjectPlan({
        projectId: arg(0, "projectId"),
        plan: choose(PLANS, arg(1, "plan"), "plan"),
      });
      if (project) print(describeProject(project), asJson(ProjectSchema, project));
      return;
    }
    case "project set-retention": {
      const days = arg(1, "days");
      if (!/^-?\d+$/.test(days)) throw new UsageError("<days> must be a whole number");
      const { project } = await client.setRetention({
        projectId: arg(0, "projectId"),
        environment:
          values.env === undefined
            ? Environment.UNSPECIFIED
            : choose(ENVIRONMENTS, values.env, "--env"),
        // Out of int32's range, sent as its end: the service refuses it with its message.
        retentionDays: Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, Number(days))),
      });
      if (project) print(describeProject(project), asJson(ProjectSchema, project));
      return;
    }
    case "project rotate-key": {
      const { project } = await client.rotateProjectKey({ projectId: arg(0, "projectId") });
      if (project) print(describeProject(project), asJson(ProjectSchema, project));
      return;
    }
    case "key create": {
      const created = await client.createApiKey({
        projectId: arg(0, "projectId"),
        environment: choose(ENVIRONMENTS, values.env ?? "test", "--env"),
      });
      const key = created.apiKey;
      if (!key) throw new Error("the service returned no key");
      print(
        `${describeKey(key)}\nsecret: ${created.secret}\n(shown only now: store it in your secret manager)`,
        { apiKey: asJson(ApiKeySchema, key), secret: created.secret },
      );
      return;
    }
    case "key list": {
      const { apiKeys } = await client.listApiKeys({ projectId: arg(0, "projectId") });
      print(
        apiKeys.map(describeKey).join("\n") || "no keys",
        apiKeys.map((k) => asJson(ApiKeySchema, k)),
      );
      return;
    }
    case "key revoke": {
      const { apiKey } = await client.revokeApiKey({ id: arg(0, "keyId") });
      if (apiKey) print(describeKey(apiKey), asJson(ApiKeySchema, apiKey));
      return;
    }
    case "key retire": {
      const { apiKey } = await client.retireApiKey({ id: arg(0, "keyId") });
      if (apiKey) print(describeKey(apiKey), asJson(ApiKeySchema, apiKey));
      return;
    }
    case "log position": {
      const position = await client.getLogPosition({
        projectId: arg(0, "projectId"),
        environment: choose(ENVIRONMENTS, values.env ?? "test", "--env"),
      });
      print(
        `head ${position.head}, integrated ${position.integrated}, lag ${position.lagSeconds.toFixed(1)} s`,
        asJson(GetLogPositionResponseSchema, position),
      );
      return;
    }
    case "log key": {
      const { verifierKey } = await client.getLogVerifierKey({
        projectId: arg(0, "projectId"),
        environment: choose(ENVIRONMENTS, values.env ?? "test", "--env"),
      });
      print(verifierKey, { verifierKey });
      return;
    }
    case "events erase": {
      const environment = values.env ?? "test";
      const result = await client.eraseEvents({
        projectId: arg(0, "projectId"),
        environment: choose(ENVIRONMENTS, environment, "--env"),
        eventIds: values["event-id"] ?? [],
        ...(values["actor-id"] !== undefined ? { actorId: values["actor-id"] } : {}),
        ...(values["tenant-id"] !== undefined ? { tenantId: values["tenant-id"] } : {}),
        ...(values["requested-by"] !== undefined ? { requestedBy: values["requested-by"] } : {}),
        dryRun: values["dry-run"],
      });
      print(
        // The environment named: "matched 0" in test says nothing of live.
        `matched ${result.matched}, erased ${result.erased} in ${environment}${
          result.erasureId ? `  erasure=${result.erasureId}` : "  (dry run)"
        }`,
        asJson(EraseEventsResponseSchema, result),
      );
      return;
    }
    case "erasures list": {
      const { erasures } = await client.listErasures({ projectId: arg(0, "projectId") });
      print(
        erasures.map(describeErasure).join("\n") || "no erasures",
        erasures.map((e) => asJson(ErasureSchema, e)),
      );
      return;
    }
    default:
      throw new UsageError(`unknown command: ${positionals.join(" ")}`);
  }
}

/** A message as `--json` prints it: every field, zero counts and empty lists included. */
function asJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>) {
  return toJson(schema, message, { alwaysEmitImplicit: true });
}

function choose<T>(options: Record<string, T>, name: string, what: string): T {
  const value = options[name];
  if (value === undefined) {
    throw new UsageError(`${what} must be one of ${Object.keys(options).join(", ")}`);
  }
  return value;
}

async function tokenFromDataDir(values: { "data-dir"?: string | undefined }) {
  const dir = values["data-dir"] ?? process.env.DATA_DIR ?? "./data";
  try {
    return (await readFile(join(dir, "admin.token"), "utf8")).trim();
  } catch {
    return undefined;
  }
}

function describeProject(project: Project): string {
  const plan = Plan[project.plan]?.toLowerCase() ?? "unknown";
  const retention = project.retention
    .map((each) => {
      const env = Environment[each.environment]?.toLowerCase() ?? "unknown";
      return `retention.${env}=${each.retentionDays === 0 ? "forever" : `${each.retentionDays}d`}`;
    })
    .join("  ");
  return `${project.id}  ${project.name}  plan=${plan}  created=${project.createdAt}  dataKey=v${project.keyVersion}  ${retention}`;
}

function describeKey(key: ApiKey): string {
  const env = Environment[key.environment]?.toLowerCase() ?? "unknown";
  const status = ApiKeyStatus[key.status]?.toLowerCase() ?? "unknown";
  return `${key.id}  ${key.prefix}…  env=${env}  status=${status}  project=${key.projectId}`;
}

function describeErasure(erasure: Erasure): string {
  const env = Environment[erasure.environment]?.toLowerCase() ?? "unknown";
  const selector =
    erasure.eventIds.length > 0
      ? `eventIds=${erasure.eventIds.length}`
      : erasure.actorId !== undefined
        ? `actorId=${JSON.stringify(erasure.actorId)}`
        : erasure.tenantId !== undefined
          ? `tenantId=${JSON.stringify(erasure.tenantId)}`
          : `receivedBefore=${erasure.receivedBefore ?? "?"}`;
  return `${erasure.id}  env=${env}  ${selector}  by=${JSON.stringify(erasure.requestedBy)}  at=${erasure.requestedAt}  ${erasure.status}  matched=${erasure.matched} erased=${erasure.erased}`;
}

/** node's parseArgs refusals (an unknown option, a missing value): usage mistakes too. */
function isParseArgsError(error: unknown): error is TypeError {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    error instanceof TypeError && typeof code === "string" && code.startsWith("ERR_PARSE_ARGS")
  );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || isParseArgsError(error)) {
    process.stderr.write(`audit-admin: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (error instanceof ConnectError) {
    const hint =
      error.code === Code.Unavailable || error.code === Code.Unknown
        ? " (is the service running? see --url)"
        : "";
    process.stderr.write(`audit-admin: ${Code[error.code]}: ${error.rawMessage}${hint}\n`);
    process.exit(1);
  }
  process.stderr.write(`audit-admin: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
