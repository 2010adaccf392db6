// What can be rented: GPU models with their specs, the offers with prices and when they
// are free, up to three configurations side by side with what the fleet measured of them
// (the week of trials as a table), and the availability calendar of one offer.
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
        "ic.nvswitch": "NVSwitch (all-to-all NVLink)", "ic.nvlink-pairs": "NVLink bridges in pairs", "ic.pcie": "PCIe",
        "cmp.title": "Compare configurations", "cmp.help": "Pick up to three: what each costs, what the platform measured on its nodes, and the price of a measured TFLOP/s a day.",
        "cmp.slot": "Configuration {n}", "cmp.none": "—", "cmp.caption": "Configurations side by side",
        "cmp.measure": "", "cmp.price": "Price per day", "cmp.gflops": "Measured per GPU", "cmp.tflops": "Measured in all",
        "cmp.peer": "Between two GPUs", "cmp.nccl": "NCCL all-reduce", "cmp.per_tflops": "Price per measured TFLOP/s a day",
        "cmp.tensor": "fp16 tensor per GPU", "cmp.memory": "Memory copy per GPU",
        "cmp.per_tensor": "Price per measured tensor TFLOP/s a day",
        "cmp.nodes": "Nodes measured", "cmp.when": "Earliest start", "cmp.best": "lowest", "cmp.unmeasured": "not measured yet" },
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
        "ic.nvswitch": "NVSwitch (NVLink все со всеми)", "ic.nvlink-pairs": "NVLink-мосты парами", "ic.pcie": "PCIe",
        "cmp.title": "Сравнение конфигураций", "cmp.help": "Выберите до трёх: сколько стоит каждая, что платформа измерила на её узлах и цена измеренного TFLOP/s в сутки.",
        "cmp.slot": "Конфигурация {n}", "cmp.none": "—", "cmp.caption": "Конфигурации рядом",
        "cmp.measure": "", "cmp.price": "Цена за сутки", "cmp.gflops": "Измерено на GPU", "cmp.tflops": "Измерено всего",
        "cmp.peer": "Между двумя GPU", "cmp.nccl": "NCCL all-reduce", "cmp.per_tflops": "Цена измеренного TFLOP/s в сутки",
        "cmp.tensor": "fp16 на тензорных ядрах, на GPU", "cmp.memory": "Копирование в памяти GPU",
        "cmp.per_tensor": "Цена измеренного тензорного TFLOP/s в сутки",
        "cmp.nodes": "Узлов измерено", "cmp.when": "Ближайший старт", "cmp.best": "ниже всех", "cmp.unmeasured": "ещё не измерено" },
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

  // Up to three configurations side by side: the seed's week of trials as one table.
  const compareBox = h("div", { "aria-live": "polite" });
  const slots = [1, 2, 3].map((n) => field({ label: t("cmp.slot", { n }), name: `compare-${n}`,
    options: [{ value: "", label: t("cmp.none") },
      ...shapes.map((o) => ({ value: `${o.gpu_model}|${o.gpu_count}`, label: `${o.gpu_count}× ${o.gpu_model}` }))] }));
  const drawCompare = () => {
    const chosen = slots.map((f) => f.querySelector("select").value).filter(Boolean)
      .map((v) => shapes.find((o) => `${o.gpu_model}|${o.gpu_count}` === v));
    if (!chosen.length) { compareBox.replaceChildren(); return; }
    const perTflops = chosen.map((o) => o.price_per_measured_tflops_day?.amount_minor).filter((v) => typeof v === "number");
    const lowest = perTflops.length ? Math.min(...perTflops) : null;
    const m = (o) => o.measured || {};
    const rows = [
      [t("cmp.price"), (o) => money(o.price_per_day)],
      [t("cmp.gflops"), (o) => (m(o).gflops_per_gpu ? `${number(m(o).gflops_per_gpu)} Gflop/s` : t("cmp.unmeasured"))],
      [t("cmp.tflops"), (o) => (m(o).gflops_per_gpu ? `${number((m(o).gflops_per_gpu * o.gpu_count) / 1000, 1)} TFLOP/s` : "—")],
      [t("cmp.peer"), (o) => (m(o).peer_gbps ? `${number(Math.round(m(o).peer_gbps))} GB/s` : "—")],
      [t("cmp.nccl"), (o) => (m(o).nccl_bus_gbps ? `${number(Math.round(m(o).nccl_bus_gbps))} GB/s` : "—")],
      [t("cmp.per_tflops"), (o) => (o.price_per_measured_tflops_day
        ? `${money(o.price_per_measured_tflops_day)}${o.price_per_measured_tflops_day.amount_minor === lowest && chosen.length > 1 ? ` (${t("cmp.best")})` : ""}` : "—")],
      [t("cmp.tensor"), (o) => (m(o).tensor_tflops_per_gpu ? `${number(m(o).tensor_tflops_per_gpu, 1)} TFLOP/s` : "—")],
      [t("cmp.memory"), (o) => (m(o).memory_gbps_per_gpu ? `${number(Math.round(m(o).memory_gbps_per_gpu))} GB/s` : "—")],
      [t("cmp.per_tensor"), (o) => (o.price_per_measured_tensor_tflops_day ? money(o.price_per_measured_tensor_tflops_day) : "—")],
      [t("cmp.nodes"), (o) => number(m(o).nodes || 0)],
      [t("cmp.when"), (o) => (o.available_now ? t("catalog.now") : o.earliest_start ? dateTime(o.earliest_start) : t("catalog.none"))],
    ];
    compareBox.replaceChildren(h("div", { class: "table-wrap", role: "region", "aria-label": t("cmp.caption"), tabindex: "0" },
      h("table", { "data-testid": "compare" },
        h("caption", { class: "visually-hidden" }, t("cmp.caption")),
        h("thead", {}, h("tr", {}, h("td", {}), chosen.map((o) => h("th", { scope: "col" }, `${o.gpu_count}× ${o.gpu_model}`)))),
        h("tbody", {}, rows.map(([label, cell]) => h("tr", {}, h("th", { scope: "row" }, label), chosen.map((o) => h("td", {}, cell(o)))))))));
  };
  slots.forEach((f) => f.querySelector("select").addEventListener("change", drawCompare));

  return page(t("catalog.title"),
    h("section", { "aria-labelledby": "cat-offers" }, h("h2", { id: "cat-offers" }, t("catalog.offers")), offerTable),
    h("section", { "aria-labelledby": "cat-compare" }, h("h2", { id: "cat-compare" }, t("cmp.title")),
      h("p", {}, t("cmp.help")), h("div", { class: "row" }, slots), compareBox),
    h("section", { "aria-labelledby": "cat-cal" }, h("h2", { id: "cat-cal" }, t("catalog.calendar")),
      shapes.length ? pick : null, calendarBox),
    h("section", { "aria-labelledby": "cat-models" }, h("h2", { id: "cat-models" }, t("catalog.models")), modelTable));
}
