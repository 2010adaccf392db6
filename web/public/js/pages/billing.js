// Billing: the balance (what the org has, what is held for booked days, what it can book
// with), the ledger's transactions and the monthly invoices, each invoice's lines and its
// CSV. `#/billing?invoice=inv_…` opens one invoice.
import { get } from "../api.js";
import { date, dateTime, locale, money, number, strings, t } from "../i18n.js";
import { badge, busy, describeError, h, page, table } from "../ui.js";
import { stackable } from "../rows.js";

strings({
  en: {
    "billing.title": "Billing",
    "billing.no_access": "Your role cannot see billing. Owners, admins and members with the billing role can.",
    "billing.balance_title": "Balance",
    "billing.balance": "Balance", "billing.held": "Held for booked days", "billing.available": "Available to book with",
    "billing.credit_limit": "Credit limit", "billing.spendable": "Can be spent, with credit",
    "billing.balance_note": "When you book, the price of the booked days is held; each day is charged from the held money as the rental runs, and what is left is released when a rental ends early or is cancelled.",
    "billing.tx_title": "Transactions", "billing.tx_caption": "Transactions, newest first",
    "billing.tx_none": "No transactions yet.",
    "billing.col.when": "Date", "billing.col.kind": "Type", "billing.col.description": "Description",
    "billing.col.amount": "Balance change", "billing.col.available": "Available change",
    "billing.kind.top_up": "Top-up", "billing.kind.credit": "Credit", "billing.kind.refund": "Refund",
    "billing.kind.hold": "Held for a booking", "billing.kind.release": "Hold released",
    "billing.kind.capture": "Day charged", "billing.kind.sla_credit": "SLA credit", "billing.kind.reversal": "Reversal",
    "billing.rental": "Rental {id}",
    "billing.more": "Show more", "billing.shown": { one: "Showing {n} item.", other: "Showing {n} items." },
    "billing.all_shown": { one: "All {n} item shown.", other: "All {n} items shown." },
    "billing.inv_title": "Invoices", "billing.inv_caption": "Invoices, newest month first",
    "billing.inv_none": "No invoices yet. The first appears when a rental day is charged.",
    "billing.col.number": "Number", "billing.col.period": "Period", "billing.col.status": "Status",
    "billing.col.total": "Total", "billing.col.actions": "Actions",
    "billing.no_number": "No number yet", "billing.credit_note": "Credit note",
    "billing.view": "View lines", "billing.view_label": "View lines of invoice {number}",
    "billing.csv": "CSV", "billing.csv_label": "Download invoice {number} as CSV",
    "billing.download_csv": "Download CSV",
    "billing.invoice": "Invoice {number}", "billing.draft_invoice": "Draft invoice for {period}",
    "billing.credit_note_title": "Credit note {number}",
    "billing.draft_note": "A draft grows as rental days are charged. It is issued with a number after the month ends.",
    "billing.f.status": "Status", "billing.f.period": "Period", "billing.f.created": "Created", "billing.f.issued": "Issued",
    "billing.f.corrects": "Corrects", "billing.not_issued": "Not yet",
    "billing.open_corrected": "Open the corrected invoice",
    "billing.lines_caption": "Lines of the invoice",
    "billing.lines_none": "No lines.",
    "billing.col.line": "Description", "billing.col.rental": "Rental", "billing.col.days": "Days",
    "billing.col.unit": "Price per day", "billing.col.net": "Net", "billing.col.tax": "VAT", "billing.col.line_amount": "Amount",
    "billing.col.energy": "Energy, kWh",
    "billing.line.sla_credit": "SLA credit",
    "billing.subtotal": "Subtotal (net)", "billing.tax": "VAT {rate}%", "billing.total": "Total",
    "billing.close": "Close invoice",
    "billing.invoice_missing": "This invoice does not exist or belongs to another organisation.",
  },
  ru: {
    "billing.title": "Оплата",
    "billing.no_access": "Ваша роль не позволяет видеть оплату. Это могут владельцы, администраторы и участники с ролью «Бухгалтер».",
    "billing.balance_title": "Баланс",
    "billing.balance": "Баланс", "billing.held": "Заблокировано под брони", "billing.available": "Доступно для бронирования",
    "billing.credit_limit": "Кредитный лимит", "billing.spendable": "Можно потратить с учётом кредита",
    "billing.balance_note": "При бронировании стоимость забронированных дней блокируется; каждый день аренды списывается из заблокированной суммы, а остаток разблокируется, если аренда завершена досрочно или отменена.",
    "billing.tx_title": "Операции", "billing.tx_caption": "Операции, сначала новые",
    "billing.tx_none": "Операций пока нет.",
    "billing.col.when": "Дата", "billing.col.kind": "Тип", "billing.col.description": "Описание",
    "billing.col.amount": "Изменение баланса", "billing.col.available": "Изменение доступного",
    "billing.kind.top_up": "Пополнение", "billing.kind.credit": "Зачисление", "billing.kind.refund": "Возврат",
    "billing.kind.hold": "Блокировка под бронь", "billing.kind.release": "Разблокировка",
    "billing.kind.capture": "Списание за день", "billing.kind.sla_credit": "Компенсация по SLA", "billing.kind.reversal": "Сторно",
    "billing.rental": "Аренда {id}",
    "billing.more": "Показать ещё",
    "billing.shown": { one: "Показана {n} запись.", few: "Показано {n} записи.", many: "Показано {n} записей.", other: "Показано {n} записи." },
    "billing.all_shown": { one: "Показана вся {n} запись.", few: "Показаны все {n} записи.", many: "Показаны все {n} записей.", other: "Показаны все {n} записи." },
    "billing.inv_title": "Счета", "billing.inv_caption": "Счета, сначала последний месяц",
    "billing.inv_none": "Счетов пока нет. Первый появится, когда будет списан первый день аренды.",
    "billing.col.number": "Номер", "billing.col.period": "Период", "billing.col.status": "Статус",
    "billing.col.total": "Итого", "billing.col.actions": "Действия",
    "billing.no_number": "Номера ещё нет", "billing.credit_note": "Корректировочный документ",
    "billing.view": "Показать строки", "billing.view_label": "Показать строки счёта {number}",
    "billing.csv": "CSV", "billing.csv_label": "Скачать счёт {number} в CSV",
    "billing.download_csv": "Скачать CSV",
    "billing.invoice": "Счёт {number}", "billing.draft_invoice": "Черновик счёта за {period}",
    "billing.credit_note_title": "Корректировочный документ {number}",
    "billing.draft_note": "Черновик пополняется по мере списания дней аренды. Номер счёт получает после окончания месяца.",
    "billing.f.status": "Статус", "billing.f.period": "Период", "billing.f.created": "Создан", "billing.f.issued": "Выставлен",
    "billing.f.corrects": "Исправляет", "billing.not_issued": "Ещё нет",
    "billing.open_corrected": "Открыть исправляемый счёт",
    "billing.lines_caption": "Строки счёта",
    "billing.lines_none": "Строк нет.",
    "billing.col.line": "Описание", "billing.col.rental": "Аренда", "billing.col.days": "Дней",
    "billing.col.unit": "Цена за день", "billing.col.net": "Без НДС", "billing.col.tax": "НДС", "billing.col.line_amount": "Сумма",
    "billing.col.energy": "Энергия, кВт·ч",
    "billing.line.sla_credit": "Компенсация по SLA",
    "billing.subtotal": "Итого без НДС", "billing.tax": "НДС {rate}%", "billing.total": "Всего",
    "billing.close": "Закрыть счёт",
    "billing.invoice_missing": "Такого счёта нет или он принадлежит другой организации.",
  },
});

const TX_PAGE = 25;
const INVOICE_PAGE = 12;

export async function render(ctx) {
  if (!ctx.session.can("billing:read")) {
    return page(t("billing.title"), h("p", { class: "alert info" }, t("billing.no_access")));
  }

  const detail = h("div", { id: "invoice-detail", class: "invoice-detail" });
  const invoiceHeading = h("h2", { id: "billing-invoices", tabindex: "-1" }, t("billing.inv_title"));
  const txHeading = h("h2", { id: "billing-transactions", tabindex: "-1" }, t("billing.tx_title"));

  const openers = new Map();  // invoice id → its "View lines" button, where Close returns focus

  async function openInvoice(invoiceOrId, { focus = true } = {}) {
    let invoice = invoiceOrId;
    if (typeof invoiceOrId === "string") {
      try {
        invoice = await get(`/v1/invoices/${encodeURIComponent(invoiceOrId)}`);
      } catch (err) {
        if (ctx.stale()) return;
        detail.replaceChildren(h("p", { class: "alert", role: "alert" },
          err.status === 404 ? t("billing.invoice_missing") : describeError(err)));
        return;
      }
    }
    if (ctx.stale()) return;
    for (const [id, button] of openers) button.setAttribute("aria-expanded", String(id === invoice.id));
    detail.replaceChildren(...invoiceDetail(invoice, { close: closeInvoice, open: openInvoice }));
    // The address names the open invoice, so a reload or a shared link shows it again; no
    // hashchange, so the page is not rebuilt.
    history.replaceState(null, "", `#/billing?invoice=${encodeURIComponent(invoice.id)}`);
    if (focus) detail.querySelector("h2").focus();
  }

  function closeInvoice(id) {
    detail.replaceChildren();
    history.replaceState(null, "", "#/billing");
    const button = openers.get(id);
    if (button) {
      button.setAttribute("aria-expanded", "false");
      button.focus();
    } else {
      invoiceHeading.focus();
    }
  }

  const txColumns = [
    { label: t("billing.col.when"), cell: (r) => h("time", { datetime: r.at }, dateTime(r.at)) },
    { label: t("billing.col.kind"), cell: (r) => kindName(r.kind) },
    { label: t("billing.col.description"), cell: (r) => [r.description,
      r.rental_id ? [h("br"), h("a", { href: `#/rentals/${encodeURIComponent(r.rental_id)}` }, t("billing.rental", { id: r.rental_id }))] : null] },
    { label: t("billing.col.amount"), num: true, cell: (r) => signed(r.amount) },
    { label: t("billing.col.available"), num: true, cell: (r) => signed(r.available_change) },
  ];

  const invoiceColumns = [
    { label: t("billing.col.number"), cell: (i) => [i.number ? h("strong", {}, i.number) : h("span", { class: "muted" }, t("billing.no_number")),
      i.kind === "credit_note" ? [h("br"), h("span", { class: "muted" }, t("billing.credit_note"))] : null] },
    { label: t("billing.col.period"), cell: (i) => periodText(i.period) },
    { label: t("billing.col.status"), cell: (i) => badge(i.status) },
    { label: t("billing.col.total"), num: true, cell: (i) => money(i.total) },
    { label: t("billing.col.actions"), cell: (i) => {
      const name = i.number || periodText(i.period);
      const view = h("button", { type: "button", "aria-expanded": "false", "aria-controls": "invoice-detail",
                                 "aria-label": t("billing.view_label", { number: name }) }, t("billing.view"));
      // A second press closes the lines it opened (aria-expanded says which).
      view.addEventListener("click", () => (view.getAttribute("aria-expanded") === "true" ? closeInvoice(i.id) : openInvoice(i)));
      openers.set(i.id, view);
      return h("div", { class: "row-actions" }, view, " ", csvLink(i, t("billing.csv"), t("billing.csv_label", { number: name })));
    } },
  ];

  const [balance, transactions, invoices] = await Promise.all([
    get("/v1/billing/balance"),
    pagedTable({ path: "/v1/billing/transactions", limit: TX_PAGE, caption: t("billing.tx_caption"),
                 columns: txColumns, empty: t("billing.tx_none"), heading: txHeading }),
    pagedTable({ path: "/v1/invoices", limit: INVOICE_PAGE, caption: t("billing.inv_caption"),
                 columns: invoiceColumns, empty: t("billing.inv_none"), heading: invoiceHeading }),
  ]);
  if (ctx.stale()) return [];

  const wanted = ctx.query.get("invoice");
  if (wanted) await openInvoice(wanted, { focus: false });

  return page(t("billing.title"),
    h("h2", {}, t("billing.balance_title")),
    balanceFigures(balance),
    h("p", { class: "hint" }, t("billing.balance_note")),
    invoiceHeading, invoices, detail,
    txHeading, transactions);
}

function balanceFigures(b) {
  const figures = [
    ["billing.balance", b.balance, "balance"],
    ["billing.held", b.held, "held"],
    ["billing.available", b.available, "available"],
  ];
  if (b.credit_limit && b.credit_limit.amount_minor > 0) {
    figures.push(["billing.credit_limit", b.credit_limit, "credit-limit"], ["billing.spendable", b.spendable, "spendable"]);
  }
  return h("dl", { class: "stats figures" }, figures.map(([key, amount, id]) =>
    h("div", {}, h("dt", {}, t(key)), h("dd", { "data-testid": id }, money(amount)))));
}

function invoiceDetail(invoice, { close, open }) {
  const title = invoice.kind === "credit_note"
    ? t("billing.credit_note_title", { number: invoice.number || t("billing.no_number") })
    : invoice.number ? t("billing.invoice", { number: invoice.number })
      : t("billing.draft_invoice", { period: periodText(invoice.period) });
  const facts = [
    [t("billing.f.status"), badge(invoice.status)],
    [t("billing.f.period"), periodText(invoice.period)],
    [t("billing.f.created"), dateTime(invoice.created_at)],
    [t("billing.f.issued"), invoice.issued_at ? dateTime(invoice.issued_at) : t("billing.not_issued")],
  ];
  if (invoice.corrects_invoice_id) {
    const button = h("button", { type: "button", class: "link-button" }, t("billing.open_corrected"));
    button.addEventListener("click", () => open(invoice.corrects_invoice_id));
    facts.push([t("billing.f.corrects"), button]);
  }
  const lineColumns = [
    { label: t("billing.col.line"), cell: (l) => [l.description,
      l.kind === "sla_credit" ? [h("br"), h("span", { class: "muted" }, t("billing.line.sla_credit"))] : null] },
    { label: t("billing.col.rental"), cell: (l) => (l.rental_id
      ? h("a", { href: `#/rentals/${encodeURIComponent(l.rental_id)}` }, h("code", {}, l.rental_id)) : "—") },
    { label: t("billing.col.days"), num: true, cell: (l) => (l.kind === "rental_days" ? number(l.days) : "—") },
    { label: t("billing.col.unit"), num: true, cell: (l) => (l.kind === "rental_days" ? money(l.unit_price) : "—") },
    { label: t("billing.col.net"), num: true, cell: (l) => money(l.amount_net) },
    { label: t("billing.col.tax"), num: true, cell: (l) => money(l.tax) },
    { label: t("billing.col.line_amount"), num: true, cell: (l) => money(l.amount) },
    // What the rental's GPUs drew in the month, from their telemetry: a detail, not charged.
    { label: t("billing.col.energy"), num: true, cell: (l) => (typeof l.energy_kwh === "number"
      ? l.energy_kwh.toLocaleString(document.documentElement.lang || "en", { maximumSignificantDigits: 3 }) : "—") },
  ];
  const rate = Number.parseFloat(invoice.vat_rate_percent);
  const closeButton = h("button", { type: "button" }, t("billing.close"));
  closeButton.addEventListener("click", () => close(invoice.id));
  return [
    h("div", { class: "card" },
      h("h2", { tabindex: "-1" }, title),
      invoice.status === "draft" ? h("p", { class: "hint" }, t("billing.draft_note")) : null,
      h("dl", { class: "facts" }, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      numbered(stackable(table(t("billing.lines_caption"), lineColumns, invoice.lines || [], t("billing.lines_none"))), lineColumns),
      h("dl", { class: "totals" },
        h("div", {}, h("dt", {}, t("billing.subtotal")), h("dd", {}, money(invoice.subtotal))),
        h("div", {}, h("dt", {}, t("billing.tax", { rate: Number.isFinite(rate) ? number(rate, 2) : invoice.vat_rate_percent })),
          h("dd", {}, money(invoice.tax))),
        h("div", { class: "grand" }, h("dt", {}, t("billing.total")), h("dd", { "data-testid": "invoice-total" }, money(invoice.total)))),
      h("div", { class: "toolbar" }, csvLink(invoice, t("billing.download_csv"), null, "button"), closeButton)),
  ];
}

// A plain link: the session cookie authorises the GET, and the server names the file.
function csvLink(invoice, text, label, cls = null) {
  return h("a", { href: `/v1/invoices/${encodeURIComponent(invoice.id)}?format=csv`, download: "",
                  class: cls, "aria-label": label }, text);
}

// A list that grows page by page (next_cursor) under a "Show more" button.
async function pagedTable({ path, limit, caption, columns, empty, heading }) {
  const wrap = h("div", { class: "paged" });
  const status = h("p", { class: "hint", role: "status" });
  const more = h("button", { type: "button" }, t("billing.more"));
  const node = h("div", {}, wrap, h("div", { class: "toolbar more" }, status, more));
  let cursor = null;
  let shown = 0;
  let pages = 0;
  let tbody = null;

  async function load() {
    const sep = path.includes("?") ? "&" : "?";
    const result = await get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    const items = result.items || [];
    cursor = result.next_cursor || null;
    if (!tbody) {
      const built = numbered(stackable(table(caption, columns, items, empty)), columns);
      wrap.replaceChildren(built);
      tbody = built.querySelector("tbody");
    } else {
      const labels = columns.map((c) => c.label);
      for (const item of items) {
        tbody.append(h("tr", { role: "row" }, columns.map((c, i) =>
          h("td", { role: "cell", class: c.num ? "num" : null, dataset: { label: labels[i] } }, c.cell(item)))));
      }
    }
    shown += items.length;
    pages += 1;
    if (!cursor) more.remove();
    // One page needs no count; after "Show more" the count says what arrived.
    status.textContent = cursor ? t("billing.shown", { n: shown }) : pages > 1 ? t("billing.all_shown", { n: shown }) : "";
  }

  more.addEventListener("click", () => busy(more, async () => {
    await load();
    // The button is gone after the last page: focus goes back to the list's heading.
    if (!more.isConnected) heading.focus();
  }));
  await load();
  return node;
}

function kindName(kind) {
  const key = `billing.kind.${kind}`;
  const text = t(key);
  return text === key ? kind : text;
}

// "+1 000,00 ₽" for money coming in; a minus for money going out; zero plain.
function signed(m) {
  if (!m || typeof m.amount_minor !== "number") return "—";
  const text = money(m);
  if (m.amount_minor > 0) return h("span", { class: "amount in" }, `+${text}`);
  if (m.amount_minor < 0) return h("span", { class: "amount out" }, text);
  return h("span", { class: "amount zero" }, text);
}

// A calendar month's period (start on the 1st, end the next month's 1st, half-open) reads as
// "November 2026"; anything else as a range of the days it covers.
function periodText(period) {
  if (!period || !period.start || !period.end) return "—";
  const [y, m, d] = period.start.split("-").map(Number);
  const [ey, em, ed] = period.end.split("-").map(Number);
  const next = new Date(Date.UTC(y, m, 1));
  if (d === 1 && ed === 1 && ey === next.getUTCFullYear() && em === next.getUTCMonth() + 1) {
    return new Intl.DateTimeFormat(locale(), { month: "long", year: "numeric", timeZone: "UTC" })
      .format(new Date(Date.UTC(y, m - 1, 1)));
  }
  const last = new Date(Date.UTC(ey, em - 1, ed) - 24 * 3600 * 1000).toISOString().slice(0, 10);
  return `${date(period.start)} – ${date(last)}`;
}

// Columns marked `num` align right (amounts, counts).
function numbered(node, columns) {
  const tableEl = node.querySelector ? node.querySelector("table") : null;
  if (!tableEl) return node;
  columns.forEach((c, i) => {
    if (!c.num) return;
    tableEl.tHead.rows[0].cells[i].classList.add("num");
    for (const row of tableEl.tBodies[0].rows) row.cells[i].classList.add("num");
  });
  return node;
}

