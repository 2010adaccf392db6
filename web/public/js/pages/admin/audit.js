// Administration: the audit log of every organisation, newest first, with the API's filters
// (organisation, action, acting user, time range) kept in the address so a view can be linked.
import { get } from "../../api.js";
import { dateTime, strings, t } from "../../i18n.js";
import { busy, field, h, page, replace, showError } from "../../ui.js";
import { dataTable, idCode, section } from "./fleet.js";

strings({
  en: {
    "admin.audit.title": "Audit log", "admin.audit.filter": "Filter",
    "admin.audit.org": "Organisation id", "admin.audit.org_hint": "org_…; empty for every organisation.",
    "admin.audit.action": "Action", "admin.audit.action_hint": "Such as billing.credit or node.drain.",
    "admin.audit.actor": "User id", "admin.audit.actor_hint": "usr_…: what one person did.",
    "admin.audit.since": "From", "admin.audit.until": "Until (not included)", "admin.audit.time_hint": "Your local time.",
    "admin.audit.apply": "Apply", "admin.audit.clear": "Clear the filter",
    "admin.audit.entries": "Entries", "admin.audit.caption": "Audit entries, newest first",
    "admin.audit.none": "No entries match.", "admin.audit.when": "When", "admin.audit.who": "Who",
    "admin.audit.target": "Target", "admin.audit.details": "Details", "admin.audit.from": "From",
    "admin.audit.platform": "platform", "admin.audit.system": "system", "admin.audit.token": "token {id}",
    "admin.audit.filter_action": "Only {action}", "admin.audit.filter_org": "Only this organisation",
    "admin.audit.request": "request {id}",
    "admin.audit.shown": { one: "{n} entry shown.", other: "{n} entries shown." },
  },
  ru: {
    "admin.audit.title": "Журнал аудита", "admin.audit.filter": "Отбор",
    "admin.audit.org": "Идентификатор организации", "admin.audit.org_hint": "org_…; пусто — все организации.",
    "admin.audit.action": "Действие", "admin.audit.action_hint": "Например, billing.credit или node.drain.",
    "admin.audit.actor": "Идентификатор пользователя", "admin.audit.actor_hint": "usr_…: что сделал один человек.",
    "admin.audit.since": "С", "admin.audit.until": "До (не включая)", "admin.audit.time_hint": "По вашему местному времени.",
    "admin.audit.apply": "Применить", "admin.audit.clear": "Сбросить отбор",
    "admin.audit.entries": "Записи", "admin.audit.caption": "Записи аудита, новые сверху",
    "admin.audit.none": "Подходящих записей нет.", "admin.audit.when": "Когда", "admin.audit.who": "Кто",
    "admin.audit.target": "Объект", "admin.audit.details": "Подробности", "admin.audit.from": "Откуда",
    "admin.audit.platform": "платформа", "admin.audit.system": "система", "admin.audit.token": "токен {id}",
    "admin.audit.filter_action": "Только {action}", "admin.audit.filter_org": "Только эта организация",
    "admin.audit.request": "запрос {id}",
    "admin.audit.shown": { one: "Показана {n} запись.", few: "Показаны {n} записи.", many: "Показано {n} записей.",
                           other: "Показано {n} записи." },
  },
});

const FILTERS = ["org_id", "action", "actor_user_id", "since", "until"];
// Suggestions for the action filter: the actions the platform writes (any other name works too).
const KNOWN_ACTIONS = [
  "billing.credit", "billing.credit_limit_set", "billing.credit_note", "image.created", "image.deprecated",
  "member.add", "member.remove", "member.role_change", "node.activate", "node.certificate_revoke", "node.created",
  "node.drain", "node.enroll", "node.enrollment_token", "node.maintenance", "node.retire", "node.topology_set",
  "node.updated", "org.guardrails_set", "prices.set", "site.created", "ssh_key.create", "ssh_key.delete",
  "token.create", "token.revoke", "user.login", "user.login_failed", "user.logout", "user.signup",
];
const PAGE = 50;

// RFC 3339 (UTC) ⇄ the value of a datetime-local input, in the viewer's time zone.
function toLocalInput(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function fromLocalInput(value) {
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function details(d) {
  if (!d || (typeof d === "object" && !Object.keys(d).length)) return t("admin.none");
  const text = JSON.stringify(d);
  return h("code", { class: "admin-json" }, text);
}

export async function render(ctx) {
  const controller = new AbortController();
  ctx.onLeave(() => controller.abort());
  const q = ctx.query;
  const linkWith = (changes) => {
    const params = new URLSearchParams();
    for (const name of FILTERS) if (q.get(name)) params.set(name, q.get(name));
    for (const [k, v] of Object.entries(changes)) params.set(k, v);
    return `#/admin/audit?${params}`;
  };

  const form = h("form", { class: "card", novalidate: true, role: "search", "aria-labelledby": "admin-audit-filter" },
    h("h2", { id: "admin-audit-filter" }, t("admin.audit.filter")),
    h("div", { class: "admin-form-grid" },
      field({ label: t("admin.audit.org"), name: "org_id", value: q.get("org_id") || "", hint: t("admin.audit.org_hint"),
              attrs: { spellcheck: "false", autocomplete: "off" } }),
      field({ label: t("admin.audit.action"), name: "action", value: q.get("action") || "", hint: t("admin.audit.action_hint"),
              attrs: { spellcheck: "false", autocomplete: "off", maxlength: 100, list: "admin-audit-actions" } }),
      h("datalist", { id: "admin-audit-actions" }, KNOWN_ACTIONS.map((a) => h("option", { value: a }))),
      field({ label: t("admin.audit.actor"), name: "actor_user_id", value: q.get("actor_user_id") || "",
              hint: t("admin.audit.actor_hint"), attrs: { spellcheck: "false", autocomplete: "off" } }),
      field({ label: t("admin.audit.since"), name: "since", type: "datetime-local", hint: t("admin.audit.time_hint"),
              value: q.get("since") ? toLocalInput(q.get("since")) : "" }),
      field({ label: t("admin.audit.until"), name: "until", type: "datetime-local", hint: t("admin.audit.time_hint"),
              value: q.get("until") ? toLocalInput(q.get("until")) : "" })),
    h("div", { class: "toolbar" },
      h("button", { type: "submit", class: "primary" }, t("admin.audit.apply")),
      h("a", { class: "button", href: "#/admin/audit" }, t("admin.audit.clear"))));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const params = new URLSearchParams();
    for (const name of FILTERS) {
      let value = String(data.get(name) || "").trim();
      if (name === "since" || name === "until") value = value ? fromLocalInput(value) : "";
      if (value) params.set(name, value);
    }
    const query = params.toString();
    ctx.go(query ? `#/admin/audit?${query}` : "#/admin/audit");
  });

  const entries = [];
  const holder = h("div", {});
  const count = h("p", { class: "admin-muted", role: "status" });
  const more = h("button", { type: "button" }, t("admin.load_more"));
  let cursor = null;

  const columns = [
    { label: t("admin.audit.when"), cell: (e) => dateTime(e.at) },
    { label: t("admin.audit.action"), cell: (e) => h("a", { href: linkWith({ action: e.action }),
                                                            title: t("admin.audit.filter_action", { action: e.action }) },
      h("code", {}, e.action)) },
    { label: t("admin.audit.org"), cell: (e) => (e.org_id
      ? h("a", { href: linkWith({ org_id: e.org_id }), title: t("admin.audit.filter_org") }, h("code", { class: "admin-id" }, e.org_id))
      : t("admin.audit.platform")) },
    { label: t("admin.audit.who"), cell: (e) => (e.actor_user_id
      ? [h("a", { href: linkWith({ actor_user_id: e.actor_user_id }) }, h("code", { class: "admin-id" }, e.actor_user_id)),
        e.actor_token_id ? [h("br"), h("span", { class: "admin-small" }, t("admin.audit.token", { id: e.actor_token_id }))] : null]
      : (e.actor_token_id ? t("admin.audit.token", { id: e.actor_token_id }) : t("admin.audit.system"))) },
    { label: t("admin.audit.target"), cell: (e) => (e.target ? (e.target.startsWith("nod_")
      ? h("a", { href: `#/admin/nodes/${encodeURIComponent(e.target)}` }, h("code", { class: "admin-id" }, e.target))
      : idCode(e.target)) : t("admin.none")) },
    { label: t("admin.audit.details"), cell: (e) => details(e.details) },
    { label: t("admin.audit.from"), cell: (e) => [e.ip || t("admin.none"),
      e.request_id ? [h("br"), h("span", { class: "admin-small" }, t("admin.audit.request", { id: e.request_id }))] : null] },
  ];
  // The first column is the time, so the rows are named by it.
  function draw() {
    replace(holder, dataTable({ caption: t("admin.audit.caption"), columns, rows: entries, empty: t("admin.audit.none"),
                                       className: "admin-audit" }),
      cursor ? more : null);
    count.textContent = entries.length ? t("admin.audit.shown", { n: entries.length }) : "";
  }

  async function load() {
    const params = new URLSearchParams();
    for (const name of FILTERS) if (q.get(name)) params.set(name, q.get(name));
    params.set("limit", String(PAGE));
    if (cursor) params.set("cursor", cursor);
    const got = await get(`/v1/admin/audit?${params}`, { signal: controller.signal });
    entries.push(...(got.items || []));
    cursor = got.next_cursor || null;
    draw();
  }

  more.addEventListener("click", () => busy(more, async () => {
    const before = entries.length;
    await load();
    holder.querySelectorAll("tbody tr")[before]?.querySelector("a")?.focus();
  }));

  try {
    await load();
  } catch (err) {
    if (err.name === "AbortError") throw err;
    // A filter the API refuses (an id of the wrong kind, a bad time) is shown beside its field.
    showError(form, err);
    holder.replaceChildren();
  }

  return page(t("admin.audit.title"), form, section("admin-audit-entries", t("admin.audit.entries"), count, holder));
}
