/**
 * Summarises a V8 CPU profile (`bench/run.ts --profile <dir>`, or any `--cpu-prof`
 * output): the share of samples by module and the functions with the most self time,
 * then the inclusive time of the service's own functions (src/), which says what a
 * step costs with everything it calls.
 *
 * Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [top]
 */
import { readFile } from "node:fs/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary <file.cpuprofile> [top]");
const top = Number(topArg ?? 25);
const profile = JSON.parse(await readFile(file, "utf8")) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) {
  for (const child of node.children ?? []) parentOf.set(child, node.id);
}
const selfSamples = new Map<number, number>();
for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
const total = profile.samples.length;

/** A short place name: the package, our own file, or node's internals. */
function moduleOf(url: string): string {
  if (url === "") return "(native/vm)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg?.[1]) return pkg[1];
  const own = /\/dist\/(src\/.*)$/.exec(url) ?? /\/(src\/.*)$/.exec(url);
  if (own?.[1]) return own[1];
  if (url.startsWith("node:")) return url;
  return url;
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || "(anonymous)"} ${moduleOf(url)}:${lineNumber + 1}`;
}

function percent(count: number): string {
  return `${((100 * count) / total).toFixed(1)}%`;
}

function printTop(title: string, counts: Map<string, number>): void {
  process.stdout.write(`\n${title}\n`);
  const rows = [...counts].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, count] of rows)
    process.stdout.write(`  ${percent(count).padStart(6)}  ${name}\n`);
}

const byModule = new Map<string, number>();
const byFunction = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, count] of selfSamples) {
  const node = byId.get(id);
  if (!node) continue;
  const module = moduleOf(node.callFrame.url);
  byModule.set(module, (byModule.get(module) ?? 0) + count);
  byFunction.set(label(node), (byFunction.get(label(node)) ?? 0) + count);
  // Inclusive: every distinct own function on the stack of this sample.
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at);
    if (!frame || !moduleOf(frame.callFrame.url).startsWith("src/")) continue;
    const name = label(frame);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + count);
  }
}

process.stdout.write(`${total} samples\n`);
printTop("Self time by module", byModule);
printTop("Self time by function", byFunction);
printTop("Inclusive time of the service's functions", inclusive);
