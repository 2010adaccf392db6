// What can be rented: GPU models with their specs, the offers with prices and when they
// are free, and the availability calendar of one offer.
import { all, get } from "../api.js";
import { strings, t, money, dateTime, number } from "../i18n.js";
import { h, page, table, field } from "../ui.js";
import { calendar } from "../calendar.js";

strings({
  en: { "catalog.title": "GPUs and prices", "catalog.models": "GPU models", "catalog.offers": "Offers",
        "catalog.model": "Model", "catalog.arch": "Architecture", "catalog.cc": "Compute capability",
        "catalog.vram": "Memory", "catalog.bw": "Bandwidth", "catalog.precision": "Precision",
        "catalog.nvlink": "NVLink", "catalog.tdp": "Power", "catalog.shape": "Configuration",
        "catalog.interconnect": "Interconnect", "catalog.price": "Price per day",
        "catalog.when": "Earliest start", "catalog.now": "Now", "catalog.none": "Not within the horizon",
        "catalog.site": "Site", "catalog.book": "Book", "catalog.book_label": "Book {count}× {model}",
        "catalog.calendar": "Availability", "catalog.pick": "Configuration",
        "catalog.models_caption": "GPU models and their specifications",
        "catalog.offers_caption": "Offers with prices per day",
        "ic.nvswitch": "NVSwitch (all-to-all NVLink)", "ic.nvlink-pairs": "NVLink bridges in pairs", "ic.pcie": "PCIe" },
  ru: { "catalog.title": "GPU и цены", "catalog.models": "Модели GPU", "catalog.offers": "Предложения",
        "catalog.model": "Модель", "catalog.arch": "Архитектура", "catalog.cc": "Compute capability",
        "catalog.vram": "Память", "catalog.bw": "Пропускная способность", "catalog.precision": "Точность",
        "catalog.nvlink": "NVLink", "catalog.tdp": "Мощность", "catalog.shape": "Конфигурация",
        "catalog.interconnect": "Связь GPU", "catalog.price": "Цена за сутки",
        "catalog.when": "Ближайший старт", "catalog.now": "Сейчас", "catalog.none": "Нет в горизонте",
        "catalog.site": "Площадка", "catalog.book": "Арендовать", "catalog.book_label": "Арендовать {count}× {model}",
        "catalog.calendar": "Доступность", "catalog.pick": "Конфигурация",
        "catalog.models_caption": "Модели GPU и их характеристики",
        "catalog.offers_caption": "Предложения с ценами за сутки",
        "ic.nvswitch": "NVSwitch (NVLink все со всеми)", "ic.nvlink-pairs": "NVLink-мосты парами", "ic.pcie": "PCIe" },
});

export async function render(ctx) {
  const [models, offers] = await Promise.all([all("/v1/gpu-models"), get("/v1/offers?interconnect=any")]);
  const modelTable = table(t("catalog.models_caption"), [
    { label: t("catalog.model"), cell: (m) => h("strong", {}, m.name) },
    { label: t("catalog.arch"), cell: (m) => m.architecture },
    { label: t("catalog.cc"), cell: (m) => m.compute_capability },
    { label: t("catalog.vram"), cell: (m) => `${number(m.vram_gb)} GB ${m.memory_type || ""}` },
    { label: t("catalog.bw"), cell: (m) => (m.memory_bandwidth_gbps ? `${number(m.memory_bandwidth_gbps)} GB/s` : "—") },
    { label: t("catalog.precision"), cell: (m) => ["FP32", "FP16", m.bf16 && "BF16", m.fp8 && "FP8"].filter(Boolean).join(", ") },
    { label: t("catalog.nvlink"), cell: (m) => (m.nvlink ? `${m.nvlink.connection}${m.nvlink.bandwidth_gbps ? `, ${number(m.nvlink.bandwidth_gbps)} GB/s` : ""}` : "—") },
    { label: t("catalog.tdp"), cell: (m) => (m.tdp_w ? `${number(m.tdp_w)} W` : "—") },
  ], models);

  const items = offers.items;
  const offerTable = table(t("catalog.offers_caption"), [
    { label: t("catalog.shape"), cell: (o) => `${o.gpu_count}× ${o.gpu_model} (${number(o.vram_total_gb)} GB)` },
    { label: t("catalog.interconnect"), cell: (o) => t(`ic.${o.interconnect}`) },
    { label: t("catalog.price"), cell: (o) => money(o.price_per_day) },
    { label: t("catalog.when"), cell: (o) => (o.available_now ? t("catalog.now") : o.earliest_start ? dateTime(o.earliest_start) : t("catalog.none")) },
    { label: t("catalog.site"), cell: (o) => o.site },
    { label: t("catalog.book"), cell: (o) => h("a", {
      class: "button", href: `#/book?gpu_model=${encodeURIComponent(o.gpu_model)}&gpu_count=${o.gpu_count}`,
      "aria-label": t("catalog.book_label", { count: o.gpu_count, model: o.gpu_model }) }, t("catalog.book")) },
  ], items);

  // The calendar of one configuration, chosen from the offers (deduplicated across sites).
  const shapes = [...new Map(items.map((o) => [`${o.gpu_model}|${o.gpu_count}`, o])).values()];
  const calendarBox = h("div", { "aria-live": "polite" });
  const pick = field({ label: t("catalog.pick"), name: "shape",
    options: shapes.map((o) => ({ value: `${o.gpu_model}|${o.gpu_count}`, label: `${o.gpu_count}× ${o.gpu_model}` })) });
  const show = async (value) => {
    const [model, count] = value.split("|");
    const cal = await calendar(model, Number(count));
    if (!ctx.stale()) calendarBox.replaceChildren(cal);
  };
  pick.querySelector("select").addEventListener("change", (e) => show(e.target.value));
  if (shapes.length) await show(`${shapes[0].gpu_model}|${shapes[0].gpu_count}`);

  return page(t("catalog.title"),
    h("section", { "aria-labelledby": "cat-offers" }, h("h2", { id: "cat-offers" }, t("catalog.offers")), offerTable),
    h("section", { "aria-labelledby": "cat-cal" }, h("h2", { id: "cat-cal" }, t("catalog.calendar")),
      shapes.length ? pick : null, calendarBox),
    h("section", { "aria-labelledby": "cat-models" }, h("h2", { id: "cat-models" }, t("catalog.models")), modelTable));
}
