// How a rental is shown wherever it appears: its shape, period, state and price, and the
// steps from booking to ready.
import { strings, t, dateTime, money, date } from "./i18n.js";
import { h, badge } from "./ui.js";

strings({
  en: {
    "rental.shape": "{count}× {model}", "rental.unnamed": "Rental {id}",
    "rental.step.scheduled": "Booked", "rental.step.provisioning": "Preparing the node",
    "rental.step.active": "Ready for SSH", "rental.step.ended": "Ended",
    "rental.days": { one: "{n} day", other: "{n} days" },
    "rental.col.rental": "Rental", "rental.col.gpus": "GPUs", "rental.col.period": "Period",
    "rental.col.state": "State", "rental.col.price": "Total",
  },
  ru: {
    "rental.shape": "{count}× {model}", "rental.unnamed": "Аренда {id}",
    "rental.step.scheduled": "Забронирована", "rental.step.provisioning": "Подготовка узла",
    "rental.step.active": "Готова к SSH", "rental.step.ended": "Завершена",
    "rental.days": { one: "{n} день", few: "{n} дня", many: "{n} дней", other: "{n} дня" },
    "rental.col.rental": "Аренда", "rental.col.gpus": "GPU", "rental.col.period": "Период",
    "rental.col.state": "Состояние", "rental.col.price": "Сумма",
  },
});

// The state filter's choices, in the lifecycle's order (the API's Rental.state enum). What a
// state allows, and whether it is final, the server says on each rental (allowed_actions,
// final, reachable_states).
export const STATES = ["pending", "scheduled", "provisioning", "active", "releasing",
  "ended", "cancelled", "failed", "interrupted"];

export function shape(r) {
  return t("rental.shape", { count: r.gpu_count, model: r.gpu_model });
}

export function title(r) {
  return r.name || t("rental.unnamed", { id: r.id });
}

export function period(r) {
  return `${dateTime(r.period.start)} – ${dateTime(r.period.end)}`;
}

export function days(n) {
  return t("rental.days", { n });
}

export function link(r) {
  return h("a", { href: `#/rentals/${encodeURIComponent(r.id)}` }, title(r));
}


export function columns() {
  return [
    { label: t("rental.col.rental"), cell: link },
    { label: t("rental.col.gpus"), cell: shape },
    { label: t("rental.col.period"), cell: period },
    { label: t("rental.col.state"), cell: (r) => badge(r.state) },
    { label: t("rental.col.price"), cell: (r) => money(r.price.total) },
  ];
}

// Booked → preparing → ready → ended, with the current step marked (aria-current="step").
export function progress(r) {
  const order = ["scheduled", "provisioning", "active", "ended"];
  const at = r.state === "pending" ? -1 : r.state === "releasing" ? 3 : order.indexOf(r.state);
  const failed = ["failed", "cancelled", "interrupted"].includes(r.state);
  return h("ol", { class: `progress${failed ? " broken" : ""}` },
    order.map((step, i) => h("li", {
      class: i < at ? "done" : i === at ? "current" : "",
      "aria-current": i === at ? "step" : false,
    }, t(`rental.step.${step}`))));
}

export { date };
