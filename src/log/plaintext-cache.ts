/**
 * The plaintexts of the events this instance is writing, kept from just before their
 * batch's statement until this instance's integrator takes them, so that the
 * integrator neither reads their ciphertext back (payload and context) nor opens it again:
 * about a tenth of the CPU an event costs between the database, the requests' thread and
 * the derivation worker (docs/write-path.md, Performance).
 *
 * Only a shortcut. An event not found here (another instance wrote it, this one
 * restarted, its entry was pushed out, a pass that took it failed) is read from the
 * journal and opened as before; an entry whose event was never written (refused, or its
 * batch failed) matches no journal row and is pushed out in turn. An entry is the text
 * sealed for that event id, which the service draws (UUIDv7) for each new event: a
 * journal row with that id holds exactly its ciphertext.
 *
 * Bounded: at most `capacity` entries, the oldest pushed out first. The integrator
 * usually takes an entry within a pass interval (50 ms); the bound only matters when it
 * falls behind, and then costs the shortcut, not memory.
 */
import type { EventPlaintext, SealedEvent } from "../crypto/event-cipher.js";

/** The default bound: about 2.5 KB an entry for ~1 KB events, some 20 MB in all. */
export const PLAINTEXT_CACHE_CAPACITY = 8_192;

/** The cache. */
export interface PlaintextCache {
  /** Keeps the plaintexts of events about to be written (those that have one). */
  remember(events: readonly { eventId: string; sealed: SealedEvent }[]): void;
  /** The plaintext kept for an event, removed from the cache; undefined if none. */
  take(eventId: string): EventPlaintext | undefined;
  /** Entries held. */
  readonly size: number;
}

/** Creates an empty cache of at most `capacity` entries. */
export function createPlaintextCache(capacity = PLAINTEXT_CACHE_CAPACITY): PlaintextCache {
  const byEventId = new Map<string, EventPlaintext>();
  // The ids in the order they came, in a ring: the slot written next holds the oldest.
  // Not the Map's own order: finding its first key walks past every entry deleted
  // before it (V8 keeps them as holes until the table is rebuilt), which cost ~1.5 µs
  // an event on the requests' thread once the integrator fell behind and every
  // remember pushed an entry out (measured).
  const order: (string | undefined)[] = new Array(Math.max(capacity, 0)).fill(undefined);
  let next = 0;
  return {
    remember(events) {
      if (capacity <= 0) return;
      for (const { eventId, sealed } of events) {
        if (sealed.plaintext === undefined) continue;
        const oldest = order[next];
        // An id given twice has two slots: its entry goes with the older, which only
        // costs the shortcut.
        if (oldest !== undefined) byEventId.delete(oldest);
        order[next] = eventId;
        next = next + 1 === capacity ? 0 : next + 1;
        byEventId.set(eventId, sealed.plaintext);
      }
    },
    take(eventId) {
      const plaintext = byEventId.get(eventId);
      if (plaintext !== undefined) byEventId.delete(eventId);
      return plaintext;
    },
    get size() {
      return byEventId.size;
    },
  };
}
