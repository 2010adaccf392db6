// Debian's Chromium driven by playwright-core (never a browser of Playwright's own), and a
// tab that collects console errors, checks every page it shows with axe-core and keeps a
// screenshot of it.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
// ../shared/NOTES.md "Browser tests": no sandbox as root, and none of Chromium's own
// network traffic (this machine reaches nothing outside).
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const here = path.dirname(fileURLToPath(import.meta.url));
const AXE = fs.readFileSync(path.join(here, "..", "node_modules", "axe-core", "axe.min.js"), "utf8");
// Impacts that fail a test; minor and moderate ones are printed only.
const FAILING = new Set(["serious", "critical"]);

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 30000 });
}

// The panel's route of a URL or hash: "#/rentals/:id" for "#/rentals/rnt_…", no query.
export function routeOf(url) {
  const hash = url.includes("#") ? url.slice(url.indexOf("#")) : "#/";
  return hash.split("?")[0]
    .replace(/^#\/rentals\/[^/]+$/, "#/rentals/:id")
    .replace(/^#\/admin\/nodes\/[^/]+$/, "#/admin/nodes/:id");
}

// "<role> <route>" of the pages that passed check() in this run, in any scenario; the role
// is anonymous, customer or admin.
export const checkedRoutes = new Set();

// One user's browser: a fresh context (no cookies, no storage), one page.
export class Tab {
  static async open(browser, baseURL, artifacts,
                    { lang = "en-GB", clipboard = false, viewport = { width: 1280, height: 900 } } = {}) {
    const context = await browser.newContext({ baseURL, locale: lang, viewport });
    if (clipboard) await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseURL });
    const page = await context.newPage();
    page.setDefaultTimeout(20000);  // generous: make test runs it beside other tests on two cores
    return new Tab(context, page, artifacts);
  }

  constructor(context, page, artifacts) {
    this.context = context;
    this.page = page;
    this.artifacts = artifacts;
    this.errors = [];
    this.allowed = [];  // {url: RegExp, status} of API errors a scenario provokes
    this.notes = [];    // minor/moderate axe findings, for the log
    page.on("console", (msg) => {
      if (msg.type() !== "error") return;
      const url = (msg.location() && msg.location().url) || "";
      const text = msg.text();
      const m = text.match(/^Failed to load resource: the server responded with a status of (\d+)/);
      if (m && this.allowed.some((a) => a.status === Number(m[1]) && a.url.test(url))) return;
      this.errors.push(`console error on ${page.url()}: ${text}${url ? ` (${url})` : ""}`);
    });
    page.on("pageerror", (err) => this.errors.push(`uncaught error on ${page.url()}: ${err.stack || err}`));
  }

  // A request the scenario expects to fail with `status`: its console line is not an error.
  allowFailedRequest(url, status) {
    this.allowed.push({ url, status });
  }

  // Opens the panel at `hash` ("#/keys") and waits for the page to render.
  async visit(hash) {
    if (!this.page.url().startsWith("http")) {
      await this.page.goto(`/${hash}`);
    } else {
      await this.page.evaluate((h) => (location.hash = h), hash);
    }
    await this.rendered();
  }

  // The route has rendered: the shell is done loading and the page has its heading.
  async rendered() {
    await this.page.waitForFunction(() => {
      const main = document.getElementById("main");
      return main && !main.hasAttribute("aria-busy") && main.querySelector("h1");
    });
  }

  // The page as it is now: a screenshot named `name` (the test's artifacts), no value
  // leaked into it as text ("undefined", "null"), and axe-core finding no serious or
  // critical violation.
  async check(name) {
    if (this.artifacts) {
      fs.mkdirSync(this.artifacts, { recursive: true });
      await this.page.screenshot({ path: path.join(this.artifacts, `${name}.png`), fullPage: true });
    }
    const problems = [];
    const text = await this.page.locator("#main").innerText();
    const leak = text.match(/.{0,40}\b(undefined|null|NaN|\[object Object\])\b.{0,40}/);
    if (leak) problems.push(`it shows "${leak[1]}" as text: …${leak[0].replace(/\n/g, " ⏎ ")}…`);
    // Once per document (the panel's routes share one), and not as a script tag: the panel's
    // CSP refuses inline scripts.
    if (!(await this.page.evaluate(() => typeof window.axe === "object"))) await this.page.evaluate(AXE);
    const results = await this.page.evaluate(() =>
      // eslint-disable-next-line no-undef
      axe.run(document, { resultTypes: ["violations"] }));
    for (const v of results.violations) {
      if (!FAILING.has(v.impact)) {
        this.notes.push(`${name}: axe ${v.impact} ${v.id}: ${v.help}`);
        continue;
      }
      problems.push(`axe ${v.impact} ${v.id}: ${v.help} (${v.helpUrl})\n` +
        v.nodes.slice(0, 5).map((n) => `    ${n.target.join(" ")}: ${n.failureSummary.replace(/\n/g, " ")}`).join("\n"));
    }
    if (problems.length) throw new Error(`${name} (${this.page.url()}):\n  ${problems.join("\n  ")}`);
    const role = await this.page.evaluate(() => (document.querySelector("#nav .admin-nav") ? "admin"
      : document.querySelector("#who .email") ? "customer" : "anonymous"));
    checkedRoutes.add(`${role} ${routeOf(this.page.url())}`);
  }

  // visit() then check().
  async show(hash, name) {
    await this.visit(hash);
    await this.check(name);
  }

  // Signs in through the login page.
  async signIn(email, password) {
    await this.visit("#/login");
    await this.page.getByLabel("Email").fill(email);
    await this.page.getByLabel("Password").fill(password);
    await this.page.getByRole("button", { name: "Sign in" }).click();
    await this.page.waitForFunction(() => !location.hash.startsWith("#/login"));
    await this.rendered();
  }

  // Fails with every console error and uncaught exception seen; closes the context.
  async close() {
    await this.context.close().catch(() => {});
    if (this.errors.length) throw new Error(`the page logged errors:\n${this.errors.join("\n")}`);
  }
}
