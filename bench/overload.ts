/**
 * `npm run bench:overload`: what happens at three times the capacity (issue 26).
 *
 * Starts the service (`node --import tsx src/main.ts`, PGlite by default, `--postgres` for
 * the local PostgreSQL) on 127.0.0.1 with the rate limit raised, then:
 *   1. capacity: closed loop, `--connections` (64) concurrent Create Events of ~1 KB for
 *      `--capacity-seconds` (15) after a 3 s warm-up; the acknowledged (201) rate is the
 *      capacity C (or `--capacity <n>` to skip the measurement);
 *   2. normal: open loop at `--normal` (0.5) × C for 15 s;
 *   3. overload: open loop at `--factor` (3) × C for `--overload-seconds` (60);
 *   4. recovery: open loop at 0.5 × C for `--recovery-seconds` (30).
 * Open loop: requests are sent at a fixed arrival rate whatever the answers, each from
 * its scheduled time (latency counts any wait in the generator: no coordinated
 * omission), over up to `--sockets` (4,000) keep-alive connections, as many independent
 * clients would; past `--max-outstanding` (20,000) unanswered, a request is not sent and
 * counted as dropped by the generator. A request unanswered 30 s after its scheduled time
 * is a timeout.
 * The generator is a raw HTTP/1.1 client (bench/raw-http-client.ts: `net` sockets opened
 * when needed, one request at a time on each, pre-encoded requests, a minimal response
 * parser, one timeout sweep a second) rather than node:http, whose CPU cost per request is
 * too high at 3 × C on two cores shared with the service and PostgreSQL. A request that
 * finds every connection busy waits in a FIFO in the generator. Each phase reports
 * `generatorWaitMs`, the p50/p99/max of write time − scheduled time (requests sent):
 * small, the generator kept up and the latencies are the service's. Of it,
 * `generatorLateMs` (scheduled time to `send`) is the generator's own loop being late (its
 * CPU); the rest is the wait for a free connection, all `--sockets` clients waiting for
 * the service's answers (with more clients, that queue would be in the service's socket
 * buffers instead). `serviceMs` is the service's own part: write to answer, of the 201s
 * and of the other requests sent. `connectionServiceMs` splits it by connection: the first
 * request of a newly opened connection (`opened`) and the others (`reused`). A request that
 * opens a connection also waits for the service to accept it, and node accepts at most one
 * connection per event-loop turn (libuv >= 1.45): under load, the connections of a burst wait
 * in the listen socket's accept queue, where neither the connect time (the kernel completes
 * the handshake) nor the service's metrics show it.
 * `--profile <dir>` runs the service with `--cpu-prof` (profile written there at its exit).
 * `--trace <file>` writes every request (JSON lines: scheduled time in epoch ms, status,
 * latency, generator wait, first response byte, and its connection: id, local port, open and
 * connect times, how many requests it carried before) to join with the service's side.
 * At the end, stderr says how many connections were opened, how long they took to connect
 * (a burst of new connections past the service's listen backlog waits for SYN
 * retransmissions: 1 s, 3 s, 7 s...) and why requests got no answer (status 0).
 *
 * Recorded per second: offered, 201s and every other status, the p50/p99/max latency of
 * 201s and of refusals, the service's RSS (/proc), its event-loop lag (p99 and max from
 * /metrics, which prom-client resets at each scrape), and the latency of /healthz (every
 * 250 ms) and of a List Events (every second) sent beside the load.
 * `--limit <n>` sets INGEST_MAX_IN_FLIGHT (0: no admission control, the "before");
 * `--loop-delay-target <ms>` sets LOOP_DELAY_TARGET_MS (0: no shedding by the loop's delay).
 * The 503s of each phase are split by reason from /metrics (`in_flight`: the count,
 * `queue_delay`: the loop's delay, `index_lag`: the pushback while the integrator is behind).
 * Prints a table per phase and writes
 * bench/results/overload-<storage>-<limit>[-delay<target>].json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { Agent, request } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Environment, Plan } from "../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../src/admin/admin-client.js";
import { sampleEvent } from "./event-body.js";
import { dropDatabase, recreateDatabase } from "./machine.js";
import {
  type ConnectionFacts,
  createRawClient,
  encodeRequest,
  type RawClient,
} from "./raw-http-client.js";

const { values } = parseArgs({
  options: {
    postgres: { type: "boolean", default: false },
    limit: { type: "string" },
    "loop-delay-target": { type: "string" },
    capacity: { type: "string" },
    "capacity-seconds": { type: "string", default: "15" },
    connections: { type: "string", default: "64" },
    normal: { type: "string", default: "0.5" },
    factor: { type: "string", default: "3" },
    "normal-seconds": { type: "string", default: "15" },
    "overload-seconds": { type: "string", default: "60" },
    "recovery-seconds": { type: "string", default: "30" },
    sockets: { type: "string", default: "4000" },
    "max-outstanding": { type: "string", default: "20000" },
    trace: { type: "string" },
    profile: { type: "string" },
  },
});
const root = new URL("..", import.meta.url).pathname;
const REQUEST_TIMEOUT_MS = 30_000;
const storage = values.postgres ? "postgresql" : "pglite";
const delayTarget = values["loop-delay-target"];

interface Outcome {
  /** Seconds since the run's start, of the request's scheduled time. */
  at: number;
  phase: string;
  /** HTTP status, or 0 for a connection error, -1 for a timeout, -2 not sent. */
  status: number;
  ms: number;
  retryAfter?: string;
  /** From the scheduled time to the request's write on a connection; absent if not written. */
  waitMs?: number;
  /** From the scheduled time to its handing to the client (the generator's loop late). */
  lateMs?: number;
  /** From the scheduled time to the response's first byte. */
  firstByteMs?: number;
  /** The connection it was written on; absent if not written. */
  connection?: ConnectionFacts;
}

interface Sample {
  at: number;
  rssMb: number;
  loopLagP99Ms?: number;
  loopLagMaxMs?: number;
  /** Ingest 503s so far, by reason (audit_requests_overloaded_total). */
  shedInFlight?: number;
  shedQueueDelay?: number;
  shedIndexLag?: number;
}

interface Probe {
  at: number;
  kind: "healthz" | "list";
  status: number;
  ms: number;
}

const outcomes: Outcome[] = [];
const samples: Sample[] = [];
const probes: Probe[] = [];
const bodies = Array.from({ length: 512 }, (_, i) => JSON.stringify(sampleEvent(i)));
const bodyBytes = Buffer.byteLength(bodies[0] ?? "");

const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => process.exit(130));
}

async function main(): Promise<void> {
  const started = new Date();
  process.stderr.write(
    `overload bench: ${storage}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}, body ${bodyBytes} B\n`,
  );
  const dataDir = await mkdtemp(join(tmpdir(), "audit-overload-"));
  const adminToken = randomBytes(24).toString("hex");
  const env: Record<string, string> = {
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    ADMIN_TOKEN: adminToken,
    RATE_LIMIT_MAX: "1000000000",
    DATA_DIR: dataDir,
  };
  if (values.limit !== undefined) env.INGEST_MAX_IN_FLIGHT = values.limit;
  if (delayTarget !== undefined) env.LOOP_DELAY_TARGET_MS = delayTarget;
  const database = "audit_bench_overload";
  if (values.postgres) {
    env.DATABASE_URL = await recreateDatabase(database);
    env.MASTER_KEY = randomBytes(32).toString("base64");
    env.TOKEN_SIGNING_KEY = randomBytes(32).toString("hex");
  }
  const service = await startService(env);
  const base = `http://127.0.0.1:${service.port}`;
  const admin = createAdminClient(base, adminToken);
  const keys: string[] = [];
  for (let i = 0; i < 40; i++) {
    const { project } = await admin.createProject({ name: `overload ${i}`, plan: Plan.PRO });
    const created = await admin.createApiKey({
      projectId: project?.id ?? "",
      environment: Environment.LIVE,
    });
    keys.push(created.secret);
  }
  const client = createPoster(service.port, keys);
  const post: Poster = client;

  let capacity = Number(values.capacity ?? 0);
  if (!capacity) {
    await closedLoop(post, Number(values.connections), 3, "warm-up");
    const acknowledged = await closedLoop(
      post,
      Number(values.connections),
      Number(values["capacity-seconds"]),
      "capacity",
    );
    capacity = acknowledged / Number(values["capacity-seconds"]);
  }
  process.stderr.write(`  capacity: ${Math.round(capacity)} events/s\n`);

  const t0 = performance.now();
  const pid = service.child.pid ?? 0;
  const sampler = startSampling(pid, base, keys[0] ?? "", t0);
  const normal = Number(values.normal);
  const phases: [string, number, number][] = [
    ["normal", normal * capacity, Number(values["normal-seconds"])],
    ["overload", Number(values.factor) * capacity, Number(values["overload-seconds"])],
    ["recovery", normal * capacity, Number(values["recovery-seconds"])],
  ];
  let offset = 0;
  for (const [phase, rate, seconds] of phases) {
    process.stderr.write(`  ${phase}: ${Math.round(rate)}/s for ${seconds} s\n`);
    await openLoop(post, rate, seconds, phase, t0, offset);
    offset += seconds;
  }
  // Every request sent has been answered or timed out before the figures are read.
  await post.idle();
  sampler.stop();
  const connects = [...client.connectMs].sort((a, b) => a - b);
  const connectMs = [50, 99].map((p) => `p${p} ${round(percentile(connects, p))}`).join(", ");
  process.stderr.write(
    `  generator: ${client.opened} connections opened (connect ms: ${connectMs}, ` +
      `max ${round(connects.at(-1))}), ${client.sockets} still open; ` +
      `no answer (0) by cause: ${JSON.stringify(client.failures)}\n`,
  );
  client.close();
  await stop(service.child);
  if (values.postgres) await dropDatabase(database);
  await rm(dataDir, { recursive: true, force: true });
  report(started, capacity, phases);
  if (values.trace) await writeTrace(values.trace, t0);
}

/** `--trace`: every request as a JSON line, times in epoch ms (to join with the service's). */
async function writeTrace(file: string, t0: number): Promise<void> {
  const epoch = (t: number) => Math.round(performance.timeOrigin + t);
  const lines = outcomes.map((o) => {
    const c = o.connection;
    return JSON.stringify({
      scheduled: epoch(t0 + o.at * 1000),
      at: o.at,
      phase: o.phase,
      status: o.status,
      ms: o.ms,
      waitMs: o.waitMs,
      firstByteMs: o.firstByteMs,
      ...(c && {
        connection: c.id,
        localPort: c.localPort,
        opened: epoch(c.openedAt),
        connected: c.connectedAt < 0 ? null : epoch(c.connectedAt),
        nth: c.nth,
        writtenBeforeConnect: c.writtenBeforeConnect,
      }),
    });
  });
  await writeFile(file, `${lines.join("\n")}\n`);
  process.stderr.write(`  trace: ${lines.length} requests written to ${file}\n`);
}

/** Starts the service and resolves once it listens. */
function startService(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const profile = values.profile ? ["--cpu-prof", `--cpu-prof-dir=${values.profile}`] : [];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", "src/main.ts"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error("the service did not start")), 300_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.startsWith("{")) continue;
        const parsed = JSON.parse(line) as { msg?: string; port?: number };
        if (parsed.msg === "audit event service listening" && parsed.port) {
          clearTimeout(timer);
          resolve({ child, port: parsed.port });
        }
      }
    });
    child.once("exit", (code) => reject(new Error(`the service exited with ${code}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
  child.kill("SIGKILL");
}

interface Poster {
  /** Sends one Create Event; resolves with its outcome (never rejects). */
  send(scheduled: number): Promise<Omit<Outcome, "at" | "phase">>;
  readonly outstanding: number;
  /** Resolves when nothing is outstanding. */
  idle(): Promise<void>;
}

/**
 * The raw client over `--sockets` connections, sending the Create Events in turn: each of
 * the bodies with each of the keys, pre-encoded once (bodies[n % 512] with keys[n % 40],
 * so lcm(512, 40) requests).
 */
function createPoster(port: number, keys: string[]): RawClient {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const count = (bodies.length * keys.length) / gcd(bodies.length, keys.length);
  const requests = Array.from({ length: count }, (_, n) =>
    encodeRequest({
      method: "POST",
      path: "/api/ingest/event",
      host: `127.0.0.1:${port}`,
      headers: {
        "Content-Type": "application/json",
        Authorization: `Bearer ${keys[n % keys.length]}`,
      },
      body: bodies[n % bodies.length] ?? "",
    }),
  );
  return createRawClient({
    host: "127.0.0.1",
    port,
    maxSockets: Number(values.sockets),
    timeoutMs: REQUEST_TIMEOUT_MS,
    requests,
  });
}

/** `connections` clients each sending the next request once answered; the 201 count. */
async function closedLoop(
  post: Poster,
  connections: number,
  seconds: number,
  phase: string,
): Promise<number> {
  process.stderr.write(`  ${phase}: closed loop, ${connections} clients, ${seconds} s\n`);
  const end = performance.now() + seconds * 1000;
  let acknowledged = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const outcome = await post.send(performance.now());
        if (outcome.status === 201) acknowledged++;
      }
    }),
  );
  return acknowledged;
}

/** Sends at `rate` per second for `seconds`, from its scheduled time, whatever the answers. */
async function openLoop(
  post: Poster,
  rate: number,
  seconds: number,
  phase: string,
  t0: number,
  offset: number,
): Promise<void> {
  const start = t0 + offset * 1000;
  const total = Math.round(rate * seconds);
  const maxOutstanding = Number(values["max-outstanding"]);
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) / 1000) * rate));
      while (sent < due) {
        const scheduled = start + (sent / rate) * 1000;
        const at = (scheduled - t0) / 1000;
        sent++;
        if (post.outstanding >= maxOutstanding) {
          outcomes.push({ at, phase, status: -2, ms: 0 });
          continue;
        }
        void post.send(scheduled).then((outcome) => outcomes.push({ at, phase, ...outcome }));
      }
      if (sent >= total) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
}

/** Every second the service's RSS and loop lag; /healthz every 250 ms; a list every second. */
function startSampling(pid: number, base: string, key: string, t0: number) {
  // One agent each: a probe queued behind slow lists on shared sockets measured the lists.
  const agents = {
    healthz: new Agent({ keepAlive: true, maxSockets: 4 }),
    list: new Agent({ keepAlive: true, maxSockets: 4 }),
    metrics: new Agent({ keepAlive: true, maxSockets: 1 }),
  };
  const get = (kind: keyof typeof agents, path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string }>((resolve) => {
      const req = request(`${base}${path}`, { agent: agents[kind], headers }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.once("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => {
        req.destroy();
        resolve({ status: -1, body: "" });
      });
      req.once("error", () => resolve({ status: 0, body: "" }));
      req.end();
    });
  const timed = async (kind: Probe["kind"], path: string, headers?: Record<string, string>) => {
    const sent = performance.now();
    const { status } = await get(kind, path, headers);
    probes.push({ at: (sent - t0) / 1000, kind, status, ms: performance.now() - sent });
  };
  const sample = async () => {
    const at = (performance.now() - t0) / 1000;
    const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
    const rss = /VmRSS:\s+(\d+) kB/.exec(status);
    const entry: Sample = { at, rssMb: rss ? Number(rss[1]) / 1024 : 0 };
    samples.push(entry);
    const metrics = await get("metrics", "/metrics");
    const gauge = (name: string) => {
      const match = new RegExp(`^${name} ([0-9.e+-]+)$`, "m").exec(metrics.body);
      return match ? Number(match[1]) * 1000 : undefined;
    };
    const p99 = gauge("nodejs_eventloop_lag_p99_seconds");
    const max = gauge("nodejs_eventloop_lag_max_seconds");
    if (p99 !== undefined) entry.loopLagP99Ms = p99;
    if (max !== undefined) entry.loopLagMaxMs = max;
    const refused = (reason: string) => {
      const match = new RegExp(
        `^audit_requests_overloaded_total\\{class="ingest",reason="${reason}"\\} (\\d+)$`,
        "m",
      ).exec(metrics.body);
      return match ? Number(match[1]) : undefined;
    };
    const inFlight = refused("in_flight");
    const queueDelay = refused("queue_delay");
    if (inFlight !== undefined) entry.shedInFlight = inFlight;
    if (queueDelay !== undefined) entry.shedQueueDelay = queueDelay;
    const indexLag = refused("index_lag");
    if (indexLag !== undefined) entry.shedIndexLag = indexLag;
  };
  const timers = [
    setInterval(() => void sample(), 1000),
    setInterval(() => void timed("healthz", "/healthz"), 250),
    setInterval(
      () => void timed("list", "/api/events?limit=10", { authorization: `Bearer ${key}` }),
      1000,
    ),
  ];
  return {
    stop() {
      for (const timer of timers) clearInterval(timer);
      for (const agent of Object.values(agents)) agent.destroy();
    },
  };
}

function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Milliseconds to a tenth, null for none. */
function round(value: number | undefined): number | null {
  return value === undefined ? null : Math.round(value * 10) / 10;
}

/** p50, p99 and max of ascending milliseconds, each to a tenth. */
function spread(sorted: number[]) {
  return {
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1)),
  };
}

function summarize(list: Outcome[], seconds: number) {
  const statuses: Record<string, number> = {};
  for (const o of list) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
  const admitted = list
    .filter((o) => o.status === 201)
    .map((o) => o.ms)
    .sort((a, b) => a - b);
  const refused = list
    .filter((o) => o.status !== 201)
    .map((o) => o.ms)
    .sort((a, b) => a - b);
  return {
    offeredPerSecond: Math.round(list.length / seconds),
    admittedPerSecond: Math.round(admitted.length / seconds),
    statuses,
    admittedMs: spread(admitted),
    refusedMs: spread(refused),
  };
}

function report(started: Date, capacity: number, phases: [string, number, number][]): void {
  const perSecond: Record<string, unknown>[] = [];
  // A loop, not a spread: a minute at 3 × C is a few hundred thousand outcomes, past the
  // call stack's room for arguments.
  const last = Math.ceil(outcomes.reduce((latest, o) => Math.max(latest, o.at), 0));
  for (let second = 0; second < last; second++) {
    const list = outcomes.filter((o) => o.at >= second && o.at < second + 1);
    const sample = samples.find((s) => s.at >= second && s.at < second + 1);
    const health = probes
      .filter((p) => p.kind === "healthz" && p.at >= second && p.at < second + 1)
      .map((p) => p.ms);
    const list1 = probes.find((p) => p.kind === "list" && p.at >= second && p.at < second + 1);
    const summary = summarize(list, 1);
    perSecond.push({
      second,
      phase: list[0]?.phase ?? "",
      offered: summary.offeredPerSecond,
      "201": summary.admittedPerSecond,
      statuses: summary.statuses,
      "201 p99 ms": summary.admittedMs.p99,
      "refused p99 ms": summary.refusedMs.p99,
      "rss MB": sample ? Math.round(sample.rssMb) : null,
      "loop lag p99 ms":
        sample?.loopLagP99Ms === undefined ? null : Math.round(sample.loopLagP99Ms),
      "healthz max ms": health.length ? Math.round(Math.max(...health)) : null,
      "list ms": list1 ? Math.round(list1.ms) : null,
      "list status": list1?.status ?? null,
    });
  }
  const phaseRows: Record<string, unknown>[] = [];
  let offset = 0;
  for (const [phase, , seconds] of phases) {
    const inPhase = (at: number) => at >= offset && at < offset + seconds;
    const list = outcomes.filter((o) => o.phase === phase);
    const rss = samples.filter((s) => inPhase(s.at)).map((s) => s.rssMb);
    const lag = samples.filter((s) => inPhase(s.at)).map((s) => s.loopLagMaxMs ?? 0);
    const health = probes
      .filter((p) => p.kind === "healthz" && inPhase(p.at))
      .map((p) => p.ms)
      .sort((a, b) => a - b);
    const lists = probes.filter((p) => p.kind === "list" && inPhase(p.at));
    const summary = summarize(list, seconds);
    // How long requests waited in the generator before being written: the generator kept
    // up when this is small.
    const waits = list
      .filter((o) => o.waitMs !== undefined)
      .map((o) => o.waitMs ?? 0)
      .sort((a, b) => a - b);
    // From the write to the answer: the latency less the wait in the generator.
    const serviceMs = (admitted: boolean) =>
      list
        .filter((o) => o.waitMs !== undefined && (o.status === 201) === admitted)
        .map((o) => o.ms - (o.waitMs ?? 0))
        .sort((a, b) => a - b);
    const [admittedService, refusedService] = [serviceMs(true), serviceMs(false)];
    // The same by connection: the request that opened it (accept queue included), the others.
    const byConnection = (opened: boolean) => {
      const sorted = list
        .filter((o) => o.waitMs !== undefined && (o.connection?.nth === 0) === opened)
        .map((o) => o.ms - (o.waitMs ?? 0))
        .sort((a, b) => a - b);
      return { count: sorted.length, ...spread(sorted) };
    };
    const late = list
      .filter((o) => o.lateMs !== undefined)
      .map((o) => o.lateMs ?? 0)
      .sort((a, b) => a - b);
    const retryAfter = new Set(list.filter((o) => o.status === 503).map((o) => o.retryAfter));
    // The counters are cumulative: a phase's share is its last sample minus the one before.
    const before = samples.filter((s) => s.at < offset).at(-1);
    const lastIn = samples.filter((s) => inPhase(s.at)).at(-1);
    const delta = (pick: (s: Sample) => number | undefined) =>
      lastIn ? (pick(lastIn) ?? 0) - ((before && pick(before)) ?? 0) : null;
    phaseRows.push({
      phase,
      ...summary,
      generatorWaitMs: spread(waits),
      generatorLateMs: spread(late),
      serviceMs: {
        admitted: spread(admittedService),
        refused: spread(refusedService),
      },
      connectionServiceMs: { opened: byConnection(true), reused: byConnection(false) },
      retryAfterValues: [...retryAfter],
      refusedByReason: {
        in_flight: delta((s) => s.shedInFlight),
        queue_delay: delta((s) => s.shedQueueDelay),
        index_lag: delta((s) => s.shedIndexLag),
      },
      peakRssMb: Math.round(Math.max(0, ...rss)),
      maxLoopLagMs: Math.round(Math.max(0, ...lag)),
      healthz: {
        count: health.length,
        p99Ms: percentile(health, 99),
        maxMs: health.at(-1),
        non200: probes.filter((p) => p.kind === "healthz" && inPhase(p.at) && p.status !== 200)
          .length,
      },
      lists: {
        count: lists.length,
        maxMs: Math.round(Math.max(0, ...lists.map((p) => p.ms))),
        statuses: [...new Set(lists.map((p) => p.status))],
      },
    });
    offset += seconds;
  }
  console.table(perSecond.map((row) => ({ ...row, statuses: JSON.stringify(row.statuses) })));
  for (const row of phaseRows) console.log(JSON.stringify(row));
  const output = {
    date: started.toISOString(),
    storage,
    loadAverage: loadavg(),
    ingestMaxInFlight: values.limit ?? "default",
    loopDelayTargetMs: delayTarget ?? "default",
    capacityPerSecond: Math.round(capacity),
    bodyBytes,
    phases: phaseRows,
    perSecond,
  };
  const delaySuffix = delayTarget === undefined ? "" : `-delay${delayTarget}`;
  const file = join(
    root,
    `bench/results/overload-${storage}-${values.limit ?? "default"}${delaySuffix}.json`,
  );
  void mkdir(join(root, "bench/results"), { recursive: true }).then(() =>
    writeFile(file, `${JSON.stringify(output, null, 2)}\n`),
  );
  process.stderr.write(`  written to ${file}\n`);
}

await main();
