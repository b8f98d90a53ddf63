/**
 * The names of plans, environments and key statuses: the vocabulary that auth/, limits/,
 * admin/ and store/ share. A leaf module: it imports nothing.
 */

/** A project's plan, which sets its monthly quota. */
export type PlanName = "free" | "start" | "pro";
/** The environment of an API key, and of everything it writes and reads. */
export type EnvironmentName = "test" | "live";
/** The life of an API key: only an active key authenticates. */
export type ApiKeyStatusName = "active" | "revoked" | "retired";
