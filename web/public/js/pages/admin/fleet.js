// Administration: the fleet at a glance — nodes by site as tiles coloured by state and health
// (both also written out), counts per state, each node's hottest GPU, refreshed every 10 s;
// adding sites and nodes (a node's enrolment token is shown once). It also exports the small
// helpers the other admin pages share (paging, state and health labels, money input, tables).
import { get, newIdempotencyKey, post } from "../../api.js";
import { dateTime, locale, number, strings, t } from "../../i18n.js";
import { badge, busy, copyText, describeError, field, h, page, replace, toast } from "../../ui.js";

strings({
  en: {
    "admin.fleet.title": "Fleet", "admin.fleet.counts": "Nodes by state", "admin.fleet.total": "All nodes",
    "admin.fleet.updated": "Updated at {time}; the page refreshes every 10 seconds.",
    "admin.fleet.refresh_failed": "Could not refresh: {error}",
    "admin.fleet.no_nodes": "No nodes yet. Add the first one below.",
    "admin.fleet.unknown_site": "Unknown site",
    "admin.fleet.site_nodes": { one: "{n} node", other: "{n} nodes" },
    "admin.fleet.site_meta": "{region} · {timezone}",
    "admin.fleet.hottest": "Hottest GPU: {temp}", "admin.fleet.no_telemetry": "No telemetry yet",
    "admin.fleet.window": "Maintenance from {start}",
    "admin.fleet.state_label": "State: {state}", "admin.fleet.health_label": "Health: {health}",
    "admin.fleet.add_node": "Add a node", "admin.fleet.site": "Site", "admin.fleet.hostname": "Host name",
    "admin.fleet.hostname_hint": "Letters, digits, '-' and '.', as in DNS.",
    "admin.fleet.gpu_model": "GPU model", "admin.fleet.gpu_count": "GPU count",
    "admin.fleet.interconnect": "GPU interconnect",
    "admin.fleet.interconnect_hint": "Until the agent reports the real link matrix, the node is assumed to be wired this way.",
    "admin.fleet.ic.auto": "The model's usual wiring", "admin.fleet.ic.nvswitch": "NVSwitch: every GPU linked",
    "admin.fleet.ic.nvlink-pairs": "NVLink bridges between pairs", "admin.fleet.ic.pcie": "PCIe only",
    "admin.fleet.add_submit": "Add node", "admin.fleet.need_site": "Add a site first: every node belongs to one.",
    "admin.fleet.token_title": "Enrolment token for {hostname}",
    "admin.fleet.token_once": "It is shown only this once: copy it now. Single use, valid until {time}.",
    "admin.fleet.token_command": "On the node, as root (with the agents' CA certificate copied from the control plane):",
    "admin.fleet.open_node": "Open the node's page",
    "admin.fleet.add_site": "Add a site", "admin.fleet.site_name": "Name", "admin.fleet.region": "Region",
    "admin.fleet.timezone": "Time zone", "admin.fleet.timezone_hint": "An IANA zone such as Europe/Moscow; rental days follow it.",
    "admin.fleet.add_site_submit": "Add site", "admin.fleet.site_added": "Site {name} added.",
    "admin.fleet.node_added": "Node {hostname} added; it waits for its agent to enrol.",
    "admin.health.ok": "healthy", "admin.health.warning": "warning", "admin.health.critical": "critical",
    "admin.health.unknown": "unknown",
    "admin.celsius": "{n} °C", "admin.none": "—", "admin.load_more": "Show more",
    "admin.error.integer": "Enter a whole number from {min} to {max}.",
    "admin.error.amount": "Enter an amount such as 1500 or 1500.50 (at most {digits} digits after the point).",
    "admin.error.required": "This field is required.",
  },
  ru: {
    "admin.fleet.title": "Парк серверов", "admin.fleet.counts": "Узлы по состояниям", "admin.fleet.total": "Всего узлов",
    "admin.fleet.updated": "Обновлено в {time}; страница обновляется каждые 10 секунд.",
    "admin.fleet.refresh_failed": "Не удалось обновить: {error}",
    "admin.fleet.no_nodes": "Узлов пока нет. Добавьте первый ниже.",
    "admin.fleet.unknown_site": "Неизвестная площадка",
    "admin.fleet.site_nodes": { one: "{n} узел", few: "{n} узла", many: "{n} узлов", other: "{n} узла" },
    "admin.fleet.site_meta": "{region} · {timezone}",
    "admin.fleet.hottest": "Самый горячий GPU: {temp}", "admin.fleet.no_telemetry": "Телеметрии пока нет",
    "admin.fleet.window": "Обслуживание с {start}",
    "admin.fleet.state_label": "Состояние: {state}", "admin.fleet.health_label": "Исправность: {health}",
    "admin.fleet.add_node": "Добавить узел", "admin.fleet.site": "Площадка", "admin.fleet.hostname": "Имя хоста",
    "admin.fleet.hostname_hint": "Латинские буквы, цифры, «-» и «.», как в DNS.",
    "admin.fleet.gpu_model": "Модель GPU", "admin.fleet.gpu_count": "Число GPU",
    "admin.fleet.interconnect": "Связь между GPU",
    "admin.fleet.interconnect_hint": "Пока агент не сообщит настоящую матрицу связей, считается, что узел собран так.",
    "admin.fleet.ic.auto": "Обычная для модели", "admin.fleet.ic.nvswitch": "NVSwitch: все GPU связаны",
    "admin.fleet.ic.nvlink-pairs": "Мосты NVLink между парами", "admin.fleet.ic.pcie": "Только PCIe",
    "admin.fleet.add_submit": "Добавить узел", "admin.fleet.need_site": "Сначала добавьте площадку: каждый узел относится к одной из них.",
    "admin.fleet.token_title": "Токен подключения для {hostname}",
    "admin.fleet.token_once": "Он показывается только один раз — скопируйте его сейчас. Одноразовый, действует до {time}.",
    "admin.fleet.token_command": "На узле от root (сертификат CA агентов скопируйте с управляющего сервера):",
    "admin.fleet.open_node": "Открыть страницу узла",
    "admin.fleet.add_site": "Добавить площадку", "admin.fleet.site_name": "Название", "admin.fleet.region": "Регион",
    "admin.fleet.timezone": "Часовой пояс", "admin.fleet.timezone_hint": "Пояс IANA, например Europe/Moscow; по нему считаются дни аренды.",
    "admin.fleet.add_site_submit": "Добавить площадку", "admin.fleet.site_added": "Площадка {name} добавлена.",
    "admin.fleet.node_added": "Узел {hostname} добавлен; он ждёт подключения агента.",
    "admin.health.ok": "исправен", "admin.health.warning": "предупреждение", "admin.health.critical": "критично",
    "admin.health.unknown": "неизвестно",
    "admin.celsius": "{n} °C", "admin.none": "—", "admin.load_more": "Показать ещё",
    "admin.error.integer": "Введите целое число от {min} до {max}.",
    "admin.error.amount": "Введите сумму, например 1500 или 1500,50 (не больше {digits} знаков после запятой).",
    "admin.error.required": "Заполните это поле.",
  },
});

// ---- Helpers shared by the admin pages ---------------------------------------------------

// Every page of a list, following next_cursor; `signal` aborts it when the page is left.
export async function allPages(path, signal) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const pageOf = await get(`${path}${sep}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { signal });
    items.push(...(pageOf.items || []));
    cursor = pageOf.next_cursor || null;
  } while (cursor);
  return items;
}

// An error found before the request, shown beside `name` by busy()/showError() like the API's.
export function clientError(name, message) {
  return { field: name, code: "admin.client", message, details: {} };
}

// Points an API error at the field it concerns when the API names another (or none).
export function pointAt(err, name) {
  if (err && err.details && typeof err.details === "object") err.details.field = name;
  return err;
}

const HEALTH_CLASS = { ok: "healthy", warning: "warning", critical: "critical", unknown: "unknown" };

export function healthLabel(health) {
  const key = `admin.health.${health}`;
  const text = t(key);
  return text === key ? String(health) : text;
}

export function healthBadge(health) {
  return h("span", { class: `badge ${HEALTH_CLASS[health] || "unknown"}` }, healthLabel(health));
}

export function stateLabel(state) {
  const text = t(`state.${state}`);
  return text === `state.${state}` ? String(state) : text;
}

export const stateBadge = (state) => badge(state);

export function idCode(id) {
  return id ? h("code", { class: "admin-id" }, id) : t("admin.none");
}

export function section(id, title, ...children) {
  return h("section", { class: "admin-section", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

// A table whose first column names the row (th scope=row); `columns` = [{label, cell, num}].
export function dataTable({ caption, columns, rows, empty = t("empty"), rowKey = null, className = "" }) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return scrollRegion(caption,
    h("table", { class: `admin-table ${className}` },
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label)))),
      h("tbody", {}, rows.map((r) => h("tr", { dataset: rowKey ? { key: rowKey(r) } : null },
        columns.map((c, i) => h(i === 0 ? "th" : "td", { scope: i === 0 ? "row" : null, class: c.num ? "num" : null },
          c.cell(r))))))));
}

// A table's horizontal scroller (phones): while it has something to scroll it is a named,
// focusable region, so keyboard users can scroll it too; otherwise it adds no tab stop.
export function scrollRegion(label, ...children) {
  const wrap = h("div", { class: "table-wrap admin-table-wrap" }, ...children);
  const update = () => {
    if (wrap.scrollWidth > wrap.clientWidth + 1) {
      wrap.setAttribute("tabindex", "0");
      wrap.setAttribute("role", "region");
      wrap.setAttribute("aria-label", label);
    } else {
      wrap.removeAttribute("tabindex");
      wrap.removeAttribute("role");
      wrap.removeAttribute("aria-label");
    }
  };
  if (typeof ResizeObserver === "function") new ResizeObserver(update).observe(wrap);
  return wrap;
}

// A whole number from `min` to `max` typed into `name`, or an error beside it.
export function wholeNumber(text, name, min, max) {
  const s = String(text).trim();
  const n = Number(s);
  if (!/^\d+$/.test(s) || n < min || n > max) throw clientError(name, t("admin.error.integer", { min, max }));
  return n;
}

// Money typed by a person ("1 500,50" or "1500.50") in minor units, in checked integer
// arithmetic; null when it is not an amount.
export function fractionDigits(currency) {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits;
  } catch (err) {
    return 2;
  }
}

export function parseAmount(text, currency) {
  const s = String(text).trim().replace(/[\s\u00a0\u202f'’]/g, "").replace(",", ".");
  const m = /^(\d+)(?:\.(\d*))?$/.exec(s);
  if (!m) return null;
  const digits = fractionDigits(currency);
  const fraction = m[2] || "";
  if (fraction.length > digits) return null;
  const minor = Number(m[1]) * 10 ** digits + Number(fraction.padEnd(digits, "0") || 0);
  return Number.isSafeInteger(minor) ? minor : null;
}

export function amountError(name, currency) {
  return clientError(name, t("admin.error.amount", { digits: fractionDigits(currency) }));
}

// Minor units as an input's value: "1500,50" in Russian, "1500.50" in English, no grouping.
export function formatAmount(minor, currency) {
  const digits = fractionDigits(currency);
  const sign = minor < 0 ? "-" : "";
  const abs = Math.abs(minor);
  const whole = Math.trunc(abs / 10 ** digits);
  if (!digits) return `${sign}${whole}`;
  const point = new Intl.NumberFormat(locale()).formatToParts(1.5).find((p) => p.type === "decimal")?.value || ".";
  return `${sign}${whole}${point}${String(abs % 10 ** digits).padStart(digits, "0")}`;
}

export function celsius(value) {
  return value === null || value === undefined ? t("admin.none") : t("admin.celsius", { n: number(value, 0) });
}

// A node's hottest GPU in its latest telemetry, or null.
// A one-time secret with a copy button (the button selects it when the clipboard is refused).
export function secretBox(text) {
  const button = h("button", { type: "button" }, t("copy"));
  button.addEventListener("click", () => copyText(text, button));
  return h("div", { class: "admin-secret" }, h("pre", { class: "copyable" }, text), button);
}

// ---- The fleet page ------------------------------------------------------------------------

const NODE_STATES = ["available", "enrolling", "maintenance", "draining", "failed", "retired"];
const HEALTH_ICON = { ok: "✓", warning: "!", critical: "✕", unknown: "?" };
const REFRESH_MS = 10000;

export async function render(ctx) {
  const controller = new AbortController();
  const { signal } = controller;
  let timer = null;
  ctx.onLeave(() => {
    clearTimeout(timer);
    controller.abort();
  });

  // `sites` stays one array (the add-node form holds it); a refresh refills it.
  const windowsOf = () => get("/v1/admin/maintenance", { signal }).then((r) => r.items).catch(() => []);
  const [sites, firstNodes, models, firstWindows] = await Promise.all([
    allPages("/v1/admin/sites", signal),
    allPages("/v1/admin/nodes", signal),
    allPages("/v1/gpu-models", signal).catch(() => []),
    windowsOf(),
  ]);
  let nodes = firstNodes;
  // Each node's next maintenance window (the list is by start), shown on its tile.
  let nextWindow = new Map();
  const keepWindows = (windows) => {
    nextWindow = new Map();
    for (const w of windows) if (!nextWindow.has(w.node_id)) nextWindow.set(w.node_id, w);
  };
  keepWindows(firstWindows);

  const overview = h("div", { class: "admin-overview" });
  const status = h("p", { class: "admin-status" });

  function tile(n) {
    // The list carries each node's hottest GPU from its latest telemetry (null: none yet).
    const live = n.state !== "retired" && n.state !== "enrolling";
    const temp = n.telemetry_at ? n.hottest_gpu_temperature_c : live ? null : undefined;
    return h("li", {},
      h("a", { class: `admin-tile state-${n.state} health-${n.health}`, href: `#/admin/nodes/${encodeURIComponent(n.id)}`,
               dataset: { node: n.id } },
        h("span", { class: "admin-tile-host" }, n.hostname),
        h("span", { class: "admin-tile-gpus" }, `${n.gpu_model} × ${n.gpu_count}`),
        h("span", { class: "admin-tile-state" }, t("admin.fleet.state_label", { state: stateLabel(n.state) })),
        h("span", { class: "admin-tile-health" },
          h("span", { class: "admin-health-icon", "aria-hidden": "true" }, HEALTH_ICON[n.health] || "?"),
          t("admin.fleet.health_label", { health: healthLabel(n.health) })),
        temp === undefined ? null : h("span", { class: "admin-tile-temp" },
          typeof temp === "number" ? t("admin.fleet.hottest", { temp: celsius(temp) }) : t("admin.fleet.no_telemetry")),
        nextWindow.has(n.id) ? h("span", { class: "admin-tile-window" },
          t("admin.fleet.window", { start: dateTime(nextWindow.get(n.id).start) })) : null));
  }

  function draw() {
    // A refresh replaces the tiles; keyboard focus stays on the node it was on.
    const focused = overview.contains(document.activeElement) ? document.activeElement.dataset.node : null;
    const counts = Object.fromEntries(NODE_STATES.map((s) => [s, 0]));
    for (const n of nodes) counts[n.state] = (counts[n.state] || 0) + 1;
    const stats = h("section", { "aria-labelledby": "admin-fleet-counts" },
      h("h2", { id: "admin-fleet-counts", class: "visually-hidden" }, t("admin.fleet.counts")),
      h("dl", { class: "stats admin-counts" },
        h("div", {}, h("dt", {}, t("admin.fleet.total")), h("dd", {}, number(nodes.length))),
        Object.entries(counts).map(([s, n]) => h("div", { class: `state-${s}` },
          h("dt", {}, h("span", { class: "admin-swatch", "aria-hidden": "true" }), stateLabel(s)), h("dd", {}, number(n))))));
    const bySite = new Map(sites.map((s) => [s.id, { site: s, nodes: [] }]));
    const orphans = [];
    for (const n of nodes) (bySite.get(n.site_id)?.nodes || orphans).push(n);
    const groups = [...bySite.values()].sort((a, b) => a.site.name.localeCompare(b.site.name, locale()));
    if (orphans.length) groups.push({ site: null, nodes: orphans });
    const sections = groups.filter((g) => g.nodes.length).map((g, i) => {
      const id = `admin-site-${i}`;
      g.nodes.sort((a, b) => a.hostname.localeCompare(b.hostname, locale(), { numeric: true }));
      return h("section", { class: "admin-site", "aria-labelledby": id },
        h("h2", { id }, g.site ? g.site.name : t("admin.fleet.unknown_site"), " ",
          h("span", { class: "admin-muted" }, t("admin.fleet.site_nodes", { n: g.nodes.length }))),
        g.site ? h("p", { class: "admin-muted admin-site-meta" }, t("admin.fleet.site_meta", g.site)) : null,
        h("ul", { class: "admin-tiles" }, g.nodes.map(tile)));
    });
    replace(overview, stats,
      nodes.length ? null : h("p", { class: "empty" }, t("admin.fleet.no_nodes")),
      sections);
    if (focused) overview.querySelector(`[data-node="${CSS.escape(focused)}"]`)?.focus();
  }

  function stamp() {
    status.classList.remove("alert", "warn");
    status.textContent = t("admin.fleet.updated", {
      time: new Intl.DateTimeFormat(locale(), { timeStyle: "medium" }).format(new Date()) });
  }

  async function refresh({ full }) {
    clearTimeout(timer);
    try {
      if (full) {
        const [freshSites, freshNodes, freshWindows] = await Promise.all([allPages("/v1/admin/sites", signal),
          allPages("/v1/admin/nodes", signal), windowsOf()]);
        if (ctx.stale()) return;
        keepWindows(freshWindows);
        const changed = freshSites.map((x) => x.id).join() !== sites.map((x) => x.id).join();
        sites.splice(0, sites.length, ...freshSites);
        if (changed) nodeForm.refreshSites();
        nodes = freshNodes;
      }
      draw();
      stamp();
    } catch (err) {
      if (err.name === "AbortError" || ctx.stale()) return;
      status.classList.add("alert", "warn");
      status.textContent = t("admin.fleet.refresh_failed", { error: describeError(err) });
    } finally {
      if (!ctx.stale()) timer = setTimeout(() => refresh({ full: true }), REFRESH_MS);
    }
  }

  draw();
  stamp();
  refresh({ full: false });

  const siteForm = siteAddForm(sites, (site) => {
    sites.push(site);
    nodeForm.refreshSites(site.id);
    draw();
  });
  const nodeForm = nodeAddForm(sites, models, () => refresh({ full: true }));

  return page(t("admin.fleet.title"),
    status,
    overview,
    h("div", { class: "admin-forms" }, nodeForm.element, siteForm));
}

function nodeAddForm(sites, models, added) {
  const result = h("div", { class: "admin-result" });
  const siteOptions = () => sites.map((s) => ({ value: s.id, label: `${s.name} (${s.region})` }));
  const siteField = field({ label: t("admin.fleet.site"), name: "site_id", required: true, options: siteOptions() });
  const needSite = h("p", { class: "alert info" }, t("admin.fleet.need_site"));
  const modelNames = models.map((m) => m.name);
  const form = h("form", { class: "card", novalidate: true, "aria-labelledby": "admin-add-node" },
    h("h2", { id: "admin-add-node" }, t("admin.fleet.add_node")),
    sites.length ? null : needSite,
    h("div", { class: "admin-form-grid" },
      siteField,
      field({ label: t("admin.fleet.hostname"), name: "hostname", required: true, hint: t("admin.fleet.hostname_hint"),
              attrs: { autocomplete: "off", spellcheck: "false", maxlength: 253 } }),
      modelNames.length
        ? field({ label: t("admin.fleet.gpu_model"), name: "gpu_model", required: true,
                  options: modelNames.map((m) => ({ value: m, label: m })) })
        : field({ label: t("admin.fleet.gpu_model"), name: "gpu_model", required: true, attrs: { maxlength: 64 } }),
      field({ label: t("admin.fleet.gpu_count"), name: "gpu_count", type: "number", value: 8, required: true,
              attrs: { min: 1, max: 64, step: 1, inputmode: "numeric" } }),
      field({ label: t("admin.fleet.interconnect"), name: "interconnect", hint: t("admin.fleet.interconnect_hint"),
              options: ["auto", "nvswitch", "nvlink-pairs", "pcie"].map((v) => ({ value: v === "auto" ? "" : v,
                                                                                  label: t(`admin.fleet.ic.${v}`) })) })),
    h("button", { type: "submit", class: "primary", disabled: !sites.length }, t("admin.fleet.add_submit")),
    result);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    busy(form.querySelector("button[type=submit]"), async () => {
      const hostname = String(data.get("hostname") || "").trim();
      if (!hostname) throw clientError("hostname", t("admin.error.required"));
      const body = {
        site_id: String(data.get("site_id") || ""),
        hostname,
        gpu_model: String(data.get("gpu_model") || "").trim(),
        gpu_count: wholeNumber(data.get("gpu_count"), "gpu_count", 1, 64),
      };
      if (!body.gpu_model) throw clientError("gpu_model", t("admin.error.required"));
      if (data.get("interconnect")) body.interconnect = String(data.get("interconnect"));
      const created = await post("/v1/admin/nodes", body, { idempotencyKey: newIdempotencyKey() });
      const node = created.node;
      const heading = h("h3", { tabindex: "-1" }, t("admin.fleet.token_title", { hostname: node.hostname }));
      result.replaceChildren(h("div", { class: "alert info admin-token" },
        heading,
        h("p", {}, t("admin.fleet.token_once", { time: dateTime(created.enrollment_token_expires_at) })),
        secretBox(created.enrollment_token),
        h("p", {}, t("admin.fleet.token_command")),
        h("pre", { class: "copyable" },
          `gpurent-agent enroll --url https://CONTROL-PLANE:8443 --token ${created.enrollment_token} \\\n` +
          "  --ca-file agent-ca.crt --state-dir /var/lib/gpurent-agent"),
        h("p", {}, h("a", { href: `#/admin/nodes/${encodeURIComponent(node.id)}` }, t("admin.fleet.open_node")))));
      form.querySelector("[name=hostname]").value = "";
      heading.focus();
      toast(t("admin.fleet.node_added", { hostname: node.hostname }));
      added();
    }, form);
  });
  return {
    element: form,
    // New options for the site list; `choose` selects one, else the choice stays.
    refreshSites(choose = null) {
      const select = siteField.querySelector("select");
      const kept = select.value;
      select.replaceChildren(...siteOptions().map((o) => h("option", { value: o.value }, o.label)));
      select.value = choose || kept;
      if (!select.value && sites.length) select.value = sites[0].id;
      if (sites.length) needSite.remove();
      form.querySelector("button[type=submit]").disabled = !sites.length;
    },
  };
}

function siteAddForm(sites, added) {
  let zones = [];
  try {
    zones = Intl.supportedValuesOf("timeZone");
  } catch (err) {
    zones = [];
  }
  const list = h("datalist", { id: "admin-timezones" }, zones.map((z) => h("option", { value: z })));
  const form = h("form", { class: "card", novalidate: true, "aria-labelledby": "admin-add-site" },
    h("h2", { id: "admin-add-site" }, t("admin.fleet.add_site")),
    h("div", { class: "admin-form-grid" },
      field({ label: t("admin.fleet.site_name"), name: "name", required: true, attrs: { maxlength: 100 } }),
      field({ label: t("admin.fleet.region"), name: "region", required: true, attrs: { maxlength: 100 } }),
      field({ label: t("admin.fleet.timezone"), name: "timezone", required: true, hint: t("admin.fleet.timezone_hint"),
              value: sites.length ? "" : Intl.DateTimeFormat().resolvedOptions().timeZone || "",
              attrs: { list: "admin-timezones", autocomplete: "off", spellcheck: "false", maxlength: 64 } })),
    list,
    h("button", { type: "submit" }, t("admin.fleet.add_site_submit")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    busy(form.querySelector("button[type=submit]"), async () => {
      const body = {};
      for (const name of ["name", "region", "timezone"]) {
        body[name] = String(data.get(name) || "").trim();
        if (!body[name]) throw clientError(name, t("admin.error.required"));
      }
      const site = await post("/v1/admin/sites", body, { idempotencyKey: newIdempotencyKey() });
      form.reset();
      added(site);
      toast(t("admin.fleet.site_added", { name: site.name }));
    }, form);
  });
  return form;
}
