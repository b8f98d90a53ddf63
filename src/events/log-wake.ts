/**
 * Wakes follow streams when logs grow: in the process, as soon as this instance's
 * integrator commits a pass that sequenced events, and across instances through a
 * cluster channel (PostgreSQL LISTEN/NOTIFY, store/log-notifications.ts) when there is
 * one. Listeners are called synchronously and only set flags; a wake-up carries no
 * data, so followers read the log itself and a duplicate or lost wake-up is harmless
 * (they also poll).
 */
import type { LogWake } from "./follow-service.js";

/** A cluster channel: send a wake-up to every instance, receive theirs. */
export interface WakeChannel {
  notify(): void;
  listen(onNotify: () => void): Promise<void>;
}

/** The wake-up of one instance. */
export interface LogWaker extends LogWake {
  /** Says that a pass sequenced events and has committed. */
  passCommitted(): void;
  /** Listens on the channel, when there is one. */
  start(): Promise<void>;
  /** Subscribers now (metrics, tests). */
  readonly followers: number;
}

/** Creates the wake-up, with the cluster channel when there is one. */
export function createLogWaker(channel?: WakeChannel): LogWaker {
  const listeners = new Set<() => void>();
  const wakeAll = () => {
    for (const listener of listeners) listener();
  };
  return {
    subscribe(listener) {
      // A wrapper: the same function subscribed twice is two subscriptions.
      const entry = () => listener();
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    passCommitted() {
      wakeAll();
      // This instance's followers are woken above; the others through the channel
      // (this instance hears its own notification too: one extra look, harmless).
      channel?.notify();
    },
    async start() {
      await channel?.listen(wakeAll);
    },
    get followers() {
      return listeners.size;
    },
  };
}
