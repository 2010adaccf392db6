// Administration: every organisation with its members, guardrails and balance (one balance
// request per org shown, a few at a time), and crediting one: a manual top-up or a goodwill
// credit, POST /v1/admin/orgs/{id}/credit {amount, reason, kind}.
import { get, newIdempotencyKey, post } from "../../api.js";
import { dateTime, money, number, strings, t } from "../../i18n.js";
import { busy, field, h, page, replace, toast } from "../../ui.js";
import { amountError, clientError, dataTable, idCode, parseAmount, pointAt, section } from "./fleet.js";

strings({
  en: {
    "admin.orgs.title": "Organisations", "admin.orgs.list": "All organisations",
    "admin.orgs.caption": "Organisations with their members, limits and balance, oldest first",
    "admin.orgs.none": "No organisations yet.", "admin.orgs.name": "Organisation", "admin.orgs.members": "Members",
    "admin.orgs.limits": "Limits", "admin.orgs.balance": "Balance", "admin.orgs.held": "Held",
    "admin.orgs.available": "Available", "admin.orgs.credit_limit": "Credit limit", "admin.orgs.created": "Created",
    "admin.orgs.max_gpus": "at most {n} GPUs at once", "admin.orgs.max_days": "at most {n} days a rental",
    "admin.orgs.spend": "at most {amount} a month", "admin.orgs.no_limits": "none",
    "admin.orgs.loading_balance": "loading…", "admin.orgs.balance_failed": "unavailable",
    "admin.orgs.credit_row": "Credit {name}", "admin.orgs.credit_button": "Credit…",
    "admin.orgs.credit": "Credit an organisation",
    "admin.orgs.credit_intro": "A manual top-up (money received outside the payment provider) or a goodwill credit. It is recorded in the ledger and the audit log.",
    "admin.orgs.org": "Organisation", "admin.orgs.amount": "Amount", "admin.orgs.amount_hint": "In {currency}, such as 15000 or 15000.50.",
    "admin.orgs.kind": "Kind", "admin.orgs.kind.top_up": "Top-up (money received)", "admin.orgs.kind.goodwill": "Goodwill credit",
    "admin.orgs.reason": "Reason", "admin.orgs.reason_hint": "Such as the bank transfer's reference; kept in the audit log.",
    "admin.orgs.submit": "Credit",
    "admin.orgs.credited": "{amount} credited to {name}; the balance is now {balance}.",
    "admin.orgs.audit_link": "audit log",
  },
  ru: {
    "admin.orgs.title": "Организации", "admin.orgs.list": "Все организации",
    "admin.orgs.caption": "Организации с участниками, лимитами и балансом, старые сверху",
    "admin.orgs.none": "Организаций пока нет.", "admin.orgs.name": "Организация", "admin.orgs.members": "Участники",
    "admin.orgs.limits": "Лимиты", "admin.orgs.balance": "Баланс", "admin.orgs.held": "Заблокировано",
    "admin.orgs.available": "Доступно", "admin.orgs.credit_limit": "Кредитный лимит", "admin.orgs.created": "Создана",
    "admin.orgs.max_gpus": "не больше {n} GPU одновременно", "admin.orgs.max_days": "не больше {n} дней на аренду",
    "admin.orgs.spend": "не больше {amount} в месяц", "admin.orgs.no_limits": "нет",
    "admin.orgs.loading_balance": "загрузка…", "admin.orgs.balance_failed": "недоступен",
    "admin.orgs.credit_row": "Зачислить: {name}", "admin.orgs.credit_button": "Зачислить…",
    "admin.orgs.credit": "Зачисление организации",
    "admin.orgs.credit_intro": "Ручное пополнение (деньги получены не через платёжного провайдера) или компенсация. Записывается в журнал операций и журнал аудита.",
    "admin.orgs.org": "Организация", "admin.orgs.amount": "Сумма", "admin.orgs.amount_hint": "В {currency}, например 15000 или 15000,50.",
    "admin.orgs.kind": "Вид", "admin.orgs.kind.top_up": "Пополнение (деньги получены)", "admin.orgs.kind.goodwill": "Компенсация",
    "admin.orgs.reason": "Основание", "admin.orgs.reason_hint": "Например, номер банковского перевода; сохраняется в журнале аудита.",
    "admin.orgs.submit": "Зачислить",
    "admin.orgs.credited": "{name}: зачислено {amount}; баланс теперь {balance}.",
    "admin.orgs.audit_link": "журнал аудита",
  },
});

const PAGE = 50;

export async function render(ctx) {
  const controller = new AbortController();
  const { signal } = controller;
  ctx.onLeave(() => controller.abort());
  const first = await get(`/v1/admin/orgs?limit=${PAGE}`, { signal });
  const orgs = [...first.items];
  let cursor = first.next_cursor || null;
  const balances = new Map();  // org id → balances, or null when not known
  const cells = new Map();     // org id → {key: element} of the balance cells on screen
  let currency = null;

  const listHolder = h("div", {});
  const more = h("button", { type: "button" }, t("admin.load_more"));
  const hint = h("span", {});

  const moneyCell = (o, key) => {
    const el = h("span", {});
    if (!cells.has(o.id)) cells.set(o.id, {});
    cells.get(o.id)[key] = el;
    paint(o.id);
    return el;
  };

  function paint(id) {
    const b = balances.get(id);
    for (const [key, el] of Object.entries(cells.get(id) || {})) {
      if (b === undefined) el.replaceChildren(h("span", { class: "admin-muted" }, t("admin.orgs.loading_balance")));
      else if (b === null) el.replaceChildren(h("span", { class: "admin-muted" }, t("admin.orgs.balance_failed")));
      else el.replaceChildren(h("span", { class: b[key].amount_minor < 0 ? "admin-bad" : "" }, money(b[key])));
    }
  }

  const limits = (o) => {
    const list = [
      o.max_concurrent_gpus ? t("admin.orgs.max_gpus", { n: o.max_concurrent_gpus }) : null,
      o.max_days ? t("admin.orgs.max_days", { n: o.max_days }) : null,
      o.spend_limit_minor !== null && o.spend_limit_minor !== undefined
        ? t("admin.orgs.spend", { amount: currency ? money({ amount_minor: o.spend_limit_minor, currency })
                                                    : number(o.spend_limit_minor / 100, 2) }) : null,
    ].filter(Boolean);
    return list.length ? h("ul", { class: "admin-lines" }, list.map((x) => h("li", {}, x))) : t("admin.orgs.no_limits");
  };

  function draw() {
    // A redraw keeps keyboard focus on the row's button it was on.
    const focusedRow = listHolder.contains(document.activeElement) ? document.activeElement.closest("tr")?.dataset.key : null;
    cells.clear();
    const columns = [
      { label: t("admin.orgs.name"), cell: (o) => [h("span", { class: "admin-strong" }, o.name), h("br"), idCode(o.id)] },
      { label: t("admin.orgs.members"), num: true, cell: (o) => number(o.member_count) },
      { label: t("admin.orgs.limits"), cell: limits },
      { label: t("admin.orgs.balance"), num: true, cell: (o) => moneyCell(o, "balance") },
      { label: t("admin.orgs.held"), num: true, cell: (o) => moneyCell(o, "held") },
      { label: t("admin.orgs.available"), num: true, cell: (o) => moneyCell(o, "available") },
      { label: t("admin.orgs.credit_limit"), num: true, cell: (o) => moneyCell(o, "credit_limit") },
      { label: t("admin.orgs.created"), cell: (o) => [dateTime(o.created_at), h("br"),
        h("a", { href: `#/admin/audit?org_id=${encodeURIComponent(o.id)}`, class: "admin-small" }, t("admin.orgs.audit_link"))] },
      { label: h("span", { class: "visually-hidden" }, t("admin.orgs.credit")), cell: (o) => {
        const b = h("button", { type: "button", class: "admin-small-button", "aria-label": t("admin.orgs.credit_row", { name: o.name }) },
          t("admin.orgs.credit_button"));
        b.addEventListener("click", () => {
          orgSelect.value = o.id;
          form.scrollIntoView({ block: "start" });
          form.querySelector("[name=amount]").focus();
        });
        return b;
      } },
    ];
    replace(listHolder, dataTable({ caption: t("admin.orgs.caption"), columns, rows: orgs, empty: t("admin.orgs.none"),
                                           rowKey: (o) => o.id }),
      cursor ? more : null);
    if (focusedRow) listHolder.querySelector(`tr[data-key="${CSS.escape(focusedRow)}"] button`)?.focus();
  }

  // The list carries each org's balances (null: the server did not say).
  function takeBalances(list) {
    for (const o of list) {
      balances.set(o.id, o.balance || null);
      if (!currency && o.balance) {
        currency = o.balance.balance.currency;
        hint.textContent = t("admin.orgs.amount_hint", { currency });
      }
    }
  }

  more.addEventListener("click", () => busy(more, async () => {
    const next = await get(`/v1/admin/orgs?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`, { signal });
    const before = orgs.length;
    orgs.push(...next.items);
    cursor = next.next_cursor || null;
    takeBalances(next.items);
    refreshOptions();
    draw();
    listHolder.querySelectorAll("tbody tr")[before]?.querySelector("button")?.focus();
  }));

  // The credit form: one Idempotency-Key per intended credit, so a retry after a lost answer
  // never credits twice; any change to the form is a new intent.
  let idempotencyKey = newIdempotencyKey();
  const orgField = field({ label: t("admin.orgs.org"), name: "org_id", required: true,
                           options: orgs.map((o) => ({ value: o.id, label: `${o.name} (${o.id})` })) });
  const orgSelect = orgField.querySelector("select");
  const refreshOptions = () => {
    const chosen = orgSelect.value;
    orgSelect.replaceChildren(...orgs.map((o) => h("option", { value: o.id }, `${o.name} (${o.id})`)));
    orgSelect.value = chosen;
  };
  const amountField = field({ label: t("admin.orgs.amount"), name: "amount", required: true,
                              attrs: { inputmode: "decimal", autocomplete: "off" } });
  // The hint names the currency once the first balance says which it is.
  const amountInput = amountField.querySelector("input");
  const hintId = `${amountInput.id}-currency`;
  hint.id = hintId;
  hint.className = "hint";
  amountInput.setAttribute("aria-describedby", `${hintId} ${amountInput.getAttribute("aria-describedby")}`);
  amountInput.after(hint);

  const form = h("form", { class: "card", novalidate: true, "aria-labelledby": "admin-orgs-credit" },
    h("h2", { id: "admin-orgs-credit" }, t("admin.orgs.credit")),
    h("p", {}, t("admin.orgs.credit_intro")),
    h("div", { class: "admin-form-grid" },
      orgField,
      amountField,
      field({ label: t("admin.orgs.kind"), name: "kind", value: "top_up",
              options: ["top_up", "goodwill"].map((k) => ({ value: k, label: t(`admin.orgs.kind.${k}`) })) }),
      field({ label: t("admin.orgs.reason"), name: "reason", required: true, hint: t("admin.orgs.reason_hint"),
              attrs: { maxlength: 500 } })),
    h("button", { type: "submit", class: "primary", disabled: !orgs.length }, t("admin.orgs.submit")));
  form.addEventListener("input", () => (idempotencyKey = newIdempotencyKey()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    busy(form.querySelector("button[type=submit]"), async () => {
      const orgId = String(data.get("org_id") || "");
      const cur = currency || "RUB";
      const amount = parseAmount(data.get("amount") || "", cur);
      if (amount === null || amount <= 0) throw amountError("amount", cur);
      const reason = String(data.get("reason") || "").trim();
      if (!reason) throw clientError("reason", t("admin.error.required"));
      let result;
      try {
        result = await post(`/v1/admin/orgs/${encodeURIComponent(orgId)}/credit`,
          { amount: { amount_minor: amount, currency: cur }, reason, kind: String(data.get("kind") || "top_up") },
          { idempotencyKey });
      } catch (err) {
        if (err.field && err.field.startsWith("amount")) throw pointAt(err, "amount");
        if (err.code === "not_found") throw pointAt(err, "org_id");
        throw err;
      }
      idempotencyKey = newIdempotencyKey();
      balances.set(orgId, result);
      paint(orgId);
      const org = orgs.find((o) => o.id === orgId);
      toast(t("admin.orgs.credited", { amount: money({ amount_minor: amount, currency: cur }), name: org ? org.name : orgId,
                                       balance: money(result.balance) }));
      form.querySelector("[name=amount]").value = "";
      form.querySelector("[name=reason]").value = "";
    }, form);
  });

  takeBalances(orgs);
  draw();
  return page(t("admin.orgs.title"), section("admin-orgs-list", t("admin.orgs.list"), listHolder), form);
}
