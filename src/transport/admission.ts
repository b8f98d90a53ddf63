/**
 * Admission control at the edge (issue 26, overload): a bounded number of requests in
 * progress per class of operation, and a fast refusal beyond it. Without it, requests
 * offered faster than the service can store them queue without limit (the group-commit
 * queue, the database pool's wait queue, the bodies and promises behind them): memory
 * grows and every answer comes later, admitted or not. With it, what the service takes on
 * is at most the limit, so the queues behind it are bounded and an admitted request waits
 * at most for the limit's worth of work ahead of it; the excess is answered at once
 * with 503 `Service temporarily unavailable: too many requests in progress` and
 * `Retry-After: 1` (gRPC and Connect: Unavailable with a RetryInfo detail of 1 s), as a
 * database outage is answered.
 *
 * The operations are wrapped, so every protocol is limited alike: REST, Connect, gRPC-Web,
 * the Connect adapter's gRPC and the lean unary gRPC path (which all call the same
 * operations), single and bulk ingestion, and each event of an IngestEvents stream.
 * Classes have separate budgets, so that an ingest flood never takes the slots of reads
 * (and the other way round). Probes (/healthz, /readyz, /metrics), the gRPC health
 * service, AdminService and the export and follow streams are not limited here.
 *
 * A stream is not refused: it is flow-controlled. An event read when no slot is free
 * waits for one (first come, first served among waiting streams) before the operation
 * sees it, and the stream reads nothing more meanwhile, so HTTP/2 flow control holds its
 * client back; a client pipelining more events than the limit is slowed, not failed.
 * A request (unary) never waits: a free slot goes to a waiting stream event first, so a
 * request finds none while streams wait and is refused at once.
 *
 * Beside the count, the event loop's delay (queue-delay.ts): while the loop is behind, a
 * call of a limited class is refused with the same answer before it takes a slot, and a
 * stream event waits until the loop has caught up before it waits for a slot. The count
 * cannot see requests that wait to be read; the delay can.
 *
 * A REST ingest request is also refused earlier, at the edge (`refusesNow`, called by
 * http-handler.ts before the body is read), with one prepared answer: under an overload
 * most requests are refused, and a refusal that parses the body and builds an error costs
 * several times a bare request (docs/reliability.md), taking the CPU the admitted ones need.
 *
 * Invariant: a slot is taken before the operation does anything and given back exactly
 * once, when its answer is settled (whatever the outcome); a refused call has done
 * nothing, so retrying it is always safe.
 */
import type { DescMethod, Message } from "@bufbuild/protobuf";
import type {
  Operations,
  StreamCall,
  StreamOperation,
  StreamOperations,
} from "../api/operation.js";
import { Messages, ServiceError } from "../errors.js";
import type { LoadShedder } from "./queue-delay.js";
import { waitInLine } from "./wait-queue.js";

/** The classes of operation, each with its own budget. */
export type AdmissionClass = "ingest" | "read";

/**
 * Why a call was refused: its class had all its slots taken (`in_flight`), or the event
 * loop was behind (`queue_delay`, queue-delay.ts).
 */
export type RefusalReason = "in_flight" | "queue_delay";

/** The most requests of each class in progress at once; 0 for no limit. */
export type AdmissionLimits = Readonly<Record<AdmissionClass, number>>;

/** Seconds a refused client is told to wait (Retry-After, RetryInfo). */
export const OVERLOAD_RETRY_AFTER_SECONDS = 1;

/** What a refused call is answered: 503 / Unavailable, come back in a second. */
export function overloaded(): ServiceError {
  return new ServiceError("unavailable", Messages.overloaded, {
    retryAfterSeconds: OVERLOAD_RETRY_AFTER_SECONDS,
  });
}

/** A counted budget of requests in progress. */
export interface Gate {
  /** Takes a slot; false when all are taken. */
  tryEnter(): boolean;
  /**
   * Takes a slot once one is free, after those waiting before; rejects (with no slot
   * taken) when `signal` aborts first.
   */
  enter(signal?: AbortSignal): Promise<void>;
  /** Gives a slot back: to the first waiting, if any. */
  leave(): void;
  /** No slot free: `tryEnter` would refuse. */
  readonly full: boolean;
  readonly inFlight: number;
  /** The budget; 0 for no limit. */
  readonly limit: number;
}

/** A gate of `limit` slots (0: never refuses, still counts). */
export function createGate(limit: number): Gate {
  let inFlight = 0;
  // Those waiting for a slot, in order; a slot given back goes to the first, so
  // `inFlight` stays at the limit while any waits.
  const waiting: (() => void)[] = [];
  const free = () => limit === 0 || inFlight < limit;
  return {
    tryEnter() {
      if (!free()) return false;
      inFlight++;
      return true;
    },
    enter(signal) {
      if (free()) {
        inFlight++;
        return Promise.resolve();
      }
      return waitInLine(waiting, signal);
    },
    leave() {
      const next = waiting.shift();
      if (next) next();
      else inFlight--;
    },
    get full() {
      return !free();
    },
    get inFlight() {
      return inFlight;
    },
    limit,
  };
}

/** What the edge needs to admit calls. */
export interface Admission {
  /** The operations, each limited by the gate of its class (others unchanged). */
  operations(operations: Operations): Operations;
  /**
   * The streaming operations: each event of a stream takes a slot until answered, and
   * waits for one when none is free.
   */
  streams(streams: StreamOperations): StreamOperations;
  /**
   * Refuses a call of `admissionClass` now, before anything of it is read, when it would
   * be refused anyway (no free slot, or the loop is behind): counts the refusal and returns
   * true; false (and nothing taken) when the call may go on to its operation.
   */
  refusesNow(admissionClass: AdmissionClass): boolean;
  /** The gate of each class, for metrics and tests. */
  gates: Readonly<Record<AdmissionClass, Gate>>;
}

/** Options of the admission control. */
export interface AdmissionOptions {
  limits: AdmissionLimits;
  /** When set, calls of a limited class are also refused while it sheds (queue-delay.ts). */
  shedder?: LoadShedder;
  /** Called for each refused call (metrics). */
  onRefused?: (admissionClass: AdmissionClass, reason: RefusalReason) => void;
}

// The class of each service's methods: the rest (AdminService, the health and
// reflection services, which are not operations) are not limited.
const CLASS_OF_SERVICE: Readonly<Record<string, AdmissionClass>> = {
  "audit.v1.IngestService": "ingest",
  "audit.v1.EventService": "read",
  "audit.v1.LogService": "read",
  "audit.v1.TokenService": "read",
};

/** The class of a method, or undefined when it is not limited. */
export function admissionClass(method: DescMethod): AdmissionClass | undefined {
  return CLASS_OF_SERVICE[method.parent.typeName];
}

/** Creates the admission control with the given budgets. */
export function createAdmission(options: AdmissionOptions): Admission {
  const gates: Record<AdmissionClass, Gate> = {
    ingest: createGate(options.limits.ingest),
    read: createGate(options.limits.read),
  };
  const { shedder } = options;
  const refuse = (admission: AdmissionClass, reason: RefusalReason) => {
    options.onRefused?.(admission, reason);
    return overloaded();
  };

  return {
    gates,
    refusesNow(admission) {
      const reason: RefusalReason | undefined = shedder?.shedding
        ? "queue_delay"
        : gates[admission].full
          ? "in_flight"
          : undefined;
      if (reason === undefined) return false;
      options.onRefused?.(admission, reason);
      return true;
    },
    operations(operations) {
      const admitted: Operations = new Map();
      for (const [method, operation] of operations) {
        const admission = admissionClass(method);
        if (admission === undefined) {
          admitted.set(method, operation);
          continue;
        }
        const gate = gates[admission];
        admitted.set(method, async (call) => {
          if (shedder?.shedding) throw refuse(admission, "queue_delay");
          if (!gate.tryEnter()) throw refuse(admission, "in_flight");
          try {
            return await operation(call);
          } finally {
            gate.leave();
          }
        });
      }
      return admitted;
    },
    streams(streams) {
      const admitted: StreamOperations = new Map();
      for (const [method, operation] of streams) {
        const admission = admissionClass(method);
        if (admission === undefined) {
          admitted.set(method, operation);
          continue;
        }
        const gate = gates[admission];
        admitted.set(method, (call) => admitStream(gate, shedder, call, operation));
      }
      return admitted;
    },
  };
}

/**
 * A stream whose requests each take a slot when read, waiting for one when none is free
 * (reading nothing more meanwhile), given back when the operation yields its answer; while
 * the loop is behind (`shedder`), a request read waits for it to catch up first.
 * Relies on the operation's contract: one answer per request read, in the order read.
 */
async function* admitStream(
  gate: Gate,
  shedder: LoadShedder | undefined,
  call: StreamCall,
  operation: StreamOperation,
): AsyncGenerator<Message> {
  // Requests read (each holding a slot) and not yet answered.
  let holding = 0;
  let finished = false;
  // Ends a wait (for the loop, for a slot) when the client goes away or the stream is over.
  const over = new AbortController();
  const stop = () => over.abort();
  call.signal?.addEventListener("abort", stop, { once: true });
  if (call.signal?.aborted) stop();
  const requests = (async function* () {
    for await (const read of call.requests) {
      try {
        if (shedder?.shedding) await shedder.cleared(over.signal);
        await gate.enter(over.signal);
      } catch {
        // No slot was taken. The requests end rather than fail: the operation may no
        // longer be there to observe a failure.
        return;
      }
      if (finished) {
        gate.leave();
        return;
      }
      holding++;
      yield read;
    }
  })();
  try {
    for await (const answer of operation({ ...call, requests })) {
      if (holding > 0) {
        holding--;
        gate.leave();
      }
      yield answer;
    }
  } finally {
    // A stream cancelled or failed with requests unanswered gives their slots back, and
    // a request still waiting for one stops waiting.
    finished = true;
    call.signal?.removeEventListener("abort", stop);
    stop();
    for (; holding > 0; holding--) gate.leave();
  }
}
