// The org's rentals, newest first, filtered by state.
import { get } from "../api.js";
import { strings, t } from "../i18n.js";
import { h, page, table, field } from "../ui.js";
import { columns, STATES } from "../rentals-view.js";

strings({
  en: { "rentals.title": "Rentals", "rentals.filter": "State", "rentals.all": "All",
        "rentals.none": "No rentals yet.", "rentals.book": "Book GPUs", "rentals.more": "Show more",
        "rentals.caption": "Your organisation's rentals" },
  ru: { "rentals.title": "Аренды", "rentals.filter": "Состояние", "rentals.all": "Все",
        "rentals.none": "Аренд пока нет.", "rentals.book": "Арендовать GPU", "rentals.more": "Показать ещё",
        "rentals.caption": "Аренды вашей организации" },
});

export async function render(ctx) {
  const state = ctx.query.get("state") || "";
  let list = await get(`/v1/rentals?limit=50${state ? `&state=${encodeURIComponent(state)}` : ""}`);
  const rows = [...list.items];
  const holder = h("div", {}, table(t("rentals.caption"), columns(), rows, t("rentals.none")));
  const more = h("button", { type: "button", hidden: !list.next_cursor, onclick: async () => {
    list = await get(`/v1/rentals?limit=50&cursor=${encodeURIComponent(list.next_cursor)}${state ? `&state=${state}` : ""}`);
    rows.push(...list.items);
    holder.replaceChildren(table(t("rentals.caption"), columns(), rows));
    more.hidden = !list.next_cursor;
  } }, t("rentals.more"));
  const filter = field({
    label: t("rentals.filter"), name: "state", value: state,
    options: [{ value: "", label: t("rentals.all") },
      ...STATES.map((s) => ({ value: s, label: t(`state.${s}`) }))],
  });
  filter.querySelector("select").addEventListener("change", (e) =>
    ctx.go(e.target.value ? `#/rentals?state=${e.target.value}` : "#/rentals"));
  return page(t("rentals.title"),
    h("div", { class: "row" }, filter, h("p", {}, h("a", { class: "button primary", href: "#/book" }, t("rentals.book")))),
    holder, more);
}
