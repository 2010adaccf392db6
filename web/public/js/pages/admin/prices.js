// Administration: the price list as an editable table — a day's price for each GPU model and
// count — saved whole with PUT /v1/admin/prices (shapes left out are no longer priced; rentals
// keep the price they were booked at).
import { put } from "../../api.js";
import { dateTime, money, strings, t } from "../../i18n.js";
import { busy, field, h, page, toast } from "../../ui.js";
import { allPages, amountError, clientError, formatAmount, parseAmount, pointAt, scrollRegion, wholeNumber } from "./fleet.js";

strings({
  en: {
    "admin.prices.title": "Prices",
    "admin.prices.intro": "A price per day for each GPU model and GPU count. Saving replaces the whole list: a shape removed here can no longer be booked; rentals keep the price they were booked at.",
    "admin.prices.caption": "The price list in force, editable",
    "admin.prices.currency": "Currency", "admin.prices.currency_hint": "The platform's currency; every price is in it.",
    "admin.prices.model": "GPU model", "admin.prices.count": "GPUs", "admin.prices.price": "Price per day",
    "admin.prices.now": "Now", "admin.prices.since": "In force since", "admin.prices.new": "new",
    "admin.prices.row_model": "GPU model, row {n}", "admin.prices.row_count": "GPU count, row {n}",
    "admin.prices.row_price": "Price per day, row {n}", "admin.prices.remove": "Remove row {n}",
    "admin.prices.add_row": "Add a price", "admin.prices.save": "Save the price list", "admin.prices.discard": "Discard changes",
    "admin.prices.saved": { one: "Price list saved: {n} price.", other: "Price list saved: {n} prices." },
    "admin.prices.empty": "No prices: nothing can be booked. Add a price below.",
    "admin.prices.removed": "Row removed.",
    "admin.prices.currency_invalid": "Enter a three-letter ISO 4217 code such as RUB.",
  },
  ru: {
    "admin.prices.title": "Цены",
    "admin.prices.intro": "Цена за день для каждой модели и числа GPU. Сохранение заменяет весь список: убранную здесь конфигурацию больше нельзя арендовать; действующие аренды сохраняют цену бронирования.",
    "admin.prices.caption": "Действующий прайс-лист, редактируемый",
    "admin.prices.currency": "Валюта", "admin.prices.currency_hint": "Валюта платформы; все цены указываются в ней.",
    "admin.prices.model": "Модель GPU", "admin.prices.count": "GPU", "admin.prices.price": "Цена за день",
    "admin.prices.now": "Сейчас", "admin.prices.since": "Действует с", "admin.prices.new": "новая",
    "admin.prices.row_model": "Модель GPU, строка {n}", "admin.prices.row_count": "Число GPU, строка {n}",
    "admin.prices.row_price": "Цена за день, строка {n}", "admin.prices.remove": "Удалить строку {n}",
    "admin.prices.add_row": "Добавить цену", "admin.prices.save": "Сохранить прайс-лист", "admin.prices.discard": "Отменить изменения",
    "admin.prices.saved": { one: "Прайс-лист сохранён: {n} цена.", few: "Прайс-лист сохранён: {n} цены.",
                            many: "Прайс-лист сохранён: {n} цен.", other: "Прайс-лист сохранён: {n} цены." },
    "admin.prices.empty": "Цен нет: арендовать ничего нельзя. Добавьте цену ниже.",
    "admin.prices.removed": "Строка удалена.",
    "admin.prices.currency_invalid": "Введите трёхбуквенный код ISO 4217, например RUB.",
  },
});

export async function render(ctx) {
  const controller = new AbortController();
  ctx.onLeave(() => controller.abort());
  const [prices, models] = await Promise.all([
    allPages("/v1/admin/prices", controller.signal),
    allPages("/v1/gpu-models", controller.signal).catch(() => []),
  ]);
  const modelNames = [...new Set([...models.map((m) => m.name), ...prices.map((p) => p.gpu_model)])].sort();
  const startCurrency = (prices[0] && prices[0].price_per_day.currency) || "RUB";

  const currencyField = field({ label: t("admin.prices.currency"), name: "currency", value: startCurrency, required: true,
                                hint: t("admin.prices.currency_hint"),
                                attrs: { maxlength: 3, size: 4, autocomplete: "off", spellcheck: "false" } });
  const currencyInput = currencyField.querySelector("input");
  const body = h("tbody", {});
  const empty = h("p", { class: "empty", hidden: true }, t("admin.prices.empty"));

  // Each row's fields are named as the API names them (items[i].gpu_model …), so the API's
  // errors land beside the right cell; the names follow the rows' order.
  function renumber() {
    [...body.rows].forEach((tr, i) => {
      for (const [key, labelKey] of [["gpu_model", "row_model"], ["gpu_count", "row_count"], ["price_per_day", "row_price"]]) {
        const cell = tr.querySelector(`[data-part="${key}"] .field`);
        const name = `items[${i}].${key}`;
        cell.dataset.field = name;
        cell.querySelector("[name]").setAttribute("name", name);
        cell.querySelector("label").firstChild.textContent = t(`admin.prices.${labelKey}`, { n: i + 1 });
      }
      tr.querySelector("button.admin-remove").setAttribute("aria-label", t("admin.prices.remove", { n: i + 1 }));
    });
    empty.hidden = body.rows.length > 0;
  }

  function row(p) {
    const cur = p ? p.price_per_day.currency : currencyInput.value;
    const modelField = field({ label: "", name: "gpu_model", value: p ? p.gpu_model : modelNames[0] || "",
                               options: modelNames.length ? modelNames.map((m) => ({ value: m, label: m })) : null,
                               attrs: { maxlength: 64 } });
    const countField = field({ label: "", name: "gpu_count", type: "number", value: p ? p.gpu_count : 1,
                               attrs: { min: 1, max: 64, step: 1, inputmode: "numeric" } });
    const priceField = field({ label: "", name: "price_per_day", value: p ? formatAmount(p.price_per_day.amount_minor, cur) : "",
                               attrs: { inputmode: "decimal", autocomplete: "off", size: 12 } });
    const remove = h("button", { type: "button", class: "admin-remove admin-small-button" }, "✕");
    const tr = h("tr", {},
      h("td", { dataset: { part: "gpu_model" } }, modelField),
      h("td", { dataset: { part: "gpu_count" }, class: "num" }, countField),
      h("td", { dataset: { part: "price_per_day" }, class: "num" }, priceField),
      h("td", { class: "num admin-price-now" }, p ? money(p.price_per_day) : h("span", { class: "admin-muted" }, t("admin.prices.new"))),
      h("td", {}, p && p.valid_from ? dateTime(p.valid_from) : t("admin.none")),
      h("td", {}, remove));
    remove.addEventListener("click", () => {
      const next = tr.nextElementSibling || tr.previousElementSibling;
      tr.remove();
      renumber();
      (next ? next.querySelector("button.admin-remove") : addButton).focus();
      toast(t("admin.prices.removed"));
    });
    return tr;
  }

  function fill(list) {
    body.replaceChildren(...list.map(row));
    renumber();
  }
  fill(prices);

  const addButton = h("button", { type: "button" }, t("admin.prices.add_row"));
  addButton.addEventListener("click", () => {
    const tr = row(null);
    body.append(tr);
    renumber();
    tr.querySelector("[name]").focus();
  });

  const form = h("form", { class: "card admin-prices", novalidate: true },
    h("div", { class: "admin-narrow-field" }, currencyField),
    scrollRegion(t("admin.prices.caption"),
      h("table", { class: "admin-table admin-price-table" },
        h("caption", { class: "visually-hidden" }, t("admin.prices.caption")),
        h("thead", {}, h("tr", {},
          h("th", { scope: "col" }, t("admin.prices.model")),
          h("th", { scope: "col", class: "num" }, t("admin.prices.count")),
          h("th", { scope: "col", class: "num" }, t("admin.prices.price")),
          h("th", { scope: "col", class: "num" }, t("admin.prices.now")),
          h("th", { scope: "col" }, t("admin.prices.since")),
          h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, t("remove"))))),
        body)),
    empty,
    h("div", { class: "toolbar" },
      addButton,
      h("button", { type: "submit", class: "primary" }, t("admin.prices.save")),
      h("button", { type: "button", onclick: () => ctx.rerender() }, t("admin.prices.discard"))));

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button[type=submit]"), async () => {
      const currency = currencyInput.value.trim().toUpperCase();
      if (!/^[A-Z]{3}$/.test(currency)) throw clientError("currency", t("admin.prices.currency_invalid"));
      const items = [...body.rows].map((tr, i) => {
        const value = (key) => tr.querySelector(`[data-part="${key}"] [name]`).value;
        const gpuModel = value("gpu_model").trim();
        if (!gpuModel) throw clientError(`items[${i}].gpu_model`, t("admin.error.required"));
        const amount = parseAmount(value("price_per_day"), currency);
        if (amount === null || amount <= 0) throw amountError(`items[${i}].price_per_day`, currency);
        return { gpu_model: gpuModel, gpu_count: wholeNumber(value("gpu_count"), `items[${i}].gpu_count`, 1, 64),
                 price_per_day: { amount_minor: amount, currency } };
      });
      let saved;
      try {
        saved = await put("/v1/admin/prices", { items });
      } catch (err) {
        const name = err.field || "";
        if (name.endsWith(".price_per_day.currency")) throw pointAt(err, "currency");
        if (/^items\[\d+\]\.price_per_day\./.test(name)) throw pointAt(err, name.replace(/\.price_per_day\..*$/, ".price_per_day"));
        throw err;
      }
      currencyInput.value = currency;
      fill(saved.items || []);
      toast(t("admin.prices.saved", { n: (saved.items || []).length }));
    }, form);
  });

  return page(t("admin.prices.title"), h("p", {}, t("admin.prices.intro")), form);
}
