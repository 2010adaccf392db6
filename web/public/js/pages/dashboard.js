// The customer's start page: money, what runs and what is coming, and what needs attention.
import { get } from "../api.js";
import { strings, t, money } from "../i18n.js";
import { h, page, table } from "../ui.js";
import { columns, title } from "../rentals-view.js";

strings({
  en: { "dash.title": "Dashboard", "dash.balance": "Balance", "dash.held": "Held for bookings",
        "dash.available": "Available", "dash.running": "Active and upcoming rentals",
        "dash.none": "Nothing running or booked.", "dash.book": "Book GPUs",
        "dash.alerts": "Needs attention",
        "dash.alert.interrupted": "{name} was interrupted by a hardware fault; the lost hours are credited to your balance.",
        "dash.alert.failed": "{name} could not be prepared and was not charged.",
        "dash.alert.low": "Your available balance is low.",
        "dash.live_caption": "Active and upcoming rentals" },
  ru: { "dash.title": "Обзор", "dash.balance": "Баланс", "dash.held": "Заблокировано под брони",
        "dash.available": "Доступно", "dash.running": "Активные и предстоящие аренды",
        "dash.none": "Ничего не запущено и не забронировано.", "dash.book": "Арендовать GPU",
        "dash.alerts": "Требует внимания",
        "dash.alert.interrupted": "{name} прервана из-за сбоя оборудования; потерянные часы возвращены на баланс.",
        "dash.alert.failed": "{name} не удалось подготовить; оплата не списана.",
        "dash.alert.low": "Доступный баланс на исходе.",
        "dash.live_caption": "Активные и предстоящие аренды" },
});

const WEEK_MS = 7 * 24 * 3600 * 1000;

export async function render(ctx) {
  const [balance, rentals] = await Promise.all([
    ctx.session.can("billing:read") ? get("/v1/billing/balance") : null,
    ctx.session.can("rentals:read") ? get("/v1/rentals?limit=100") : { items: [] },
  ]);
  const live = rentals.items.filter((r) => !r.final);
  const recent = (r) => Date.now() - new Date(r.state_changed_at || r.created_at).getTime() < WEEK_MS;
  const alerts = rentals.items
    .filter((r) => (r.state === "interrupted" || r.state === "failed") && recent(r))
    .map((r) => h("li", {}, h("a", { href: `#/rentals/${encodeURIComponent(r.id)}` },
      t(`dash.alert.${r.state}`, { name: title(r) }))));
  if (balance && balance.available.amount_minor <= 0) alerts.push(h("li", {}, h("a", { href: "#/billing" }, t("dash.alert.low"))));

  return page(t("dash.title"),
    alerts.length ? h("section", { class: "alert warn", "aria-labelledby": "dash-alerts" },
      h("h2", { id: "dash-alerts" }, t("dash.alerts")), h("ul", {}, alerts)) : null,
    balance ? h("dl", { class: "stats" },
      h("div", {}, h("dt", {}, t("dash.balance")), h("dd", { "data-testid": "balance" }, money(balance.balance))),
      h("div", {}, h("dt", {}, t("dash.held")), h("dd", {}, money(balance.held))),
      h("div", {}, h("dt", {}, t("dash.available")), h("dd", {}, money(balance.available)))) : null,
    h("section", { "aria-labelledby": "dash-live" },
      h("h2", { id: "dash-live" }, t("dash.running")),
      table(t("dash.live_caption"), columns(), live, t("dash.none")),
      h("p", {}, h("a", { class: "button primary", href: "#/book" }, t("dash.book")))));
}
