/**
 * The one call the viewer makes: List Events over REST (`GET /api/events`) with a
 * frontend token. The REST route rather than the Connect client keeps the bundle to lit
 * and this file; the JSON is the same StoredEvent either way.
 *
 * Errors come out as ApiError with the HTTP status and the service's own message
 * (`Token expired`, `Invalid token`, a parameter refused with 400, ...), so the viewer
 * can tell them apart and show them.
 */

/** The filters of List Events; empty ones are not sent (the service refuses them). */
export interface EventFilters {
  actorId?: string;
  entityType?: string;
  entityId?: string;
  action?: string;
  tenantId?: string;
  q?: string;
  /** ISO 8601 date-time, inclusive. */
  from?: string;
  /** ISO 8601 date-time, inclusive. */
  to?: string;
}

/** One change of an event, as stored. */
export interface EventChange {
  op: string;
  path: string;
  before: unknown;
  after: unknown;
  redacted?: boolean;
}

/** One event as List Events returns it (strings HTML-encoded by the service). */
export interface AuditEvent {
  eventId: string;
  receivedAt: string;
  occurredAt: string;
  actionKey?: string;
  action?: string;
  actionDescription?: string;
  entityType: string;
  entityId: string;
  actorType: string;
  actorId: string;
  actorDisplay?: string;
  tenantId?: string;
  source?: string;
  context?: Record<string, unknown>;
  /** Left out by the service when the event has none (docs/api.md). */
  changes?: EventChange[];
}

/** One page of events, newest first. */
export interface EventPage {
  events: AuditEvent[];
  /** Resumes after the page's last event; null on the last page. */
  nextCursor: string | null;
}

/** The service answered with an error. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A List Events request. */
export interface PageRequest {
  /** The service's URL, like `https://audit.example.com/`. */
  baseUrl: string;
  token: string;
  filters: EventFilters;
  limit: number;
  cursor?: string;
  signal?: AbortSignal;
}

/** Fetches one page of events. */
export async function fetchEventPage(request: PageRequest): Promise<EventPage> {
  const url = new URL("api/events", request.baseUrl);
  for (const [name, value] of Object.entries(request.filters)) {
    if (typeof value === "string" && value.length > 0) url.searchParams.set(name, value);
  }
  url.searchParams.set("limit", String(request.limit));
  if (request.cursor !== undefined) url.searchParams.set("cursor", request.cursor);

  const response = await fetch(url, {
    headers: { authorization: `Bearer ${request.token}`, accept: "application/json" },
    ...(request.signal ? { signal: request.signal } : {}),
  });
  const body = await readJson(response);
  if (!response.ok) {
    const message =
      isObject(body) && typeof body.error === "string" ? body.error : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  if (!isObject(body) || !Array.isArray(body.events)) {
    throw new ApiError(response.status, "unexpected answer from the audit service");
  }
  const events = body.events.filter(isEvent);
  const nextCursor = typeof body.nextCursor === "string" ? body.nextCursor : null;
  return { events, nextCursor };
}

async function readJson(response: Response): Promise<unknown> {
  try {
    return await response.json();
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// The fields the viewer relies on; the rest is shown as it comes.
function isEvent(value: unknown): value is AuditEvent {
  return (
    isObject(value) &&
    typeof value.eventId === "string" &&
    typeof value.occurredAt === "string" &&
    typeof value.entityType === "string" &&
    typeof value.entityId === "string" &&
    typeof value.actorId === "string" &&
    Array.isArray(value.changes ?? [])
  );
}
