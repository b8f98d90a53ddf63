// The layering of src/, checked in CI (`npm run lint:layers`; docs/architecture.md).
// Imports flow one way: transport -> api -> ingest/events/admin/log/lifecycle/
// verifiable-log -> auth/limits ->
// crypto -> store, with vocabulary/, errors.ts and ids.ts as leaves everyone may use;
// app.ts and main.ts compose everything and nothing imports them. Type-only imports
// count: a type is a dependency too. CommonJS: the package is an ES module, the tool
// reads its configuration with require().

const DOMAIN = "^src/(ingest|events|admin|lifecycle|log|verifiable-log)/";
const BELOW_DOMAIN = "^src/(auth|limits|crypto|store)/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A circle of imports has no floor: cut it with a leaf module.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "transport-only-through-api",
      severity: "error",
      comment:
        "transport/ reaches the rules only through api/ (operations, request facts): it " +
        "imports no domain folder (ingest, events, admin) nor what lies below them.",
      from: { path: "^src/transport/" },
      to: {
        path: [
          "^src/(ingest|events|admin|log|lifecycle|verifiable-log|auth|limits|crypto|store|tlog)/",
        ],
      },
    },
    {
      name: "nothing-imports-transport",
      severity: "error",
      comment:
        "Only the composition root wires the transport: app.ts, and listed-event-leaf.ts, " +
        "the leaf it shares with the derivation worker.",
      from: {
        path: "^src/",
        pathNot: ["^src/transport/", "^src/(app|main|listed-event-leaf)\\.ts$"],
      },
      to: { path: "^src/transport/" },
    },
    {
      name: "api-is-above-the-domain",
      severity: "error",
      comment: "api/ calls the domain; the domain and below never import api/.",
      from: {
        path: [
          "^src/(ingest|events|admin|log|lifecycle|verifiable-log|auth|limits|crypto|store|vocabulary)/",
        ],
      },
      to: { path: "^src/api/" },
    },
    {
      name: "rules-below-the-domain",
      severity: "error",
      comment:
        "auth/, limits/, crypto/ and store/ serve the domain folders and never import " +
        "them: shared types go to vocabulary/.",
      from: { path: BELOW_DOMAIN },
      to: { path: DOMAIN },
    },
    {
      name: "crypto-and-store-below-auth-and-limits",
      severity: "error",
      from: { path: "^src/(crypto|store)/" },
      to: { path: "^src/(auth|limits)/" },
    },
    {
      name: "vocabulary-is-a-leaf",
      severity: "error",
      comment: "vocabulary/ holds shared names and shapes: it imports nothing of src/.",
      from: { path: "^src/vocabulary/" },
      to: { path: "^src/", pathNot: "^src/vocabulary/" },
    },
    {
      name: "tlog-is-self-contained",
      severity: "error",
      comment:
        "tlog/ is the verifiable log's library (tree, notes, leaf, verifier): it runs in " +
        "the browser too, so it imports nothing of src/ outside itself.",
      from: { path: "^src/tlog/" },
      to: { path: "^src/", pathNot: "^src/tlog/" },
    },
    {
      name: "errors-is-a-leaf",
      severity: "error",
      from: { path: "^src/errors\\.ts$" },
      to: { path: "^src/" },
    },
    {
      name: "composition-root-on-top",
      severity: "error",
      comment: "app.ts and main.ts compose the service; no module depends on them.",
      from: { path: "^src/", pathNot: "^src/(app|main)\\.ts$" },
      to: { path: "^src/(app|main)\\.ts$" },
    },
    {
      name: "generated-code-apart",
      severity: "error",
      comment: "gen/ is buf's output, never edited: it imports nothing of ours.",
      from: { path: "^gen/" },
      to: { path: ["^src/", "^test/", "^bench/"] },
    },
    {
      name: "src-not-into-tests",
      severity: "error",
      from: { path: "^src/" },
      to: { path: ["^test/", "^bench/"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
