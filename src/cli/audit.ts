#!/usr/bin/env node
/**
 * `audit`: the auditor's CLI. `audit verify` checks a project-environment's events
 * against the log's signed checkpoint (src/tlog/verify.ts): every event's content against
 * its leaf, every leaf's place in the tree, and, given a checkpoint kept from before, that
 * the log only grew. Exit code 0 only when every check held; 1 when one failed (the first
 * failure is named first); 2 for a usage mistake or a service that cannot be read.
 */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { decodeJwt } from "jose";
import { eventsOfText } from "../tlog/event-input.js";
import { createNodeLogCrypto } from "../tlog/node-crypto.js";
import {
  bundleProofSource,
  type ProofBundle,
  type ProofSource,
  parseVerifierKeys,
  type VerifyReport,
  verifyLog,
} from "../tlog/verify.js";
import { createLogClient, LogClientError } from "./log-client.js";
import {
  exportCommand,
  followCommand,
  STREAM_USAGE,
  StreamCommandError,
} from "./stream-commands.js";

const USAGE = `Usage: audit <command> [options]

Commands:
  verify    check events against the log's signed checkpoint
  export    write a range of events, in log order, to a file or stdout (NDJSON or CSV)
  follow    print the backlog, then every new event, as NDJSON

audit verify [options]
  Events come from --events (a file: an NDJSON export, or GET /api/events pages saved one
  per line or as one JSON document) or, with an API key, from the whole log as
  GET /api/events/export writes it (erased events as tombstones). A frontend token
  restricted to a tenant reads that tenant's events only: they are checked as --partial.
  An event whose JSON gives a member name twice fails (readers disagree on its content).
  Proofs come from --bundle (a file) or, with an API key, from the service's proof endpoints.

  --key <verifier key>      the log's verifier key, <name>+<id>+<key> (pin it: print it once
                            with 'audit-admin' or GET /api/log/key and keep it); repeat it
                            with the keys before and after a rotation
  --key-file <file>         the verifier key(s), from a file (one per line)
  --checkpoint <file>       the signed checkpoint (default: GET /api/log/checkpoint)
  --earlier <file>          a checkpoint kept from before: also prove the log only grew since
  --events <file>           events as NDJSON, one event per line as GET /api/events lists it
  --bundle <file>           proofs as JSON {inclusion: [...], consistency: [...]}
  --partial                 the events are not the whole log: check each by its proof
  --save-checkpoint <file>  write the checkpoint verified against (for --earlier next time)
  --url <url>               service address (default: AUDIT_URL or http://127.0.0.1:3000)
  --api-key <key>           API key or frontend token (default: AUDIT_API_KEY)
  --json                    print the report as JSON
  -h, --help                show this help

${STREAM_USAGE}`;

/** A usage mistake: printed with the usage text, exit code 2. */
class UsageError extends Error {}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(
      `cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`,
    );
  }
}

/**
 * Whether a credential is a frontend token restricted to one tenant: it reads only that
 * tenant's events, never the whole log. Read from the token's claims without checking
 * its signature (the service checks that); anything else counts as unrestricted.
 */
function tenantOfToken(credential: string): string | undefined {
  try {
    const { tenant } = decodeJwt(credential);
    return typeof tenant === "string" ? tenant : undefined;
  } catch {
    return undefined; // not a JWT: an API key
  }
}

function printReport(report: VerifyReport, json: boolean): void {
  if (json) {
    const { checkpoint, ...rest } = report;
    const summary =
      checkpoint === undefined
        ? rest
        : { ...rest, checkpoint: { origin: checkpoint.origin, size: checkpoint.size } };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }
  const lines = report.checked.map((line) => `  ok    ${line}`);
  for (const failure of report.failures)
    lines.push(`  FAIL  ${failure.subject}: ${failure.problem}`);
  const first = report.failures[0];
  lines.push(
    first === undefined
      ? `verified: every check held (${report.eventsRead} events read)`
      : `NOT VERIFIED: ${report.failures.length} check(s) failed; first: ${first.subject}: ${first.problem}`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

async function verify(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: "string", multiple: true },
      "key-file": { type: "string" },
      checkpoint: { type: "string" },
      earlier: { type: "string" },
      events: { type: "string" },
      bundle: { type: "string" },
      partial: { type: "boolean", default: false },
      "save-checkpoint": { type: "string" },
      url: { type: "string" },
      "api-key": { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const apiKey = values["api-key"] ?? process.env.AUDIT_API_KEY;
  const client =
    apiKey === undefined || apiKey === ""
      ? undefined
      : createLogClient(values.url ?? process.env.AUDIT_URL ?? "http://127.0.0.1:3000", apiKey);
  const service = () => {
    if (client === undefined) {
      throw new UsageError(
        "give --api-key (or AUDIT_API_KEY), or --events, --checkpoint and --key",
      );
    }
    return client;
  };

  const pinned = [...(values.key ?? [])];
  if (values["key-file"] !== undefined) {
    pinned.push((await readText(values["key-file"], "verifier key")).trim());
  }
  let verifierKey = pinned.length > 0 ? pinned.join("\n") : undefined;
  if (verifierKey !== undefined) {
    try {
      await parseVerifierKeys(createNodeLogCrypto(), verifierKey);
    } catch (error) {
      throw new UsageError(
        `--key: not a verifier key (<name>+<8 hex digits>+<base64 key>): ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  } else {
    verifierKey = await service().verifierKey();
    process.stderr.write(
      `audit: warning: the verifier key was taken from the service itself (${verifierKey}); pin it with --key\n`,
    );
  }
  // The checkpoint is read before the events, so every event it covers is listed.
  const checkpoint =
    values.checkpoint === undefined
      ? await service().checkpoint()
      : await readText(values.checkpoint, "checkpoint");
  const earlierCheckpoint =
    values.earlier === undefined ? undefined : await readText(values.earlier, "earlier checkpoint");
  let proofs: ProofSource | undefined = client;
  if (values.bundle !== undefined) {
    let bundle: ProofBundle;
    try {
      bundle = JSON.parse(await readText(values.bundle, "bundle")) as ProofBundle;
    } catch (error) {
      if (error instanceof UsageError) throw error;
      throw new UsageError(`bundle ${values.bundle} is not JSON`);
    }
    proofs = bundleProofSource(bundle);
  }
  const fromService = values.events === undefined;
  const events =
    values.events === undefined
      ? service().events()
      : eventsOfText(await readText(values.events, "events"));
  // A tenant's token reads that tenant's events only: not the whole log, so each is
  // checked by its proof rather than the missing positions reported as deletions.
  const tenant = fromService && apiKey !== undefined ? tenantOfToken(apiKey) : undefined;
  if (tenant !== undefined && !values.partial) {
    process.stderr.write(
      `audit: the token reads tenant ${JSON.stringify(tenant)}'s events only: checking them as --partial (each by its inclusion proof)\n`,
    );
  }

  const report = await verifyLog({
    crypto: createNodeLogCrypto(),
    verifierKey,
    checkpoint,
    ...(earlierCheckpoint === undefined ? {} : { earlierCheckpoint }),
    events,
    ...(proofs === undefined ? {} : { proofs }),
    complete: !values.partial && tenant === undefined,
    // Events listed after the checkpoint was read may be newer than it: not yet covered.
    beyondCheckpoint: fromService ? "skip" : "fail",
  });
  printReport(report, values.json);
  if (report.ok && values["save-checkpoint"] !== undefined) {
    await writeFile(values["save-checkpoint"], checkpoint);
  }
  return report.ok ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "-h" || command === "--help") {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === "verify") return verify(rest);
  if (command === "export") return exportCommand(rest);
  if (command === "follow") return followCommand(rest);
  throw new UsageError(`unknown command ${command}`);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError || (error instanceof TypeError && "code" in error)) {
      process.stderr.write(`audit: ${error.message}\n\n${USAGE}`);
    } else if (error instanceof LogClientError || error instanceof StreamCommandError) {
      process.stderr.write(`audit: ${error.message}\n`);
    } else {
      process.stderr.write(`audit: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    process.exitCode = 2;
  },
);
