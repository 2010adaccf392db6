#!/usr/bin/env node
// Browser tests of the web panel (CTest: browser_tests, web/CMakeLists.txt).
//
//   node web/tests/run.mjs BUILD_DIR [--artifacts DIR] [--only TEXT]
//
// Starts a fresh database (in the CTest run's cluster, or a throwaway one of its own when
// run by hand), the real gpurentd of BUILD_DIR with a small fleet of simulated agents, and
// Debian's Chromium through playwright-core; then runs the scenarios (scenarios.mjs). Each
// visited page is checked with axe-core and photographed into DIR (default
// BUILD_DIR/web-artifacts); console errors fail the scenario. Exits 77 (CTest's skip) when
// Chromium or web/tests/node_modules is missing.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.resolve(here, "..", "..");
const SKIP = 77;

function usage(message) {
  console.error(`${message}\nusage: node web/tests/run.mjs BUILD_DIR [--artifacts DIR] [--only TEXT]`);
  process.exit(2);
}

const args = process.argv.slice(2);
let build = null;
let artifacts = null;
let only = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--artifacts") artifacts = args[++i];
  else if (args[i] === "--only") only = args[++i];
  else if (!build && !args[i].startsWith("--")) build = args[i];
  else usage(`unknown argument ${args[i]}`);
}
if (!build) usage("the build folder is missing");
if (!fs.existsSync(path.join(build, "CMakeCache.txt"))) usage(`${build} is not a CMake build folder`);
artifacts = path.resolve(artifacts || path.join(build, "web-artifacts"));

// Skipped, with the reason, only when the tools are not installed (scripts/bootstrap
// installs both).
if (!fs.existsSync("/usr/bin/chromium")) {
  console.log("browser tests skipped: /usr/bin/chromium is not installed (scripts/bootstrap installs it)");
  process.exit(SKIP);
}
for (const m of ["playwright-core", "axe-core"]) {
  if (!fs.existsSync(path.join(here, "node_modules", m, "package.json"))) {
    console.log(`browser tests skipped: web/tests/node_modules/${m} is missing (scripts/bootstrap runs npm ci --prefix web/tests)`);
    process.exit(SKIP);
  }
}

// Imported only now: playwright-core is there.
const { after, before, describe, test } = await import("node:test");
const { checkedRoutes, launch, routeOf, Tab } = await import("./lib/browser.mjs");
const { PASSWORD, Stack } = await import("./lib/stack.mjs");
const { ADMIN_PAGES, CUSTOMER_PAGES, scenarios, seedForTour } = await import("./scenarios.mjs");

const pageExists = (name) => fs.existsSync(path.join(source, "web", "public", "js", "pages", `${name}.js`));

fs.rmSync(artifacts, { recursive: true, force: true });
fs.mkdirSync(artifacts, { recursive: true });

const stack = new Stack({ build, source, artifacts });
let browser = null;
let failed = false;

// Whatever happens, nothing this run started outlives it.
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    stack.killAll();
    if (browser) await browser.close().catch(() => {});
    await stack.stop().catch(() => {});
    process.exit(128 + (signal === "SIGINT" ? 2 : 15));
  });
}
process.on("exit", () => stack.killAll());

// Runs `work` in a fresh browser context: the tab's console errors fail it, and it closes.
async function inTab(work, options = {}) {
  const tab = await Tab.open(browser, stack.url, artifacts, options);
  try {
    await work(tab);
  } catch (err) {
    failed = true;
    await tab.page.screenshot({ path: path.join(artifacts, `failed-${Date.now()}.png`), fullPage: true }).catch(() => {});
    await tab.close().catch((e) => console.error(e.message));
    throw err;
  } finally {
    for (const note of tab.notes) console.log(`# ${note}`);
  }
  await tab.close();
}

describe("web panel", { concurrency: 1 }, () => {
  before(async () => {
    const started = Date.now();
    let timings;
    try {
      timings = await stack.start();
    } catch (err) {
      failed = true;
      throw err;
    }
    const t0 = Date.now();
    browser = await launch();
    timings.push(`chromium ${Date.now() - t0} ms`);
    console.log(`# gpurentd on ${stack.url} with ${Object.keys(stack.nodes).length} simulated agents; ` +
      `ready in ${Date.now() - started} ms (${timings.join(", ")})`);
  });

  after(async () => {
    if (browser) await browser.close().catch(() => {});
    await stack.stop({ keepLogs: failed });
    if (stack.problems.length) throw new Error(stack.problems.join("\n\n"));
    console.log(`# screenshots in ${artifacts}`);
  });

  for (const s of scenarios) {
    if (only && !s.name.includes(only)) continue;
    const missing = s.pages.filter((p) => !pageExists(p));
    if (s.todo || missing.length) {
      test.todo(`${s.name} (${s.todo || `page not there yet: ${missing.join(", ")}`})`);
      continue;
    }
    test(s.name, () => inTab((tab) => s.run({ tab, api: stack.api, stack }), s.tab));
  }

  const tour = "every main page: no console errors, axe clean, a screenshot";
  if (!only || tour.includes(only)) {
    test(tour, async (t) => {
      const seeded = await seedForTour(stack.api, stack);
      const fill = (hash) => hash.replace(":rental", encodeURIComponent(seeded.rental)).replace(":node", seeded.node);
      const shot = (name) => `page-${name.replace(/\//g, "-")}`;
      const absent = [...CUSTOMER_PAGES, ...ADMIN_PAGES].filter(([, m]) => !pageExists(m)).map(([, m]) => m);
      if (absent.length) t.diagnostic(`pages not there yet, left out: ${absent.join(", ")}`);
      // Every page is visited and photographed even when one before it fails; the test then
      // fails with all of them. A page a scenario has checked already in this run is left out
      // (the run stays short); run alone (--only "every main page"), it checks them all.
      const failures = [];
      const covered = [];
      const visit = async (tab, hash, name, role) => {
        if (checkedRoutes.has(`${role} ${routeOf(hash)}`)) {
          covered.push(`${routeOf(hash)} (${role})`);
          return;
        }
        try {
          await tab.show(hash, name);
        } catch (err) {
          failures.push(err.message);
        }
      };
      await inTab(async (tab) => {
        await visit(tab, "#/login", "page-login", "anonymous");
        await visit(tab, "#/signup", "page-signup", "anonymous");
        await visit(tab, "#/no-such-page", "page-not-found", "anonymous");
        await tab.signIn(seeded.customer.email, PASSWORD);
        for (const [hash, module] of CUSTOMER_PAGES) {
          if (pageExists(module)) await visit(tab, fill(hash), shot(module), "customer");
        }
        await visit(tab, "#/admin", "page-admin-forbidden", "customer");  // not an admin
      });
      await inTab(async (tab) => {
        await tab.signIn(stack.adminEmail, stack.adminPassword);
        for (const [hash, module] of ADMIN_PAGES) {
          if (pageExists(module)) await visit(tab, fill(hash), shot(module), "admin");
        }
      });
      if (covered.length) t.diagnostic(`checked by the scenarios already: ${covered.join(" ")}`);
      if (failures.length) throw new Error(`${failures.length} page(s) failed:\n${failures.join("\n")}`);
    });
  }
});
