/**
 * The read side of the verifiable log (docs/verifiable-log.md, "API"): the latest
 * checkpoint, the verifier key, inclusion and consistency proofs, for the log of the
 * caller's project and environment. Same credentials and scoping as List Events: an API
 * key or a frontend token reads its own project-environment; a tenant-restricted token
 * gets proofs for its tenant's events only. Every refusal is a ServiceError with a clear
 * message (400 for malformed parameters, 404 for what does not exist here).
 */
import type { Authenticator, ReaderPrincipal } from "../auth/authenticator.js";
import type { Credential } from "../auth/credentials.js";
import { filterIndex } from "../crypto/event-cipher.js";
import type { Keyring } from "../crypto/keyring.js";
import { ServiceError } from "../errors.js";
import type { ReadYourWrites } from "../log/read-your-writes.js";
import type { Db } from "../store/db.js";
import type { LogCrypto } from "../tlog/crypto.js";
import { proveRecord, proveTree } from "../tlog/tree.js";
import type { LogSigning } from "./log-signing.js";
import { createTileCache, type TileCache } from "./tile-cache.js";
import {
  type LogAddress,
  locateForProof,
  readCheckpoint,
  readCheckpoints,
  type StoredCheckpoint,
} from "./tree-store.js";

/** An inclusion proof, as the API returns it. */
export interface InclusionProofReply {
  logIndex: number;
  treeSize: number;
  leaf: Uint8Array;
  hashes: Uint8Array[];
}

/** A consistency proof, as the API returns it. */
export interface ConsistencyProofReply {
  from: number;
  to: number;
  hashes: Uint8Array[];
}

/** The log's read operations. */
export interface LogReadService {
  /**
   * `readRequest` reads the request (which has no field) once the credential is checked:
   * it throws for what the request should not carry (REST: an unknown query parameter).
   */
  checkpoint(credential: Credential, readRequest?: () => unknown): Promise<string>;
  verifierKey(credential: Credential, readRequest?: () => unknown): Promise<string>;
  /** `params`: the request's JSON (eventId, treeSize). */
  inclusionProof(credential: Credential, params: unknown): Promise<InclusionProofReply>;
  /** `params`: the request's JSON (from, to). */
  consistencyProof(credential: Credential, params: unknown): Promise<ConsistencyProofReply>;
}

/** Dependencies of the log's read service. */
export interface LogReadDeps {
  db: Db;
  crypto: LogCrypto;
  authenticator: Authenticator;
  keyring: Keyring;
  signing: LogSigning;
  /**
   * Waits for the log's integrator to pass what was acknowledged, as lists do: an event
   * not found in the log is looked for again after it (without: answered at once).
   */
  readYourWrites?: ReadYourWrites;
  /** The tiles kept in memory (default: createTileCache's, 64 MiB). */
  tiles?: TileCache;
}

/** Fixed messages of the log's refusals (the OpenAPI document lists them). */
export const LogMessages = {
  noCheckpoint: "No checkpoint has been published for this log yet",
  eventIdRequired: "eventId is required",
  eventIdUuid: "eventId must be a UUID",
  eventNotFound: "Event not found",
  sizesRequired: "from and to are required",
  fromAfterTo: "from must not be greater than to",
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function field(params: unknown, name: string): unknown {
  return typeof params === "object" && params !== null
    ? (params as Record<string, unknown>)[name]
    : undefined;
}

/**
 * A size parameter: a positive integer, as a JSON number or decimal string (of any
 * length: a size no log reaches is not published, 404, rather than malformed); else 400.
 * An empty one (`treeSize=`) is refused too, where `emptyIsAbsent` is not set: a
 * client that builds the query from an unset variable must not get the proof for
 * another size than it meant.
 */
function size(params: unknown, name: string, emptyIsAbsent = false): bigint | undefined {
  const value = field(params, name);
  if (value === undefined || value === null || (emptyIsAbsent && value === "")) return undefined;
  const parsed =
    typeof value === "number" && Number.isSafeInteger(value)
      ? BigInt(value)
      : typeof value === "string" && /^[0-9]+$/.test(value)
        ? BigInt(value)
        : undefined;
  if (parsed === undefined || parsed < 1n) {
    throw new ServiceError("bad_request", `${name} must be a positive integer`);
  }
  return parsed;
}

/** Creates the service. */
export function createLogReadService(deps: LogReadDeps): LogReadService {
  const { db, crypto, authenticator, signing } = deps;
  const tiles = deps.tiles ?? createTileCache(crypto);

  const logOf = (principal: ReaderPrincipal): LogAddress => ({
    projectId: principal.projectId,
    environment: principal.environment,
  });

  const notPublished = (treeSize: number | bigint | undefined) =>
    new ServiceError(
      "not_found",
      treeSize === undefined
        ? LogMessages.noCheckpoint
        : `No checkpoint of tree size ${treeSize} has been published`,
    );

  /** A size asked for, as the store counts; one beyond any log's reach is not published. */
  const storedSize = (treeSize: bigint): number => {
    if (treeSize > BigInt(Number.MAX_SAFE_INTEGER)) throw notPublished(treeSize);
    return Number(treeSize);
  };

  const published = async (log: LogAddress, treeSize?: number): Promise<StoredCheckpoint> => {
    const checkpoint = await readCheckpoint(db, log, treeSize);
    if (checkpoint !== undefined) return checkpoint;
    throw notPublished(treeSize);
  };

  return {
    async checkpoint(credential, readRequest) {
      const principal = await authenticator.requireReader(credential);
      readRequest?.();
      return (await published(logOf(principal))).note;
    },

    async verifierKey(credential, readRequest) {
      const principal = await authenticator.requireReader(credential);
      readRequest?.();
      return signing.verifierKey(signing.origin(principal.projectId, principal.environment));
    },

    async inclusionProof(credential, params) {
      const principal = await authenticator.requireReader(credential);
      const eventId = field(params, "eventId");
      if (eventId === undefined || eventId === null || eventId === "") {
        throw new ServiceError("bad_request", LogMessages.eventIdRequired);
      }
      if (typeof eventId !== "string" || !UUID.test(eventId)) {
        throw new ServiceError("bad_request", LogMessages.eventIdUuid);
      }
      const asked = size(params, "treeSize");
      const treeSize = asked === undefined ? undefined : storedSize(asked);
      const log = logOf(principal);
      const tenantIdx =
        principal.tenantId === undefined
          ? undefined
          : filterIndex(
              await deps.keyring.forProject(principal.projectId),
              "tenantId",
              principal.tenantId,
            );
      // One query for the event's position, the checkpoint, its leaf and its bottom tile;
      // the upper tiles and the tree's right edge are usually cached (tile-cache.ts).
      const locate = () => locateForProof(db, log, eventId.toLowerCase(), tenantIdx, treeSize);
      let start = await locate();
      if (start.logIndex === undefined && deps.readYourWrites) {
        // Acknowledged but not yet numbered (the integrator runs behind the journal)?
        // Then it is in the log once the integrator passes what was acknowledged.
        await deps.readYourWrites.awaitIntegrated(log.projectId, log.environment);
        start = await locate();
      }
      const { logIndex, checkpoint } = start;
      if (logIndex === undefined) throw new ServiceError("not_found", LogMessages.eventNotFound);
      if (checkpoint === undefined) throw notPublished(treeSize);
      if (logIndex >= checkpoint.size) {
        throw new ServiceError(
          "not_found",
          `Event ${eventId} (logIndex ${logIndex}) is not in the checkpoint of tree size ${checkpoint.size}` +
            (treeSize === undefined ? " yet: checkpoints follow within seconds" : ""),
        );
      }
      const { leaf } = start;
      if (leaf === undefined) throw new Error(`log tree: no leaf stored at ${logIndex}`);
      tiles.keep(log, start.tiles);
      const hashes = await proveRecord(crypto, checkpoint.size, logIndex, tiles.reader(db, log));
      return { logIndex, treeSize: checkpoint.size, leaf, hashes };
    },

    async consistencyProof(credential, params) {
      const principal = await authenticator.requireReader(credential);
      // Empty counts as missing here: the answer is the same 400 either way.
      const from = size(params, "from", true);
      const to = size(params, "to", true);
      if (from === undefined || to === undefined) {
        throw new ServiceError("bad_request", LogMessages.sizesRequired);
      }
      if (from > to) throw new ServiceError("bad_request", LogMessages.fromAfterTo);
      const [older, newer] = [storedSize(from), storedSize(to)];
      const log = logOf(principal);
      const found = await readCheckpoints(db, log, [older, newer]);
      for (const size of [older, newer]) if (!found.has(size)) throw notPublished(size);
      const hashes = await proveTree(crypto, newer, older, tiles.reader(db, log));
      return { from: older, to: newer, hashes };
    },
  };
}
