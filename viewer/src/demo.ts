/**
 * The demo page's wiring (index.html; a file of its own because the page's CSP allows no
 * inline script): hands the viewer a token provider built from the form, either the
 * token pasted in the field or one fetched from a token provider URL, the endpoint a
 * host app would expose from its backend (POST, answering `{"token": "..."}` like
 * `POST /api/tokens/frontend`).
 */
import type { AuditLogViewer, TokenProvider } from "./audit-log-viewer.js";

const form = document.querySelector<HTMLFormElement>("#token-form");
const viewer = document.querySelector<AuditLogViewer>("audit-log-viewer");
const note = document.querySelector<HTMLElement>("#token-note");

form?.addEventListener("submit", (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const token = String(data.get("token") ?? "").trim();
  const providerUrl = String(data.get("providerUrl") ?? "").trim();
  if (!viewer) return;
  if (providerUrl.length > 0) {
    viewer.tokenProvider = fromUrl(providerUrl);
    say(`Tokens come from ${providerUrl}.`);
  } else if (token.length > 0) {
    // A pasted token cannot be renewed: when it expires, paste a new one.
    viewer.tokenProvider = () => token;
    say("Using the pasted token.");
  } else {
    say("Paste a frontend token or give a token provider URL.");
  }
});

function fromUrl(url: string): TokenProvider {
  return async () => {
    const response = await fetch(url, { method: "POST", credentials: "same-origin" });
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    const body: unknown = await response.json();
    const token =
      typeof body === "object" && body !== null ? (body as { token?: unknown }).token : undefined;
    if (typeof token !== "string") throw new Error(`${url} answered no "token"`);
    return token;
  };
}

function say(text: string): void {
  if (note) note.textContent = text;
}
