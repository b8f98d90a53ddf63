/**
 * `<audit-log-viewer>`: a customer's users' own audit trail, embeddable in any page. It
 * reads List Events with a frontend token that the host page provides through
 * `viewer.tokenProvider = async () => token` (its backend mints tokens with its API key)
 * and shows the events newest first, a page at a time as the list scrolls, with filters,
 * search, and each event's changes and context.
 *
 * Invariants:
 * - Strings from the service are rendered through lit text bindings only (never
 *   unsafeHTML, innerHTML or attributes that take markup or URLs); they are decoded from
 *   the service's HTML encoding first (display.ts), so text shows as sent and never runs.
 * - What is on screen answers the newest request: changing filters or the token aborts
 *   the request in flight, and a generation counter drops any answer that still arrives.
 * - A 401 `Token expired` gets one token refresh and one retry; every other failure,
 *   and that one when the retry fails too, is shown in a role=alert region.
 *
 * Attributes: `base-url` (the service, default this page's origin), `page-size` (1 to
 * 200, default 50). Styling hooks: `--audit-log-viewer-max-height` (of the scrolling
 * list, default 32rem) and `--audit-log-viewer-accent`.
 */
import { css, html, LitElement, nothing, type PropertyValues, type TemplateResult } from "lit";
import { repeat } from "lit/directives/repeat.js";
import {
  ApiError,
  type AuditEvent,
  type EventFilters,
  type EventPage,
  fetchEventPage,
} from "./api.js";
import { decodeJson, formatJson, formatTime, localInputToIso } from "./display.js";
import { createLogVerifier, type LogVerifier, type Verification } from "./log-verification.js";
import {
  createTokenSource,
  type TokenProvider,
  TokenProviderError,
  type TokenSource,
} from "./token-source.js";

export type { TokenProvider } from "./token-source.js";

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 200;
const TEXT_FILTERS = ["q", "actorId", "entityType", "entityId", "action", "tenantId"] as const;
/** First wait before a "pending" event is checked again; it doubles up to the maximum. */
const PENDING_RECHECK_MS = 1_000;
const PENDING_RECHECK_MAX_MS = 30_000;

/** The element. */
export class AuditLogViewer extends LitElement {
  static override properties = {
    baseUrl: { attribute: "base-url" },
    pageSize: { attribute: "page-size", type: Number },
    tokenProvider: { attribute: false },
    events: { state: true },
    nextCursor: { state: true },
    loading: { state: true },
    error: { state: true },
    open: { state: true },
    verifyProofs: { attribute: "verify", type: Boolean },
    verifierKey: { attribute: "verifier-key" },
    verification: { state: true },
  };

  /** The service's URL; empty: this page's origin. */
  declare baseUrl: string;
  /** Events per page. */
  declare pageSize: number;
  /** Returns a fresh frontend token; set by the host page. Setting it (re)loads. */
  declare tokenProvider: TokenProvider | undefined;
  // Events shown, already decoded for display.
  declare private events: AuditEvent[];
  declare private nextCursor: string | null;
  declare private loading: boolean;
  declare private error: string | undefined;
  // Event ids whose details are open.
  declare private open: ReadonlySet<string>;
  /** Check each listed event against the signed log in this browser (WebCrypto). */
  declare verifyProofs: boolean;
  /**
   * The log's verifier key to trust (or its keys before and after a rotation, separated by
   * spaces); empty: the one the service publishes.
   */
  declare verifierKey: string;
  // What the check of each event found, by event id.
  declare private verification: ReadonlyMap<string, Verification>;
  private verifier: LogVerifier | undefined;

  private filters: EventFilters = {};
  private tokens: TokenSource | undefined;
  private generation = 0;
  private inFlight: AbortController | undefined;
  private observer: IntersectionObserver | undefined;
  private observed: Element | undefined;

  constructor() {
    super();
    this.baseUrl = "";
    this.pageSize = DEFAULT_PAGE_SIZE;
    this.tokenProvider = undefined;
    this.events = [];
    this.nextCursor = null;
    this.loading = false;
    this.error = undefined;
    this.open = new Set();
    this.verifyProofs = false;
    this.verifierKey = "";
    this.verification = new Map();
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) this.loadMore();
    });
    // Back on the page after being moved: start again if nothing is shown, and render
    // so that updated() watches the end of the list again.
    if (this.tokens && this.hasUpdated && this.events.length === 0) this.reload();
    this.requestUpdate();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.observer?.disconnect();
    this.observer = undefined;
    this.observed = undefined;
    this.tokens?.stop();
    this.inFlight?.abort();
    this.loading = false;
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    if (changed.has("tokenProvider")) {
      this.tokens?.stop();
      this.tokens = this.tokenProvider ? createTokenSource(this.tokenProvider) : undefined;
      this.reload();
    } else if ((changed.has("baseUrl") || changed.has("pageSize")) && this.hasUpdated) {
      this.reload();
    }
  }

  protected override updated(): void {
    // Watch the "Load more" button at the end of the list. Observing anew after every
    // update also reports it again when a page that arrived left it in view.
    const sentinel = this.renderRoot.querySelector(".more") ?? undefined;
    if (!this.observer) return;
    if (this.observed) this.observer.unobserve(this.observed);
    this.observed = sentinel;
    if (sentinel && !this.loading) this.observer.observe(sentinel);
  }

  /** Shows the first page again, with the current filters (the host may call it to refresh). */
  reload(): void {
    this.generation++;
    this.inFlight?.abort();
    this.inFlight = undefined;
    this.events = [];
    this.nextCursor = null;
    this.open = new Set();
    this.verification = new Map();
    this.verifier = undefined;
    this.error = undefined;
    this.loading = false;
    if (this.tokens) void this.fetchPage(undefined);
  }

  private loadMore = (): void => {
    if (this.loading || this.error !== undefined || this.nextCursor === null) return;
    void this.fetchPage(this.nextCursor);
  };

  private async fetchPage(cursor: string | undefined): Promise<void> {
    const tokens = this.tokens;
    if (!tokens) return;
    const generation = this.generation;
    const controller = new AbortController();
    this.inFlight = controller;
    this.loading = true;
    this.error = undefined;
    try {
      const request = (token: string) =>
        fetchEventPage({
          baseUrl: this.serviceUrl(),
          token,
          filters: this.filters,
          limit: this.limit(),
          ...(cursor === undefined ? {} : { cursor }),
          signal: controller.signal,
        });
      let page: EventPage;
      try {
        page = await request(await tokens.get());
      } catch (error) {
        // The service's message for an expired token (any other 401 is final).
        if (!(error instanceof ApiError && error.status === 401)) throw error;
        if (error.message !== "Token expired") throw error;
        page = await request(await tokens.refresh());
      }
      if (generation !== this.generation) return;
      // The cursor never repeats an event; the check keeps repeat()'s keys unique anyway.
      const shown = new Set(this.events.map((event) => event.eventId));
      const raw = page.events.filter((event) => !shown.has(event.eventId));
      this.events = [...this.events, ...raw.map(forDisplay)];
      // The check reads the events as listed (before decoding for display).
      if (this.verifyProofs) this.verifyEvents(raw, generation, tokens);
      this.nextCursor = page.nextCursor;
    } catch (error) {
      if (generation !== this.generation || controller.signal.aborted) return;
      this.error = describe(error);
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        this.inFlight = undefined;
      }
    }
  }

  private verifyEvents(
    events: AuditEvent[],
    generation: number,
    tokens: TokenSource,
    attempt = 0,
  ): void {
    this.verifier ??= createLogVerifier({
      baseUrl: this.serviceUrl(),
      token: () => tokens.get(),
      verifierKey: this.verifierKey ?? "",
    });
    const verifier = this.verifier;
    void (async () => {
      const pending: AuditEvent[] = [];
      // One at a time: a page's proofs follow each other without crowding the service.
      for (const event of events) {
        const result = await verifier.verify(event as unknown as Record<string, unknown>);
        if (generation !== this.generation) return;
        this.verification = new Map(this.verification).set(event.eventId, result);
        if (result.state === "pending") pending.push(event);
      }
      if (pending.length === 0) return;
      // Newer than the latest signed checkpoint: a later one covers them (the service
      // signs one every second by default). Look again, less often each time, for as
      // long as the list is shown.
      setTimeout(
        () => {
          if (generation !== this.generation || !this.isConnected) return;
          this.verifyEvents(pending, generation, tokens, attempt + 1);
        },
        Math.min(PENDING_RECHECK_MS * 2 ** attempt, PENDING_RECHECK_MAX_MS),
      );
    })();
  }

  private renderProof(eventId: string) {
    if (!this.verifyProofs) return nothing;
    const result = this.verification.get(eventId);
    if (result === undefined) return html`<span class="proof checking">checking…</span>`;
    if (result.state === "verified") {
      return html`<span
        class="proof verified"
        title=${`In the signed log (checkpoint of ${result.treeSize} events), unchanged: checked in this browser`}
        >✓ verified</span
      >`;
    }
    return html`<span class="proof ${result.state}" title=${result.reason}
      >${result.state === "pending" ? "… pending" : "✗ not verified"}</span
    >`;
  }

  private serviceUrl(): string {
    const base = this.baseUrl.trim() || window.location.origin;
    return base.endsWith("/") ? base : `${base}/`;
  }

  private limit(): number {
    const size = Math.trunc(Number(this.pageSize));
    return Number.isFinite(size) && size >= 1 ? Math.min(size, MAX_PAGE_SIZE) : DEFAULT_PAGE_SIZE;
  }

  private onSubmit = (event: SubmitEvent): void => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const filters: EventFilters = {};
    for (const name of TEXT_FILTERS) {
      const value = String(data.get(name) ?? "").trim();
      if (value.length > 0) filters[name] = value;
    }
    const from = localInputToIso(String(data.get("from") ?? ""), false);
    const to = localInputToIso(String(data.get("to") ?? ""), true);
    if (from) filters.from = from;
    if (to) filters.to = to;
    this.filters = filters;
    this.reload();
  };

  private onReset = (): void => {
    this.filters = {};
    this.reload();
  };

  private toggle(eventId: string): void {
    const open = new Set(this.open);
    if (!open.delete(eventId)) open.add(eventId);
    this.open = open;
  }

  // Arrow keys, Home and End move between rows; Enter and Space are the button's own.
  private onRowKey = (event: KeyboardEvent): void => {
    const rows = [...this.renderRoot.querySelectorAll<HTMLButtonElement>("button.summary")];
    const index = rows.indexOf(event.currentTarget as HTMLButtonElement);
    const target =
      event.key === "ArrowDown"
        ? rows[index + 1]
        : event.key === "ArrowUp"
          ? rows[index - 1]
          : event.key === "Home"
            ? rows[0]
            : event.key === "End"
              ? rows.at(-1)
              : undefined;
    if (!target) return;
    event.preventDefault();
    target.focus();
  };

  private retry = (): void => {
    if (this.events.length === 0) {
      this.reload();
    } else {
      this.error = undefined;
      this.loadMore();
    }
  };

  protected override render(): TemplateResult {
    return html`
      <form class="filters" aria-label="Filter events" @submit=${this.onSubmit} @reset=${this.onReset}>
        <label class="search">Search <input type="search" name="q" autocomplete="off" /></label>
        <label>Actor <input name="actorId" autocomplete="off" /></label>
        <label>Entity type <input name="entityType" autocomplete="off" /></label>
        <label>Entity id <input name="entityId" autocomplete="off" /></label>
        <label>Action <input name="action" autocomplete="off" /></label>
        <label>Tenant <input name="tenantId" autocomplete="off" /></label>
        <label>From <input type="datetime-local" name="from" /></label>
        <label>To <input type="datetime-local" name="to" /></label>
        <div class="buttons">
          <button type="submit">Apply</button>
          <button type="reset">Clear</button>
        </div>
      </form>
      ${
        this.error === undefined
          ? nothing
          : html`<div class="error" role="alert">
              <span>${this.error}</span>
              <button type="button" @click=${this.retry}>Try again</button>
            </div>`
      }
      <p class="status" role="status">${this.statusText()}</p>
      <div
        class=${this.events.length === 0 ? "list empty" : "list"}
        aria-busy=${this.loading ? "true" : "false"}
      >
        ${
          this.events.length === 0
            ? nothing
            : html`<div class="head" aria-hidden="true">
                <span>Occurred</span><span>Action</span><span>Actor</span><span>Entity</span
                ><span>Tenant</span>
              </div>`
        }
        <ul aria-label="Audit events">
          ${repeat(
            this.events,
            (event) => event.eventId,
            (event, index) => this.renderRow(event, index),
          )}
        </ul>
        ${
          this.nextCursor !== null && this.error === undefined
            ? html`<button type="button" class="more" @click=${this.loadMore}>
                ${this.loading ? "Loading…" : "Load more"}
              </button>`
            : nothing
        }
      </div>
    `;
  }

  private statusText(): string {
    if (!this.tokens) return "Waiting for a frontend token.";
    const count = this.events.length;
    if (count === 0) {
      if (this.loading) return "Loading events…";
      return this.error === undefined ? "No events match these filters." : "";
    }
    const shown = `${count} ${count === 1 ? "event" : "events"}`;
    if (this.loading) return `Showing ${shown}; loading more…`;
    return this.nextCursor === null
      ? `Showing all ${shown}, newest first.`
      : `Showing ${shown}, newest first; scroll for more.`;
  }

  private renderRow(event: AuditEvent, index: number): TemplateResult {
    const open = this.open.has(event.eventId);
    const detailsId = `details-${index}`;
    return html`<li class="row">
      <button
        type="button"
        class="summary"
        aria-expanded=${open ? "true" : "false"}
        aria-controls=${open ? detailsId : nothing}
        data-event-id=${event.eventId}
        @click=${() => this.toggle(event.eventId)}
        @keydown=${this.onRowKey}
      >
        <span class="time"
          ><time datetime=${event.occurredAt}>${formatTime(event.occurredAt)}</time>
          ${this.renderProof(event.eventId)}</span
        >
        <span class="action">${actionOf(event)}</span>
        <span class="actor"
          >${event.actorDisplay ?? event.actorId}
          ${event.actorDisplay === undefined ? nothing : html`<span class="sub">${event.actorId}</span>`}</span
        >
        <span class="entity">${event.entityType} <span class="sub">${event.entityId}</span></span>
        <span class="tenant">${event.tenantId ?? ""}</span>
      </button>
      ${open ? this.renderDetails(event, detailsId) : nothing}
    </li>`;
  }

  private renderDetails(event: AuditEvent, id: string): TemplateResult {
    const field = (name: string, value: string | undefined) =>
      value === undefined ? nothing : html`<dt>${name}</dt><dd>${value}</dd>`;
    return html`<section class="details" id=${id} aria-label="Event details">
      <dl>
        ${field("Event id", event.eventId)}
        ${field("Occurred", event.occurredAt)}
        ${field("Received", event.receivedAt)}
        ${field("Action", actionOf(event))}
        ${field("Description", event.actionDescription)}
        ${field("Actor", `${event.actorDisplay ?? event.actorId} (${event.actorType} ${event.actorId})`)}
        ${field("Entity", `${event.entityType} ${event.entityId}`)}
        ${field("Tenant", event.tenantId)}
        ${field("Source", event.source)}
      </dl>
      <h3>Changes</h3>
      ${
        event.changes === undefined || event.changes.length === 0
          ? html`<p class="none">No changes recorded.</p>`
          : html`<table class="diff">
              <thead>
                <tr>
                  <th scope="col">Field</th>
                  <th scope="col" class="op">Op</th>
                  <th scope="col" class="value">Before</th>
                  <th scope="col" class="value">After</th>
                </tr>
              </thead>
              <tbody>
                ${event.changes.map(
                  (change) => html`<tr>
                    <th scope="row">
                      <code>${change.path}</code>
                      ${change.redacted ? html`<span class="badge">redacted</span>` : nothing}
                    </th>
                    <td>${change.op}</td>
                    <td><del><pre>${formatJson(change.before)}</pre></del></td>
                    <td><ins><pre>${formatJson(change.after)}</pre></ins></td>
                  </tr>`,
                )}
              </tbody>
            </table>`
      }
      <h3>Context</h3>
      ${
        event.context === undefined || Object.keys(event.context).length === 0
          ? html`<p class="none">No context.</p>`
          : html`<pre class="json">${formatJson(event.context)}</pre>`
      }
    </section>`;
  }

  static override styles = css`
    :host {
      display: block;
      font: 14px/1.4 system-ui, sans-serif;
      color: #1f2328;
      --accent: var(--audit-log-viewer-accent, #0b5cad);
    }
    .filters {
      display: grid;
      grid-template-columns: repeat(auto-fill, minmax(9.5rem, 1fr));
      gap: 0.5rem 0.75rem;
      align-items: end;
      margin-bottom: 0.75rem;
    }
    .filters label {
      display: flex;
      flex-direction: column;
      font-size: 12px;
      font-weight: 600;
      color: #57606a;
    }
    .filters .search {
      grid-column: 1 / -1;
    }
    input {
      box-sizing: border-box;
      height: 2rem;
      font: inherit;
      padding: 0.3rem 0.4rem;
      border: 1px solid #8c959f;
      border-radius: 4px;
      margin-top: 0.15rem;
    }
    .buttons {
      display: flex;
      gap: 0.5rem;
    }
    .buttons button {
      height: 2rem;
    }
    button {
      font: inherit;
      cursor: pointer;
    }
    .buttons button,
    .error button,
    .more {
      padding: 0.3rem 0.8rem;
      border: 1px solid var(--accent);
      border-radius: 4px;
      background: #fff;
      color: var(--accent);
    }
    .buttons button[type="submit"] {
      background: var(--accent);
      color: #fff;
    }
    :focus-visible {
      outline: 2px solid var(--accent);
      outline-offset: 1px;
    }
    .error {
      display: flex;
      gap: 0.75rem;
      align-items: center;
      justify-content: space-between;
      padding: 0.5rem 0.75rem;
      border: 1px solid #cf222e;
      border-radius: 4px;
      background: #ffebe9;
      color: #82071e;
    }
    .status {
      margin: 0.5rem 0;
      color: #57606a;
    }
    .list {
      max-height: var(--audit-log-viewer-max-height, 32rem);
      overflow-y: auto;
      border: 1px solid #d0d7de;
      border-radius: 4px;
    }
    .list.empty {
      border: 0;
    }
    .status:empty {
      margin: 0;
    }
    ul {
      list-style: none;
      margin: 0;
      padding: 0;
    }
    .head,
    .summary {
      display: grid;
      grid-template-columns: 10.5rem 11rem minmax(8rem, 1.2fr) minmax(8rem, 1fr) 6rem;
      gap: 0.75rem;
      padding: 0.4rem 0.75rem;
      text-align: left;
    }
    .head {
      position: sticky;
      top: 0;
      background: #f6f8fa;
      border-bottom: 1px solid #d0d7de;
      font-size: 12px;
      font-weight: 600;
      color: #57606a;
      z-index: 1;
    }
    .row {
      border-bottom: 1px solid #eaeef2;
    }
    .summary {
      width: 100%;
      border: 0;
      background: none;
      color: inherit;
    }
    .summary:hover {
      background: #f6f8fa;
    }
    .summary[aria-expanded="true"] {
      background: #ddf4ff;
    }
    .summary span {
      overflow-wrap: anywhere;
    }
    .sub {
      display: block;
      font-size: 12px;
      color: #57606a;
    }
    .time {
      font-variant-numeric: tabular-nums;
    }
    .proof {
      display: block;
      font-size: 12px;
      color: #57606a;
    }
    .proof.verified {
      color: #1a7f37;
    }
    .proof.failed {
      color: #cf222e;
      font-weight: 600;
    }
    .action {
      font-family: ui-monospace, monospace;
      font-size: 13px;
    }
    .details {
      padding: 0.5rem 0.75rem 0.75rem;
      background: #fbfcfd;
      border-top: 1px solid #eaeef2;
    }
    dl {
      display: grid;
      grid-template-columns: max-content 1fr;
      gap: 0.2rem 1rem;
      margin: 0;
    }
    dt {
      font-weight: 600;
      color: #57606a;
    }
    dd {
      margin: 0;
      overflow-wrap: anywhere;
    }
    h3 {
      font-size: 13px;
      margin: 0.75rem 0 0.35rem;
    }
    .diff {
      border-collapse: collapse;
      width: 100%;
    }
    .diff th,
    .diff td {
      border: 1px solid #d0d7de;
      padding: 0.25rem 0.5rem;
      vertical-align: top;
      text-align: left;
    }
    .diff thead th {
      background: #f6f8fa;
      font-size: 12px;
    }
    .diff .op {
      width: 4rem;
    }
    .diff .value {
      width: 37%;
    }
    del,
    ins {
      display: block;
      text-decoration: none;
    }
    del {
      background: #ffebe9;
      color: #82071e;
    }
    ins {
      background: #dafbe1;
      color: #116329;
    }
    pre {
      margin: 0;
      font: 12px/1.45 ui-monospace, monospace;
      white-space: pre-wrap;
      overflow-wrap: anywhere;
    }
    .json {
      padding: 0.5rem;
      background: #f6f8fa;
      border: 1px solid #d0d7de;
      border-radius: 4px;
      max-height: 16rem;
      overflow: auto;
    }
    .badge {
      margin-left: 0.35rem;
      padding: 0 0.35rem;
      border-radius: 3px;
      background: #fff8c5;
      color: #7d4e00;
      font-size: 11px;
    }
    .none {
      margin: 0;
      color: #57606a;
    }
    .more {
      display: block;
      margin: 0.5rem auto;
    }
  `;
}

/** The action of an event: its actionKey, or the legacy action. */
function actionOf(event: AuditEvent): string {
  return event.actionKey ?? event.action ?? "";
}

/** An event with every string decoded from the service's HTML encoding (display.ts). */
function forDisplay(event: AuditEvent): AuditEvent {
  // decodeJson keeps the shape and only rewrites strings and keys.
  return decodeJson(event) as AuditEvent;
}

function describe(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) {
      return `Not authorized: ${error.message}. The page needs a new frontend token.`;
    }
    if (error.status === 400) return `The service refused these filters: ${error.message}`;
    return `The audit service answered ${error.status}: ${error.message}`;
  }
  if (error instanceof TokenProviderError) return `Could not get a token: ${error.message}`;
  const message = error instanceof Error ? error.message : String(error);
  return `Could not reach the audit service: ${message}`;
}

if (!customElements.get("audit-log-viewer")) {
  customElements.define("audit-log-viewer", AuditLogViewer);
}

declare global {
  interface HTMLElementTagNameMap {
    "audit-log-viewer": AuditLogViewer;
  }
}
