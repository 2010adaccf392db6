// What a person does in the panel, one scenario each. Every scenario makes its own users and
// opens its own browser context, so any of them runs alone (--only) and in any order.
// `pages`: the page modules (web/public/js/pages/<name>.js) a scenario needs; one that is not
// there yet makes the scenario a todo rather than a failure. `todo`: written against a page
// not there when the scenario was written. `tab`: options of its browser tab (clipboard).
import assert from "node:assert/strict";
import { H100, L4, PASSWORD, RTX4090, waitFor } from "./lib/stack.mjs";

// A real ed25519 public key (its private half was thrown away).
export const PUBLIC_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILDX5lqY2I0o7CifOOeHk8lhKinJQ+BWoD7jcW1dzwd8 web-tests@laptop";
const FINGERPRINT = "SHA256:fBNQOx7QkuU59AzsUuAlDEnvx3O+hLqjoKepMRrRubg";

const MILLION_ROUBLES = 100_000_000;  // in kopecks

// A date `offsetDays` after today on the test site's calendar (Europe/Moscow, lib/stack.mjs):
// a booking's date means that site's midnight, so between 21:00 and 24:00 UTC the UTC date is
// already the site's yesterday.
function isoDay(offsetDays) {
  return new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Moscow" })
    .format(new Date(Date.now() + offsetDays * 86400000));
}

// The booking form filled in: model, count, interconnect, start ("now" or a day), days; the
// quote follows.
async function fillBooking(page, { model, count, start, days = 1, interconnect = "nvlink" }) {
  await page.getByLabel("GPU model").selectOption(model);
  await page.getByLabel("Number of GPUs").selectOption(String(count));
  await page.getByLabel("GPU interconnect").selectOption(interconnect);
  if (start === "now") {
    await page.getByRole("radio", { name: "Now" }).check();
  } else {
    await page.getByRole("radio", { name: "On a day" }).check();
    await page.getByLabel("Start day").fill(start);
  }
  await page.getByLabel("Days").fill(String(days));
  await page.getByLabel("Days").dispatchEvent("change");
}

export const scenarios = [
  {
    name: "a customer signs up and lands on the dashboard",
    pages: ["signup", "dashboard"],
    async run({ tab }) {
      const { page } = tab;
      await tab.show("#/login", "login");
      await page.getByRole("link", { name: "Create an account" }).click();
      await tab.rendered();
      await tab.check("signup");
      const email = `new-${Date.now()}@example.com`;
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByLabel("Organisation name").fill("Fresh Labs");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor();
      assert.equal(new URL(page.url()).hash, "#/");
      await page.getByText(email).waitFor();  // the header says who is signed in
      await page.getByText("Nothing running or booked.").waitFor();
      await tab.check("dashboard");
    },
  },
  {
    name: "a customer adds an SSH key",
    pages: ["keys"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack);
      await tab.signIn(customer.email, PASSWORD);
      await tab.visit("#/keys");
      await page.getByText("No SSH keys yet").waitFor();
      await tab.check("keys-empty");
      await page.getByLabel("Public key").fill(PUBLIC_KEY);
      // The key's comment becomes the name when none was typed.
      assert.equal(await page.getByLabel("Name").inputValue(), "web-tests@laptop");
      await page.getByLabel("Name").fill("Work laptop");
      await page.getByRole("button", { name: "Add key" }).click();
      const row = page.getByRole("row").filter({ hasText: "Work laptop" });
      await row.waitFor();
      assert.match(await row.textContent(), new RegExp(FINGERPRINT.replace(/[+/]/g, "\\$&")));
      await page.getByRole("status").filter({ hasText: "Key “Work laptop” added." }).waitFor();
      await tab.check("keys");
      const keys = await api.expect(200, "GET", "/v1/ssh-keys", undefined, customer);
      assert.deepEqual(keys.items.map((k) => k.name), ["Work laptop"]);
    },
  },
  {
    name: "a customer asks for a token that outlives the limit, is told beside the field, then creates one",
    pages: ["tokens"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      // The limit is the server's, as the OpenAPI document states it; the panel does not repeat it.
      const doc = await api.expect(200, "GET", "/v1/openapi.json");
      const create = doc.paths["/v1/api-tokens"].post.requestBody.content["application/json"].schema;
      const max = create.properties.expires_in_days.maximum;
      assert.ok(Number.isInteger(max), "the document states the token lifetime's maximum");
      const customer = await api.customer(stack);
      await tab.signIn(customer.email, PASSWORD);
      await tab.visit("#/tokens");
      const form = page.locator("form").filter({ has: page.getByRole("button", { name: "Create token" }) });
      await form.getByLabel("Name").fill("nightly CI");
      await form.getByLabel("Expires after (days)").fill(String(max + 1));
      tab.allowFailedRequest(/\/v1\/api-tokens$/, 400);
      await form.getByRole("button", { name: "Create token" }).click();
      await form.locator('[data-field="expires_in_days"] .field-error')
        .filter({ hasText: `must be between 1 and ${max}` }).waitFor();
      await tab.check("tokens-expiry-refused");
      assert.equal((await api.expect(200, "GET", "/v1/api-tokens", undefined, customer)).items.length, 0);

      await form.getByLabel("Expires after (days)").fill(String(max));
      await form.getByRole("button", { name: "Create token" }).click();
      await page.getByTestId("token-secret").waitFor();
      const tokens = await api.expect(200, "GET", "/v1/api-tokens", undefined, customer);
      assert.deepEqual(tokens.items.map((k) => k.name), ["nightly CI"]);
    },
  },
  {
    name: "a person in two organisations switches between them from the header",
    pages: ["members"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const alpha = await api.customer(stack, { org: "Alpha Ltd" });
      const person = await api.customer(stack, { org: "Beta Ltd" });
      await api.expect(201, "POST", "/v1/members", { email: person.email, role: "member" }, alpha);
      await tab.signIn(person.email, PASSWORD);
      const select = page.getByLabel("Organisation");
      assert.equal(await select.locator("option:checked").textContent(), "Beta Ltd");
      await tab.check("org-switch");
      await select.selectOption({ label: "Alpha Ltd" });
      await page.getByRole("status").filter({ hasText: "Now acting for Alpha Ltd." }).waitFor();
      await page.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor();
      // The session acts for Alpha from now on: its members page lists Alpha's owner.
      const me = await page.evaluate(() => fetch("/v1/me").then((r) => r.json()));
      assert.equal(me.current_org_id, alpha.orgId);
      await tab.visit("#/members");
      await page.getByRole("row").filter({ hasText: alpha.email }).waitFor();
      assert.equal(await page.getByLabel("Organisation").locator("option:checked").textContent(), "Alpha Ltd");
    },
  },
  {
    name: "a customer books 8×H100 for tomorrow and for now, watches the second become active, copies its SSH command and terminates it",
    pages: ["book", "rental"],
    tab: { clipboard: true },
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: 10 * MILLION_ROUBLES });
      await api.expect(201, "POST", "/v1/ssh-keys", { name: "laptop", public_key: PUBLIC_KEY }, customer);
      await tab.signIn(customer.email, PASSWORD);

      // Tomorrow: booked, scheduled, nothing to log in to yet.
      await tab.visit("#/book");
      await tab.check("book");
      await fillBooking(page, { model: H100, count: 8, start: isoDay(1) });
      await page.getByTestId("quote-total").filter({ hasText: /\d/ }).waitFor();
      await page.getByText("Available for this period.").waitFor();
      await tab.check("book-quoted");
      await page.getByRole("button", { name: "Book and pay" }).click();
      await page.waitForFunction(() => location.hash.startsWith("#/rentals/"));
      await tab.rendered();
      const tomorrowId = decodeURIComponent(new URL(page.url()).hash.slice("#/rentals/".length));
      await page.getByText("The SSH command appears here once the node is ready.").waitFor();
      await tab.check("rental-scheduled");
      const scheduled = await api.expect(200, "GET", `/v1/rentals/${tomorrowId}`, undefined, customer);
      assert.equal(scheduled.state, "scheduled");
      assert.equal(scheduled.gpu_count, 8);
      assert.ok(new Date(scheduled.period.start) > Date.now(), scheduled.period.start);

      // Now: the simulated agent provisions it and the page follows it to active.
      await tab.visit("#/book");
      await fillBooking(page, { model: H100, count: 8, start: "now" });
      await page.getByText("Available for this period.").waitFor();
      await page.getByRole("button", { name: "Book and pay" }).click();
      await page.waitForFunction((first) => location.hash.startsWith("#/rentals/") &&
        !location.hash.endsWith(first), encodeURIComponent(tomorrowId));
      await tab.rendered();
      const nowId = decodeURIComponent(new URL(page.url()).hash.slice("#/rentals/".length));
      const command = page.getByTestId("ssh-command");
      await command.waitFor({ timeout: 45000 });
      await page.locator(".state-line").getByText("active").waitFor();
      await tab.check("rental-active");
      const shown = (await command.textContent()).trim();
      assert.match(shown, /^ssh /);
      await page.getByRole("button", { name: "Copy: SSH command" }).click();
      await page.getByRole("status").filter({ hasText: "Copied to the clipboard." }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown);
      const active = await api.expect(200, "GET", `/v1/rentals/${nowId}`, undefined, customer);
      assert.equal(active.state, "active");
      assert.equal(active.ssh.command, shown);

      // Terminate, after the browser's confirmation.
      page.once("dialog", (dialog) => dialog.accept());
      await page.getByRole("button", { name: "Terminate" }).click();
      await page.getByRole("status").filter({ hasText: "The rental is being released." }).waitFor();
      await page.locator(".state-line").getByText(/releasing|ended/).waitFor();
      await tab.check("rental-releasing");
      await stack.waitRental(customer, nowId, "ended");
      await page.locator(".state-line").getByText("ended").waitFor({ timeout: 30000 });
      const still = await api.expect(200, "GET", `/v1/rentals/${tomorrowId}`, undefined, customer);
      assert.equal(still.state, "scheduled", "the other booking is untouched");
      // Cancelled (its GPUs free at once), so a later scenario finds a whole H100 node free now:
      // the node of the terminated one is kept for its cleaning window.
      await api.expect(200, "POST", `/v1/rentals/${tomorrowId}/terminate`, {}, customer);
    },
  },
  {
    name: "a rental's page shows the signed handover report its node's burn-in made and its GPUs' charts, and the catalog compares configurations by what was measured, in English and in Russian",
    pages: ["rental", "catalog"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: 10 * MILLION_ROUBLES });
      await api.expect(201, "POST", "/v1/ssh-keys", { name: "laptop", public_key: PUBLIC_KEY }, customer);
      // Two L4s from now: the H100s are the other scenarios' (a PCIe box's links are reported,
      // held to no NVLink bar).
      const booked = await api.expect(201, "POST", "/v1/rentals", { gpu_model: L4, gpu_count: 2,
        interconnect: "any", start: "now", days: 1, image_id: stack.imageId }, customer);
      await stack.waitRental(customer, booked.id, "active", 45000);
      const report = await api.expect(200, "GET", `/v1/rentals/${booked.id}/report`, undefined, customer);
      assert.ok(report.handover && report.handover.passed, JSON.stringify(report));
      assert.ok(report.measurements.length > 0);
      await tab.signIn(customer.email, PASSWORD);
      await tab.visit(`#/rentals/${encodeURIComponent(booked.id)}`);
      await page.getByRole("heading", { level: 2, name: "Handover report" }).waitFor();
      const measured = page.getByRole("table", { name: "What the platform measured before handing the node over" });
      await measured.waitFor();
      // The link between its two GPUs, held to the bar it had to reach.
      const link = report.measurements.find((m) => m.name.startsWith("peer_bandwidth"));
      assert.ok(link, JSON.stringify(report.measurements));
      await measured.getByRole("cell", { name: link.name, exact: true }).waitFor();
      await page.getByTestId("report-meta").filter({ hasText: report.key_id }).waitFor();
      await page.getByRole("link", { name: "Download the signed report" }).waitFor();
      await tab.check("rental-report");
      // Its GPUs' charts once a few samples are in (a sample a second in this stack).
      let last = null;
      await waitFor(async () => {
        last = await api.expect(200, "GET", `/v1/rentals/${booked.id}/telemetry`, undefined, customer);
        return last.gpus.length === 2 && last.gpus.every((g) => g.samples.length >= 2);
      }, 30000, 500, "the rental's telemetry").catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(last)}`); });
      await page.reload();
      await tab.rendered();
      await page.getByRole("heading", { level: 2, name: "Your GPUs" }).waitFor();
      await page.getByRole("img", { name: /^Utilisation, % from .*GPU \d+ average/ }).waitFor();
      await page.getByRole("img", { name: /^Power, W from / }).waitFor();
      await page.getByRole("img", { name: /^SM clock, MHz from .*GPU \d+ average 1,?980/ }).waitFor();
      await page.getByTestId("energy").filter({ hasText: /Energy drawn so far: [\d.,]+ kWh/ }).waitFor();
      await tab.check("rental-telemetry");

      // The catalog compares configurations with what the fleet measured: this L4's burn-in
      // is among them now.
      const offers = await api.expect(200, "GET", `/v1/offers?gpu_model=${encodeURIComponent(L4)}&gpu_count=2&interconnect=any`, undefined, customer);
      assert.ok(offers.items[0].measured && offers.items[0].measured.nodes >= 1, JSON.stringify(offers.items[0]));
      assert.ok(offers.items[0].price_per_measured_tflops_day, JSON.stringify(offers.items[0]));
      await tab.visit("#/catalog");
      await page.getByRole("heading", { level: 2, name: "Compare configurations" }).waitFor();
      await page.getByLabel("Configuration 1").selectOption(`${L4}|2`);
      await page.getByLabel("Configuration 2").selectOption(`${H100}|8`);
      const compared = page.getByTestId("compare");
      await compared.waitFor();
      const l4Column = await compared.getByRole("row", { name: /Measured per GPU/ }).textContent();
      assert.match(l4Column, /Gflop\/s/, l4Column);
      const perTflops = await compared.getByRole("row", { name: /Price per measured TFLOP\/s a day/ }).textContent();
      assert.match(perTflops.replace(/[\u00a0\u202f]/g, " "), /₽/, perTflops);
      const tensor = await compared.getByRole("row", { name: /fp16 tensor per GPU/ }).textContent();
      assert.match(tensor, /TFLOP\/s/, tensor);
      const perTensor = await compared.getByRole("row", { name: /Price per measured tensor TFLOP\/s a day/ }).textContent();
      assert.match(perTensor.replace(/[\u00a0\u202f]/g, " "), /₽/, perTensor);
      await tab.check("catalog-compare");
      await tab.visit(`#/rentals/${encodeURIComponent(booked.id)}`);
      await page.getByRole("heading", { level: 2, name: "Handover report" }).waitFor();
      await page.getByLabel("Language").selectOption("ru");
      await page.getByRole("heading", { level: 2, name: "Отчёт о передаче" }).waitFor();
      await page.getByRole("table", { name: "Что платформа измерила перед передачей узла" }).waitFor();
      await page.getByRole("heading", { level: 2, name: "Ваши GPU" }).waitFor();
      await page.getByRole("img", { name: /^Загрузка, % с / }).waitFor();
      await tab.check("rental-report-ru");
      await tab.visit("#/catalog");
      await page.getByRole("heading", { level: 2, name: "Сравнение конфигураций" }).waitFor();
      await page.getByLabel("Конфигурация 1").selectOption(`${L4}|2`);
      await page.getByTestId("compare").getByRole("row", { name: /Измерено на GPU/ }).waitFor();
      await tab.check("catalog-compare-ru");
    },
  },
  {
    name: "the advisor sizes llama-2-70b for fp16 inference: no single 80 GB GPU, and a recommendation books",
    pages: ["advisor", "book"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack);
      await tab.signIn(customer.email, PASSWORD);
      await tab.visit("#/advisor");
      await tab.check("advisor");
      await page.getByLabel("Model").selectOption("llama-2-70b");
      await page.getByLabel("Precision").selectOption("fp16");
      await page.getByLabel("Task").selectOption("inference");
      await page.getByRole("button", { name: "Estimate" }).click();
      const recs = page.getByRole("table", { name: "Rentals that fit, cheapest first" });
      await recs.waitFor();
      // About 140 GB of weights alone: more than one 80 GB GPU, shown as a stacked bar.
      const total = await page.getByTestId("advisor-total").textContent();
      assert.ok(Number(total.replace(/[^\d.]/g, "")) > 141, total);
      await page.getByRole("img", { name: /Weights 138/ }).waitFor();
      await tab.check("advisor-llama-2-70b");
      const configs = (await recs.locator("tbody tr td:first-child").allTextContents()).map((c) => c.trim());
      assert.ok(configs.length > 0);
      assert.ok(!configs.includes(`1× ${H100}`), configs.join(", "));
      assert.ok(configs.includes(`2× ${H100}`), configs.join(", "));
      // The answer agrees: no single GPU of 80 GB.
      const advice = await api.expect(200, "POST", "/v1/advisor",
        { preset: "llama-2-70b", precision: "fp16", task: "inference" }, customer);
      assert.ok(!advice.recommendations.some((r) => r.gpu_count === 1 && r.vram_per_gpu_gb <= 80));

      // "Book this" opens the booking form with that configuration chosen.
      await recs.getByRole("link", { name: `Book this: 2× ${H100}` }).click();
      await page.waitForFunction(() => location.hash.startsWith("#/book"));
      await tab.rendered();
      assert.equal(await page.getByLabel("GPU model").inputValue(), H100);
      assert.equal(await page.getByLabel("Number of GPUs").inputValue(), "2");
    },
  },
  {
    name: "errors are shown to the user: insufficient funds, no capacity",
    pages: ["book"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      // No money at all: a booking is refused with 402, said in words beside the form.
      const poor = await api.customer(stack);
      await tab.signIn(poor.email, PASSWORD);
      tab.allowFailedRequest(/\/v1\/rentals$/, 402);
      await tab.visit("#/book");
      await fillBooking(page, { model: H100, count: 1, start: isoDay(30) });
      await page.getByText("Available for this period.").waitFor();
      await page.getByRole("button", { name: "Book and pay" }).click();
      const alert = page.locator("form .form-error[role=alert]");
      await alert.filter({ hasText: "Not enough money on the balance" }).waitFor();
      assert.match(await alert.textContent(), /this needs ₽6,500\.00, ₽0\.00 is available/);
      assert.match(new URL(page.url()).hash, /^#\/book/, "still on the form");
      await tab.check("book-insufficient-funds");
      const none = await api.expect(200, "GET", "/v1/rentals", undefined, poor);
      assert.equal(none.items.length, 0);

      // Money but no GPUs: someone else has the only L4 node for those days; the quote says
      // so, and so does the refusal.
      await stack.credit(poor.orgId, MILLION_ROUBLES);
      const other = await api.customer(stack, { fundsMinor: MILLION_ROUBLES });
      const day = isoDay(20);
      await api.expect(201, "POST", "/v1/rentals", { gpu_model: L4, gpu_count: 4, interconnect: "any",
        start: day, days: 2, image_id: stack.imageId }, other);
      tab.allowFailedRequest(/\/v1\/rentals$/, 409);
      await tab.visit("#/book");
      await fillBooking(page, { model: L4, count: 4, interconnect: "any", start: day });
      await page.getByText("Not free for this period.").waitFor();
      await page.getByRole("button", { name: "Book and pay" }).click();
      await alert.filter({ hasText: "No GPUs of that shape are free for that period." }).waitFor();
      await tab.check("book-no-capacity");
      assert.equal((await api.expect(200, "GET", "/v1/rentals", undefined, poor)).items.length, 0);
    },
  },
  {
    name: "an admin drains a node and sees it leave the availability",
    pages: ["admin/node", "admin/fleet", "catalog"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const node = stack.nodes["pcie-4090-a"];
      const offer = () => page.getByRole("table", { name: "Offers with prices per day" })
        .getByRole("row").filter({ hasText: `8× ${RTX4090}` });
      await tab.signIn(stack.adminEmail, stack.adminPassword);
      // Before: 8× RTX 4090 can start now.
      await tab.visit("#/catalog");
      await offer().getByRole("cell", { name: "Now", exact: true }).waitFor();

      // The fleet page links the node; its page drains it, asking why.
      await tab.visit("#/admin");
      await tab.check("admin-fleet");
      await page.getByRole("link", { name: new RegExp(node.hostname) }).first().click();
      await page.getByRole("heading", { level: 1, name: node.hostname }).waitFor();
      await tab.rendered();
      assert.equal(new URL(page.url()).hash, `#/admin/nodes/${node.id}`);
      await tab.check("admin-node");
      await page.getByRole("button", { name: "Drain", exact: true }).click();
      await page.getByLabel("Reason").fill("browser test: fans to be replaced");
      await tab.check("admin-node-drain-form");
      await page.getByRole("button", { name: "Confirm: Drain" }).click();
      await page.getByRole("status").filter({ hasText: `${node.hostname}: Drain done` }).waitFor();
      const drained = await api.expect(200, "GET", `/v1/admin/nodes/${node.id}`, undefined, stack.admin);
      assert.ok(["draining", "maintenance"].includes(drained.state), drained.state);
      await page.getByRole("heading", { level: 1, name: node.hostname }).waitFor();
      await tab.check("admin-node-drained");

      // After: nothing of it can start now (the catalog may answer from a cache for a moment).
      await tab.visit("#/catalog");
      await waitFor(async () => {
        if ((await offer().count()) === 0) return true;
        if ((await offer().getByRole("cell", { name: "Now", exact: true }).count()) === 0) return true;
        await page.reload();
        await tab.rendered();
        return false;
      }, 15000, 500, "the catalog to stop offering the drained node now");
    },
  },
  {
    name: "an admin's maintenance window moves a customer's rental to another node, and the rental's page tells the customer why, in English and in Russian",
    pages: ["rental"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: 10 * MILLION_ROUBLES });
      const booked = await api.expect(201, "POST", "/v1/rentals", { gpu_model: H100, gpu_count: 8,
        start: isoDay(9), days: 1, image_id: stack.imageId }, customer);
      const from = booked.node_id;
      const start = new Date(Date.parse(booked.period.start) - 86400000).toISOString().replace(/\.\d+Z$/, "Z");
      const end = new Date(Date.parse(booked.period.end) + 86400000).toISOString().replace(/\.\d+Z$/, "Z");
      const planned = await api.expect(201, "POST", "/v1/admin/maintenance",
        { node_ids: [from], start, end, reason: "browser test: firmware" }, stack.admin);
      assert.equal(planned.moved.length, 1, JSON.stringify(planned));
      assert.notEqual(planned.moved[0].to_node_id, from);
      try {
        await tab.signIn(customer.email, PASSWORD);
        await tab.visit(`#/rentals/${encodeURIComponent(booked.id)}`);
        await page.getByRole("heading", { level: 2, name: "Notices" }).waitFor();
        await page.getByTestId("notices").filter({ hasText: `moved from node ${from}` }).waitFor();
        await page.getByTestId("notices").filter({ hasText: "browser test: firmware" }).waitFor();
        await tab.check("rental-notices");
        await page.getByLabel("Language").selectOption("ru");
        await page.getByRole("heading", { level: 2, name: "Уведомления" }).waitFor();
        await page.getByTestId("notices").filter({ hasText: "Вступает в силу" }).waitFor();
        await tab.check("rental-notices-ru");
        await page.getByLabel("Язык").selectOption("en");
      } finally {
        await api.expect(200, "DELETE", `/v1/admin/maintenance/${planned.items[0].id}`, undefined, stack.admin);
      }
    },
  },
  {
    name: "a maintenance window over a rental that cannot move asks its customer to choose, and the rental's page answers it, in English and in Russian",
    pages: ["rental"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: 10 * MILLION_ROUBLES });
      const booked = await api.expect(201, "POST", "/v1/rentals", { gpu_model: H100, gpu_count: 8,
        start: isoDay(15), days: 1, image_id: stack.imageId }, customer);
      // A window over both H100 nodes: nowhere else for the rental to go, so it stays and its
      // customer is asked (the window starts more than the 72 hours' notice ahead).
      const iso = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
      const start = iso(Date.parse(booked.period.start) - 86400000);
      const end = iso(Date.parse(booked.period.end) + 86400000);
      const planned = await api.expect(201, "POST", "/v1/admin/maintenance", {
        node_ids: [stack.nodes["hgx-h100-a"].id, stack.nodes["hgx-h100-b"].id], start, end,
        reason: "browser test: power feed" }, stack.admin);
      try {
        assert.deepEqual(planned.moved, [], JSON.stringify(planned));
        assert.deepEqual(planned.notified, [booked.id], JSON.stringify(planned));
        await tab.signIn(customer.email, PASSWORD);
        await tab.visit(`#/rentals/${encodeURIComponent(booked.id)}`);
        await page.getByRole("heading", { level: 2, name: "Notices" }).waitFor();
        const choices = page.getByRole("group", { name: /^Choose by / });
        await choices.waitFor();
        for (const name of ["Move to another node", "Start after the window", "Cancel the rental"]) {
          await choices.getByRole("button", { name, exact: true }).waitFor();
        }
        await tab.check("rental-notice-choices");
        await page.getByLabel("Language").selectOption("ru");
        const russian = page.getByRole("group", { name: /^Выберите до / });
        await russian.waitFor();
        await tab.check("rental-notice-choices-ru");
        // Answered in Russian, after the browser's confirmation: applied at once.
        page.once("dialog", (dialog) => dialog.accept());
        await russian.getByRole("button", { name: "Начать после окна" }).click();
        await page.getByRole("status").filter({ hasText: "Ответ применён: Начать после окна." }).waitFor();
        await page.getByTestId("notice-answer").filter({ hasText: "Ваш ответ: Начать после окна" }).waitFor();
        assert.equal(await page.getByRole("group", { name: /^Выберите до / }).count(), 0, "nothing left to answer");
        await tab.check("rental-notice-answered-ru");
        await page.getByLabel("Язык").selectOption("en");
        await page.getByTestId("notice-answer").filter({ hasText: "Your answer: Start after the window" }).waitFor();
        await tab.check("rental-notice-answered");
        const notices = await api.expect(200, "GET", `/v1/rentals/${booked.id}/notices`, undefined, customer);
        assert.equal(notices.items[0].choice, "shift", JSON.stringify(notices.items[0]));
        const shifted = await api.expect(200, "GET", `/v1/rentals/${booked.id}`, undefined, customer);
        assert.equal(shifted.state, "scheduled");
        assert.equal(shifted.period.start, end, "it starts once the window is over");
      } finally {
        for (const w of planned.items) {
          await api.expect(200, "DELETE", `/v1/admin/maintenance/${w.id}`, undefined, stack.admin);
        }
        // Whatever state the scenario left it in: a failure above is the one to report.
        await api.call("POST", `/v1/rentals/${booked.id}/terminate`, {}, customer);
      }
    },
  },
  {
    name: "a customer sets a checkpoint command, reboots an active rental of a whole node, sees the reboot among its handovers and clears the command, in English and in Russian",
    pages: ["rental"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: 10 * MILLION_ROUBLES });
      const booked = await api.expect(201, "POST", "/v1/rentals", { gpu_model: H100, gpu_count: 8,
        start: "now", days: 1, image_id: stack.imageId }, customer);
      try {
        await stack.waitRental(customer, booked.id, "active", 45000);
        await tab.signIn(customer.email, PASSWORD);
        await tab.visit(`#/rentals/${encodeURIComponent(booked.id)}`);
        await page.getByRole("heading", { level: 2, name: "Checkpoint before a notice" }).waitFor();
        await page.getByTestId("checkpoint-command").filter({ hasText: "No command: nothing runs on a notice." }).waitFor();
        await page.getByLabel("Command").fill("cd ~/job && ./save.sh");
        await page.getByLabel("Time limit, seconds").fill("900");
        await page.getByRole("button", { name: "Save command" }).click();
        await page.getByRole("status").filter({ hasText: "Checkpoint command saved." }).waitFor();
        await page.getByTestId("checkpoint-command").filter({ hasText: "cd ~/job && ./save.sh" }).waitFor();
        await page.getByText("Runs on a notice, for at most 900 s:").waitFor();
        assert.deepEqual(await api.expect(200, "GET", `/v1/rentals/${booked.id}/checkpoint`, undefined, customer),
          { command: "cd ~/job && ./save.sh", timeout_s: 900 });
        await tab.check("rental-checkpoint");

        // The reboot, after the browser's confirmation: provisioning until the node is back.
        await page.getByRole("heading", { level: 2, name: "Manage the rental" }).waitFor();
        page.once("dialog", (dialog) => dialog.accept());
        await page.getByRole("button", { name: "Reboot", exact: true }).click();
        await page.getByRole("status").filter({ hasText: "Rebooting: the rental is back once the node is up." }).waitFor();
        await stack.waitRental(customer, booked.id, "active", 45000);
        await page.locator(".state-line").getByText("active").waitFor({ timeout: 30000 });
        const handovers = page.getByRole("table", { name: "This rental's handovers: moves to a spare node, reboots and power actions" });
        await handovers.waitFor();
        await handovers.getByRole("cell", { name: "Reboot", exact: true }).waitFor();
        await handovers.getByRole("cell", { name: `${booked.node_id} (same node)` }).waitFor();
        await tab.check("rental-handovers");
        const listed = await api.expect(200, "GET", `/v1/rentals/${booked.id}/handovers`, undefined, customer);
        assert.equal(listed.items.length, 1, JSON.stringify(listed));
        assert.equal(listed.items[0].cause, "reboot");
        assert.equal(listed.items[0].outcome, "active");

        await page.getByLabel("Language").selectOption("ru");
        await page.getByRole("heading", { level: 2, name: "Переносы и перезагрузки" }).waitFor();
        await page.getByRole("table", { name: /^Передачи аренды/ }).getByRole("cell", { name: "Перезагрузка", exact: true }).waitFor();
        await page.getByRole("heading", { level: 2, name: "Управление арендой" }).waitFor();
        await page.getByRole("button", { name: "Перезагрузить", exact: true }).waitFor();
        await tab.check("rental-handovers-ru");
        await page.getByRole("button", { name: "Удалить команду" }).click();
        await page.getByRole("status").filter({ hasText: "Команда удалена." }).waitFor();
        await page.getByTestId("checkpoint-command").filter({ hasText: "Команды нет" }).waitFor();
        await tab.check("rental-checkpoint-cleared-ru");
        await page.getByLabel("Язык").selectOption("en");
        const cleared = await api.expect(200, "GET", `/v1/rentals/${booked.id}/checkpoint`, undefined, customer);
        assert.equal(cleared.command, null);
      } finally {
        // Whatever state the scenario left it in: a failure above is the one to report.
        await api.call("POST", `/v1/rentals/${booked.id}/terminate`, {}, customer);
      }
    },
  },
  {
    name: "an admin plans a maintenance window on a node's page, sees it listed, and cancels it, in English and in Russian",
    pages: ["admin/node"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const node = stack.nodes["hgx-h100-b"];
      await tab.signIn(stack.adminEmail, stack.adminPassword);
      await tab.visit(`#/admin/nodes/${encodeURIComponent(node.id)}`);
      await page.getByRole("heading", { level: 2, name: "Maintenance windows" }).waitFor();
      await page.getByText("No maintenance is planned.").waitFor();
      // Twelve and thirteen days ahead, in the browser's zone, as datetime-local takes them.
      const local = (days) => {
        const d = new Date(Date.now() + days * 86400000);
        const pad = (n) => String(n).padStart(2, "0");
        return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T10:00`;
      };
      const form = page.locator("form").filter({ has: page.getByRole("button", { name: "Plan a window" }) });
      await form.getByLabel("Starts").fill(local(12));
      await form.getByLabel("Ends").fill(local(13));
      await form.getByLabel("What the window is for").fill("browser test: BMC firmware");
      await tab.check("admin-node-maintenance-form");
      await form.getByRole("button", { name: "Plan a window" }).click();
      await page.getByRole("status").filter({ hasText: "Window planned; rentals moved: 0." }).waitFor();
      const windows = page.getByRole("table", { name: "Planned maintenance of the node: its GPUs are taken for the period" });
      await windows.getByRole("cell", { name: "browser test: BMC firmware" }).waitFor();
      const listed = await api.expect(200, "GET", `/v1/admin/maintenance?node_id=${node.id}`, undefined, stack.admin);
      assert.equal(listed.items.length, 1, JSON.stringify(listed));
      await tab.check("admin-node-maintenance");
      // The fleet page's tile of the node says when its maintenance starts.
      await tab.visit("#/admin");
      await page.getByRole("link", { name: new RegExp(node.hostname) }).filter({ hasText: "Maintenance from" }).waitFor();
      await tab.check("admin-fleet-maintenance");
      await page.getByRole("link", { name: new RegExp(node.hostname) }).first().click();
      await page.getByRole("heading", { level: 2, name: "Maintenance windows" }).waitFor();
      await tab.rendered();
      await page.getByLabel("Language").selectOption("ru");
      await page.getByRole("heading", { level: 2, name: "Окна обслуживания" }).waitFor();
      await tab.check("admin-node-maintenance-ru");
      await page.getByRole("button", { name: /^Отменить окно с / }).click();
      await page.getByRole("status").filter({ hasText: "Окно отменено" }).waitFor();
      await page.getByText("Обслуживание не запланировано.").waitFor();
      const after = await api.expect(200, "GET", `/v1/admin/maintenance?node_id=${node.id}`, undefined, stack.admin);
      assert.equal(after.items.length, 0, JSON.stringify(after));
    },
  },
  {
    name: "switching the language to Russian shows Russian text and amounts in ₽",
    pages: ["dashboard", "catalog"],
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: 123456789 });
      await tab.signIn(customer.email, PASSWORD);
      await page.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor();
      await page.getByLabel("Language").selectOption("ru");
      await page.getByRole("heading", { level: 1, name: "Обзор" }).waitFor();
      assert.equal(await page.evaluate(() => document.documentElement.lang), "ru");
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Аренды" }).waitFor();
      // 1 234 567,89 ₽ with the Russian grouping and decimal comma.
      const balance = (await page.getByTestId("balance").textContent()).replace(/[\u00a0\u202f]/g, " ");
      assert.equal(balance, "1 234 567,89 ₽");
      await tab.check("dashboard-ru");
      await tab.visit("#/catalog");
      await page.getByRole("heading", { level: 1 }).filter({ hasText: /[а-яА-Я]/ }).waitFor();
      const prices = await page.getByRole("table", { name: "Предложения с ценами за сутки" }).textContent();
      assert.match(prices.replace(/[\u00a0\u202f]/g, " "), /52 000,00 ₽/, "8× H100 at 6,500 ₽ a GPU");
      await tab.check("catalog-ru");
      // The choice is kept: a reload stays Russian.
      await page.reload();
      await tab.rendered();
      await page.getByRole("heading", { level: 1 }).filter({ hasText: /[а-яА-Я]/ }).waitFor();
    },
  },
  {
    name: "on a phone, in the browser's language, by keyboard alone",
    pages: ["login", "dashboard", "book", "catalog", "billing"],
    // A Russian-speaking browser (Accept-Language ru-RU) on a 390 px phone.
    tab: { lang: "ru-RU", viewport: { width: 390, height: 844 } },
    async run({ tab, api, stack }) {
      const { page } = tab;
      const customer = await api.customer(stack, { fundsMinor: MILLION_ROUBLES });
      const fitsTheScreen = async (what) => {
        const { scroll, width } = await page.evaluate(() =>
          ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
        assert.ok(scroll <= width, `${what} is ${scroll} px wide on a ${width} px screen`);
      };
      // First visit: Russian, chosen from the browser's languages, before anyone picks one.
      await tab.visit("#/login");
      await page.getByRole("heading", { level: 1, name: "Вход" }).waitFor();
      assert.equal(await page.evaluate(() => document.documentElement.lang), "ru");
      await fitsTheScreen("the sign-in page");
      // By keyboard: the first Tab reaches the skip link, which moves focus to the content;
      // the form is filled and sent with keys alone, every stop visibly focused.
      await page.keyboard.press("Tab");
      assert.equal(await page.evaluate(() => document.activeElement.className), "skip");
      await page.keyboard.press("Enter");
      assert.equal(await page.evaluate(() => document.activeElement.id), "main");
      await page.getByLabel("Эл. почта").focus();
      await page.keyboard.type(customer.email);
      await page.keyboard.press("Tab");
      const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
      assert.notEqual(outline, "none", "the focused field shows its focus");
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { level: 1, name: "Обзор" }).waitFor();
      await tab.rendered();
      for (const [hash, name] of [["#/", "phone-dashboard"], ["#/book", "phone-book"],
                                  ["#/catalog", "phone-catalog"], ["#/billing", "phone-billing"],
                                  ["#/advisor", "phone-advisor"]]) {
        await tab.show(hash, name);
        await fitsTheScreen(hash);
      }
    },
  },
];

// Every main page, as a customer (with a rental, a key and a token to show) and as the
// platform admin: rendered without console errors, axe clean, a screenshot each. Pages not
// there yet are left out (and named in the test's output).
export const CUSTOMER_PAGES = [
  ["#/", "dashboard"], ["#/catalog", "catalog"], ["#/book", "book"], ["#/rentals", "rentals"],
  ["#/rentals/:rental", "rental"], ["#/keys", "keys"], ["#/tokens", "tokens"], ["#/members", "members"],
  ["#/billing", "billing"], ["#/advisor", "advisor"],
];
export const ADMIN_PAGES = [
  ["#/admin", "admin/fleet"], ["#/admin/nodes/:node", "admin/node"], ["#/admin/images", "admin/images"],
  ["#/admin/prices", "admin/prices"], ["#/admin/orgs", "admin/orgs"], ["#/admin/audit", "admin/audit"],
];

export async function seedForTour(api, stack) {
  const customer = await api.customer(stack, { fundsMinor: 10 * MILLION_ROUBLES, org: "Tour Ltd" });
  await api.expect(201, "POST", "/v1/ssh-keys", { name: "laptop", public_key: PUBLIC_KEY }, customer);
  await api.expect(201, "POST", "/v1/api-tokens", { name: "ci", scopes: ["rentals:read"] }, customer);
  const rental = await api.expect(201, "POST", "/v1/rentals", {
    gpu_model: L4, gpu_count: 1, interconnect: "any", start: isoDay(5), days: 3, image_id: stack.imageId,
  }, customer);
  await waitFor(async () => (await api.expect(200, "GET", `/v1/rentals/${rental.id}`, undefined, customer)).state === "scheduled");
  return { customer, rental: rental.id, node: stack.nodes["hgx-h100-a"].id };
}
