/**
 * The cluster's "a log has grown" signal on PostgreSQL: LISTEN/NOTIFY on one channel.
 * Each instance's integrator sends a NOTIFY after a pass that sequenced events has
 * committed; every instance listens and wakes its followers (events/log-wake.ts).
 *
 * Its own small client, apart from the pool: LISTEN holds a connection for the life of
 * the process (postgres.js re-listens after a reconnect), and a NOTIFY is one short
 * statement. A notification is only a hint: a lost one delays followers until their
 * next poll, so failures here are reported and never fail a request or a pass.
 */
import postgres from "postgres";

/** The channel of the signal. */
export const LOG_CHANNEL = "audit_log_advanced";

/** The signal's two ends on PostgreSQL. */
export interface LogNotifications {
  /** Sends one notification (coalesced: one in flight, at most one more queued). */
  notify(): void;
  /** Starts listening; `onNotify` is called for every notification, from any instance. */
  listen(onNotify: () => void): Promise<void>;
  /** Stops listening and closes the client. */
  close(): Promise<void>;
}

/** Options of the PostgreSQL signal. */
export interface LogNotificationOptions {
  url: string;
  /** Told of a failure to send or to listen (not thrown). */
  onError: (error: unknown) => void;
}

/** Creates the signal on the database at `url`; connects on first use. */
export function createLogNotifications(options: LogNotificationOptions): LogNotifications {
  const sql = postgres(options.url, {
    max: 1,
    connect_timeout: 5,
    onnotice: () => {},
    // As the pool (postgres-driver.ts): no type fetch whose promise postgres.js drops.
    fetch_types: false,
  });
  let sending = false;
  let queued = false;
  let closed = false;

  const send = async () => {
    sending = true;
    try {
      while (!closed) {
        queued = false;
        await sql.notify(LOG_CHANNEL, "").catch(options.onError);
        if (!queued) break;
      }
    } finally {
      sending = false;
    }
  };

  return {
    notify() {
      if (closed) return;
      if (sending) {
        queued = true;
        return;
      }
      void send();
    },
    async listen(onNotify) {
      try {
        await sql.listen(LOG_CHANNEL, () => onNotify());
      } catch (error) {
        options.onError(error);
      }
    },
    async close() {
      closed = true;
      await sql.end({ timeout: 5 }).catch(() => {});
    },
  };
}
