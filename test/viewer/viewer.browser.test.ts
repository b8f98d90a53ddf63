/**
 * The browser viewer as a user meets it, in headless Chromium against the running
 * service with 300 seeded events: the demo page and a host page on another origin,
 * newest first, infinite scroll over the cursor, filters, search, an event's diff and
 * context, strings shown as text and never run, token refresh before expiry and after a
 * 401, and visible errors. Screenshots go to test-results/.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createNodeLogCrypto } from "../../src/tlog/node-crypto.js";
import { verifierKey } from "../../src/tlog/note.js";
import { createEvents, tokenFor } from "../events/events-client.js";
import { startTestServer, type TestServer } from "../support/test-server.js";
import {
  collectErrors,
  type HostApp,
  launchChromium,
  screenshot,
  startHostApp,
} from "./browser.js";

const BASE = Date.parse("2024-05-01T12:00:00.000Z");
const EVENT_COUNT = 300;
const ACTORS = [
  ["alice", "Alice Martin"],
  ["bob", "Bob Stone"],
  ["carol", "Carol Diaz"],
  ["dave", "Dave Kim"],
  ["erin", "Erin Wu"],
] as const;
const TENANTS = ["acme", "globex", "initech"] as const;
const ENTITY_TYPES = ["invoice", "document", "user", "project"] as const;
const VERBS = ["created", "updated", "shared", "deleted"] as const;
/** The event whose strings are markup; second newest, so on the first page. */
const MARKUP = 1;
/** The only event with the word "zanzibar". */
const ZANZIBAR = 137;
/** How long a poll waits for the screen to show something (a busy 2-core machine). */
const EVENTUALLY = { timeout: 20_000 };
const SCRIPT_TEXT = "<script>window.__xss = 1</script>";
const IMG_TEXT = '<img src=x onerror="window.__xss = 2">';

interface Seed {
  index: number;
  body: Record<string, unknown>;
  actorId: string;
  entityType: string;
  entityId: string;
  actionKey: string;
  tenantId: string;
}

const pick = <T>(list: readonly T[], index: number): T => list[index % list.length] as T;

// Event i occurred i minutes before BASE: index order is newest-first order.
function seed(index: number): Seed {
  const [actorId, actorDisplay] = pick(ACTORS, index);
  const entityType = pick(ENTITY_TYPES, index);
  const entityId = `${entityType}_${String(index % 40).padStart(3, "0")}`;
  const actionKey = `${entityType}.${pick(VERBS, Math.floor(index / 4))}`;
  const tenantId = pick(TENANTS, index);
  const body: Record<string, unknown> = {
    actionKey,
    actionDescription:
      index === ZANZIBAR
        ? "Rotated the zanzibar signing key"
        : `${actorDisplay} changed ${entityType} number ${index}`,
    entityType,
    entityId,
    actorId,
    actorDisplay,
    tenantId,
    source: "seed",
    occurredAt: new Date(BASE - index * 60_000).toISOString(),
    context: {
      ip: `203.0.113.${index % 250}`,
      requestId: `req-${index}`,
      nested: { seq: index, tags: ["audit", index % 2 === 0 ? "even" : "odd"] },
    },
    changes: [
      { op: "set", path: "status", before: "draft", after: "final" },
      { op: "set", path: "revision", before: index, after: index + 1 },
    ],
  };
  if (index === MARKUP) {
    body.actorDisplay = SCRIPT_TEXT;
    body.actionDescription = IMG_TEXT;
    body.context = {
      html: "<script>window.__xss = 3</script>",
      "<b>key</b>": `Tom & Jerry's "quote"`,
    };
    body.changes = [
      {
        op: "set",
        path: "<i>title</i>",
        before: "<b>old</b>",
        after: "<img src=x onerror=alert(1)>",
      },
    ];
  }
  return { index, body, actorId, entityType, entityId, actionKey, tenantId };
}

const SEEDS = Array.from({ length: EVENT_COUNT }, (_, index) => seed(index));

describe("the browser viewer", () => {
  let server: TestServer;
  let secret: string;
  let ids: string[];
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  const hosts: HostApp[] = [];

  // Event ids of the seeds matching `keep`, newest first.
  const expected = (keep: (seed: Seed) => boolean) =>
    SEEDS.filter(keep).map((seed) => ids[seed.index]);
  const mint = (expiresInSeconds: number) => tokenFor(server, secret, { expiresInSeconds });

  beforeAll(async () => {
    browser = await launchChromium();
    server = await startTestServer({ RATE_LIMIT_MAX: "1000000000" });
    secret = (await server.provision()).secret;
    ids = await createEvents(
      server,
      secret,
      SEEDS.map((seed) => seed.body),
      10,
    );
  });
  afterAll(async () => {
    await Promise.all(hosts.map((host) => host.close()));
    await browser?.close();
    await server?.close();
  });

  afterEach(async () => {
    await context?.close();
  });

  // A fresh page in UTC (datetime-local inputs are then UTC too).
  const newPage = async () => {
    context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      timezoneId: "UTC",
      locale: "en-US",
    });
    page = await context.newPage();
    errors = collectErrors(page);
    return page;
  };

  const viewer = () => page.locator("audit-log-viewer");
  const rows = () => viewer().locator("button.summary");
  const status = () => viewer().getByRole("status");
  const alert = () => viewer().getByRole("alert");
  const shownIds = (): Promise<(string | null)[]> =>
    rows().evaluateAll((buttons) => buttons.map((button) => button.getAttribute("data-event-id")));

  // The demo page with a pasted token, once its first page is on screen.
  const openDemo = async (token: string) => {
    await newPage();
    await page.goto(`${server.url}/viewer/`);
    await page.getByLabel("Frontend token").fill(token);
    await page.getByRole("button", { name: "Show events" }).click();
  };

  const applyFilters = async (values: Record<string, string>) => {
    await viewer().getByRole("button", { name: "Clear" }).click();
    for (const [label, value] of Object.entries(values)) {
      await viewer().getByLabel(label, { exact: true }).fill(value);
    }
    await viewer().getByRole("button", { name: "Apply" }).click();
  };

  const expectRows = async (wanted: readonly (string | undefined)[]) => {
    await expect.poll(shownIds, EVENTUALLY).toEqual(wanted);
  };

  const windowFlag = () => page.evaluate("window.__xss");
  // Elements inside the viewer that markup in the data would have created.
  const markupElements = () =>
    page.evaluate(
      `document.querySelector("audit-log-viewer").shadowRoot.querySelectorAll("script, img, b, i").length`,
    );

  it("the demo page lists the newest events first, a page at a time", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));
    await expect.poll(() => status().textContent(), EVENTUALLY).toContain("Showing 50 events");
    const first = rows().first();
    expect(await first.textContent()).toContain("2024-05-01 12:00:00");
    expect(await first.textContent()).toContain("invoice.created");
    expect(await first.textContent()).toContain("Alice Martin");
    expect(await alert().count()).toBe(0);
    await screenshot(page, "first-page");
    expect(errors).toEqual([]);
  });

  it("with verify, marks each event verified against the signed log, in the browser", async () => {
    await newPage();
    await page.goto(`${server.url}/viewer/`);
    await page.evaluate(`document.querySelector("audit-log-viewer").setAttribute("verify", "")`);
    await page.getByLabel("Frontend token").fill(await mint(3600));
    await page.getByRole("button", { name: "Show events" }).click();
    await expectRows(ids.slice(0, 50));
    await expect
      .poll(() => viewer().locator(".proof.verified").count(), { timeout: 60_000 })
      .toBe(50);
    expect(await viewer().locator(".proof.failed").count()).toBe(0);
    expect(await rows().first().textContent()).toContain("✓ verified");
    await screenshot(page, "verified");
    expect(errors).toEqual([]);
  });

  // Found by an outside audit (2026-11-28): an event newer than the latest signed
  // checkpoint stayed "pending" for good; nothing looked at it again.
  it("with verify, marks an event newer than the latest checkpoint pending, then verified once a checkpoint covers it", async () => {
    const own = (await server.provision()).secret;
    // Occurred when received (no occurredAt): the list shows the newer first.
    const [older] = await createEvents(
      server,
      own,
      [{ ...SEEDS[2]?.body, occurredAt: undefined }],
      1,
    );
    const checkpoint = async () =>
      (
        await fetch(`${server.url}/api/log/checkpoint`, {
          headers: { authorization: `Bearer ${own}` },
        })
      ).text();
    // The checkpoint that covers the older event only (its second line is the size).
    let stale = "";
    await expect
      .poll(async () => {
        stale = await checkpoint();
        return stale.split("\n")[1];
      }, EVENTUALLY)
      .toBe("1");
    const [newer] = await createEvents(
      server,
      own,
      [{ ...SEEDS[3]?.body, occurredAt: undefined }],
      1,
    );
    await newPage();
    // The service answers with that checkpoint until the test lets the real one through.
    let holdBack = true;
    await page.route("**/api/log/checkpoint", (route) =>
      holdBack
        ? route.fulfill({ status: 200, contentType: "text/plain; charset=utf-8", body: stale })
        : route.continue(),
    );
    await page.goto(`${server.url}/viewer/`);
    await page.evaluate(`document.querySelector("audit-log-viewer").setAttribute("verify", "")`);
    await page
      .getByLabel("Frontend token")
      .fill(await tokenFor(server, own, { expiresInSeconds: 600 }));
    await page.getByRole("button", { name: "Show events" }).click();
    await expectRows([newer, older]);
    const markOf = (id: string | undefined) =>
      viewer().locator(`button.summary[data-event-id="${id}"] .proof`).textContent();
    await expect.poll(() => markOf(older), EVENTUALLY).toContain("verified");
    await expect.poll(() => markOf(newer), EVENTUALLY).toContain("pending");
    holdBack = false;
    await expect.poll(() => markOf(newer), { timeout: 30_000 }).toContain("✓ verified");
    expect(errors).toEqual([]);
  });

  // Found by the same audit: an event without changes (they are optional) threw when
  // opened, and from then on no row opened at all.
  it("opens an event sent without changes or context, and other rows after it", async () => {
    const own = (await server.provision()).secret;
    const bare = {
      actionKey: "order.paid",
      entityType: "order",
      entityId: "order_7",
      actorId: "user_42",
    };
    const [withChanges, without] = await createEvents(
      server,
      own,
      [
        {
          ...bare,
          occurredAt: new Date(BASE - 60_000).toISOString(),
          changes: [{ op: "set", path: "paid", before: false, after: true }],
        },
        { ...bare, occurredAt: new Date(BASE).toISOString() },
      ],
      1,
    );
    await openDemo(await tokenFor(server, own, { expiresInSeconds: 600 }));
    await expectRows([without, withChanges]);
    await rows().first().click();
    expect(await rows().first().getAttribute("aria-expanded")).toBe("true");
    const details = viewer().locator(".details").first();
    await details.waitFor();
    expect(await details.textContent()).toContain("No changes recorded.");
    expect(await details.textContent()).toContain("No context.");
    await rows().nth(1).click();
    expect(await rows().nth(1).getAttribute("aria-expanded")).toBe("true");
    expect(await viewer().locator("table.diff tbody tr").count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it("with pinned keys, verifies with the log's key among them (a rotation), and fails with another key alone", async () => {
    const served = await (
      await fetch(`${server.url}/api/log/key`, { headers: { authorization: `Bearer ${secret}` } })
    ).text();
    const crypto = createNodeLogCrypto();
    // The same log's name with another key: the key of before a rotation, say.
    const retired = await verifierKey(
      crypto,
      served.split("+")[0] ?? "",
      await crypto.ed25519PublicKey(new Uint8Array(32).fill(9)),
    );
    for (const [pinned, mark, count] of [
      [`${retired} ${served}`, ".proof.verified", 50],
      [retired, ".proof.failed", 50],
    ] as const) {
      await newPage();
      await page.goto(`${server.url}/viewer/`);
      await page.evaluate(
        `(() => { const viewer = document.querySelector("audit-log-viewer"); viewer.setAttribute("verifier-key", ${JSON.stringify(pinned)}); viewer.setAttribute("verify", ""); })()`,
      );
      await page.getByLabel("Frontend token").fill(await mint(3600));
      await page.getByRole("button", { name: "Show events" }).click();
      await expectRows(ids.slice(0, 50));
      await expect.poll(() => viewer().locator(mark).count(), { timeout: 60_000 }).toBe(count);
    }
  });

  it("scrolling to the end of the list loads the next pages until the last", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));
    const list = viewer().locator(".list");
    await list.hover();
    await page.mouse.wheel(0, 50_000);
    await expect.poll(() => rows().count(), EVENTUALLY).toBeGreaterThanOrEqual(100);
    const shown = await shownIds();
    expect(shown).toEqual(ids.slice(0, shown.length));
    // On to the end: 300 events are six pages.
    await expect
      .poll(
        async () => {
          await page.mouse.wheel(0, 50_000);
          return rows().count();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(EVENT_COUNT);
    await expectRows(ids);
    await expect.poll(() => status().textContent(), EVENTUALLY).toContain("Showing all 300 events");
    expect(await viewer().getByRole("button", { name: "Load more" }).count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("filters by actor and tenant, entity, action and date range", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));

    await applyFilters({ Actor: "bob", Tenant: "globex" });
    const bobAtGlobex = expected((s) => s.actorId === "bob" && s.tenantId === "globex");
    expect(bobAtGlobex.length).toBe(20);
    await expectRows(bobAtGlobex);
    await expect.poll(() => status().textContent(), EVENTUALLY).toContain("Showing all 20 events");
    await screenshot(page, "filtered");

    await applyFilters({ "Entity type": "invoice", "Entity id": "invoice_004" });
    await expectRows(expected((s) => s.entityType === "invoice" && s.entityId === "invoice_004"));

    await applyFilters({ Action: "document.shared" });
    await expectRows(expected((s) => s.actionKey === "document.shared"));

    // Inclusive bounds; "To" covers its whole minute.
    await applyFilters({ From: "2024-05-01T11:40", To: "2024-05-01T11:50" });
    await expectRows(expected((s) => s.index >= 10 && s.index <= 20));

    await viewer().getByRole("button", { name: "Clear" }).click();
    await expectRows(ids.slice(0, 50));
    expect(errors).toEqual([]);
  });

  it("searches the text of events", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));
    await applyFilters({ Search: "zanzibar" });
    await expectRows([ids[ZANZIBAR]]);
    await expect.poll(() => status().textContent(), EVENTUALLY).toContain("Showing all 1 event");
    await applyFilters({ Search: "Carol changed" });
    await expectRows(expected((s) => s.actorId === "carol" && s.index !== ZANZIBAR).slice(0, 50));
  });

  it("says so when nothing matches, and shows a refused filter's message", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));
    await applyFilters({ Actor: "nobody" });
    await expectRows([]);
    await expect
      .poll(() => status().textContent(), EVENTUALLY)
      .toContain("No events match these filters.");
    expect(await alert().count()).toBe(0);

    await applyFilters({ From: "2024-05-01T12:00", To: "2024-05-01T11:00" });
    await expect
      .poll(() => alert().textContent(), EVENTUALLY)
      .toContain("from must not be later than to");
  });

  it("opens an event from the keyboard and shows its changes as a diff and its context as JSON", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));
    const first = rows().first();
    await first.focus();
    await page.keyboard.press("Enter");
    expect(await first.getAttribute("aria-expanded")).toBe("true");
    const details = viewer().locator(".details").first();
    await details.waitFor();
    const diff = details.locator("table.diff");
    expect(await diff.locator("tbody tr").count()).toBe(2);
    expect(await diff.locator("tbody tr").first().locator("del").textContent()).toBe('"draft"');
    expect(await diff.locator("tbody tr").first().locator("ins").textContent()).toBe('"final"');
    expect(await diff.locator("tbody tr").nth(1).locator("del").textContent()).toBe("0");
    expect(await diff.locator("tbody tr").nth(1).locator("ins").textContent()).toBe("1");
    const json = await details.locator("pre.json").textContent();
    expect(JSON.parse(json ?? "")).toEqual(SEEDS[0]?.body.context);
    expect(json).toContain('\n  "requestId": "req-0"');
    expect(await details.textContent()).toContain(ids[0]);

    // Arrow keys move between rows; Space opens and closes.
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    const third = rows().nth(2);
    expect(await third.evaluate((button) => button.matches(":focus"))).toBe(true);
    await page.keyboard.press(" ");
    expect(await third.getAttribute("aria-expanded")).toBe("true");
    await screenshot(page, "details");
    await page.keyboard.press(" ");
    expect(await third.getAttribute("aria-expanded")).toBe("false");
    expect(errors).toEqual([]);
  });

  it("shows markup in events as text and never runs it", async () => {
    await openDemo(await mint(3600));
    await expectRows(ids.slice(0, 50));
    const row = rows().nth(MARKUP);
    expect(await row.textContent()).toContain(SCRIPT_TEXT);
    await row.click();
    const details = viewer().locator(".details").first();
    await details.waitFor();
    const text = (await details.textContent()) ?? "";
    expect(text).toContain(IMG_TEXT);
    expect(text).toContain("<i>title</i>");
    expect(await details.locator("del").textContent()).toBe('"<b>old</b>"');
    expect(await details.locator("ins").textContent()).toBe('"<img src=x onerror=alert(1)>"');
    expect(JSON.parse((await details.locator("pre.json").textContent()) ?? "")).toEqual({
      html: "<script>window.__xss = 3</script>",
      "<b>key</b>": `Tom & Jerry's "quote"`,
    });
    await screenshot(page, "markup-as-text");
    expect(await markupElements()).toBe(0);
    expect(await windowFlag()).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it("a token with a forged signature shows a visible error", async () => {
    const token = await mint(3600);
    await openDemo(`${token.slice(0, -6)}AAAAAA`);
    await expect
      .poll(() => alert().textContent(), EVENTUALLY)
      .toContain("Not authorized: Invalid token");
    expect(await rows().count()).toBe(0);
    await screenshot(page, "invalid-token");
  });

  it("a pasted token that has expired shows a visible error", async () => {
    const token = await mint(1);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await openDemo(token);
    await expect
      .poll(() => alert().textContent(), EVENTUALLY)
      .toContain("Not authorized: Token expired");
  });

  it("refreshes a short-lived token through the provider before it expires", async () => {
    const host = await startHostApp({ page: "", mint: () => mint(3) });
    hosts.push(host);
    await newPage();
    await page.goto(`${server.url}/viewer/`);
    await page.getByLabel("or token provider URL").fill(`${host.url}/token`);
    await page.getByRole("button", { name: "Show events" }).click();
    await expectRows(ids.slice(0, 50));
    const firstLoad = Date.now();
    // Each 3 s token is replaced 1.5 s before it expires, with no request to prompt it.
    await expect
      .poll(() => host.tokenCalls(), { timeout: 20_000, interval: 250 })
      .toBeGreaterThanOrEqual(3);
    // Well past the first token's expiry, the next request still succeeds.
    const wait = 4_000 - (Date.now() - firstLoad);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await applyFilters({ Actor: "alice" });
    await expectRows(expected((s) => s.actorId === "alice").slice(0, 50));
    expect(await alert().count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("a request refused with Token expired gets a new token and is retried once", async () => {
    const host = await startHostApp({ page: "", mint: () => mint(600) });
    hosts.push(host);
    await newPage();
    let listCalls = 0;
    await page.route(`${server.url}/api/events**`, async (route) => {
      listCalls++;
      if (listCalls === 1) {
        await route.fulfill({
          status: 401,
          contentType: "application/json",
          body: JSON.stringify({ error: "Token expired" }),
        });
        return;
      }
      await route.continue();
    });
    await page.goto(`${server.url}/viewer/`);
    await page.getByLabel("or token provider URL").fill(`${host.url}/token`);
    await page.getByRole("button", { name: "Show events" }).click();
    await expectRows(ids.slice(0, 50));
    expect(listCalls).toBe(2);
    expect(host.tokenCalls()).toBe(2);
    expect(await alert().count()).toBe(0);
  });

  it("works in a host page on another origin, without the demo's CSP to protect it", async () => {
    const host = await startHostApp({
      mint: () => mint(600),
      // The provider is set before the element is defined (the module loads later).
      page: `<!doctype html><html lang="en"><head><title>Host app</title></head><body>
        <h1>Acme settings: activity</h1>
        <audit-log-viewer base-url="${server.url}" page-size="20"></audit-log-viewer>
        <script>
          document.querySelector("audit-log-viewer").tokenProvider = async () => {
            const response = await fetch("/token", { method: "POST" });
            return (await response.json()).token;
          };
        </script>
        <script type="module" src="${server.url}/viewer/audit-log-viewer.js"></script>
      </body></html>`,
    });
    hosts.push(host);
    await newPage();
    await page.goto(host.url);
    await expectRows(ids.slice(0, 20));
    expect(await rows().nth(MARKUP).textContent()).toContain(SCRIPT_TEXT);
    await rows().nth(MARKUP).press("Enter");
    await viewer().locator(".details").first().waitFor();
    expect(await viewer().locator(".details pre.json").textContent()).toContain(
      "<script>window.__xss = 3</script>",
    );
    expect(await markupElements()).toBe(0);
    expect(await windowFlag()).toBeUndefined();
    await screenshot(page, "host-page");
    expect(errors).toEqual([]);
  });
});
