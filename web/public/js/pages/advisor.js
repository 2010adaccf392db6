// The sizing advisor: a model (named, or by parameter count), precision, task, context and
// batch in; POST /v1/advisor out: the memory it needs as a stacked bar, and the rentals on
// offer that hold it, cheapest first, each with a link to the booking form filled in.
import { post } from "../api.js";
import { strings, t, money, dateTime, number } from "../i18n.js";
import { busy, clearErrors, field, h, page, replace, showError, svg, table } from "../ui.js";

// The presets POST /v1/advisor knows (advisor/sizing.cpp); "" is a model by parameter count.
const PRESETS = [
  ["llama-2-7b", "Llama 2 7B"], ["llama-2-13b", "Llama 2 13B"], ["llama-2-70b", "Llama 2 70B"],
  ["llama-3-8b", "Llama 3 8B"], ["llama-3-70b", "Llama 3 70B"], ["mistral-7b", "Mistral 7B"],
  ["mixtral-8x7b", "Mixtral 8x7B"], ["qwen2-72b", "Qwen2 72B"], ["sdxl", "Stable Diffusion XL"],
  ["whisper-large", "Whisper large"],
];
const PRECISIONS = ["bf16", "fp16", "fp32", "fp8", "int8", "int4"];
const TASKS = ["inference", "lora", "qlora", "full_finetune", "pretrain"];
// The breakdown's parts, in the bar's order; each has a CSS class of its own (css/advisor.css).
const PARTS = ["weights", "kv_cache", "gradients", "optimizer", "activations", "overhead"];

strings({
  en: { "advisor.title": "Sizing advisor",
        "advisor.intro": "How much GPU memory a model needs for a job, and which rentals on offer hold it.",
        "advisor.model": "Model", "advisor.custom": "Another model (by parameter count)",
        "advisor.params": "Parameters, billions", "advisor.precision": "Precision", "advisor.task": "Task",
        "advisor.context": "Context, tokens", "advisor.context_hint": "Language models only; empty: 4096 or what the model reads.",
        "advisor.batch": "Batch size", "advisor.estimate": "Estimate",
        "task.inference": "Inference", "task.lora": "LoRA fine-tuning", "task.qlora": "QLoRA (4-bit base)",
        "task.full_finetune": "Full fine-tuning", "task.pretrain": "Pre-training",
        "advisor.result": "Memory needed", "advisor.total": "{gb} GB on one GPU",
        "advisor.bar": "Memory by part: {parts}",
        "part.weights": "Weights", "part.kv_cache": "KV cache", "part.gradients": "Gradients",
        "part.optimizer": "Optimizer state", "part.activations": "Activations", "part.overhead": "Runtime overhead",
        "advisor.sharding": "No single GPU holds this: the job must be split over several GPUs.",
        "advisor.recommendations": "Rentals that fit", "advisor.recs_caption": "Rentals that fit, cheapest first",
        "advisor.none": "Nothing on offer holds this job.",
        "advisor.config": "Configuration", "advisor.interconnect": "Interconnect", "advisor.per_gpu": "Memory per GPU",
        "advisor.per_gpu_value": "{need} of {has} GB", "advisor.price": "Price per day", "advisor.when": "Earliest start",
        "advisor.now": "Now", "advisor.later": "Not within the horizon", "advisor.why": "Why",
        "advisor.book": "Book this", "advisor.book_label": "Book this: {count}× {model}",
        "advisor.excluded": "Why not the others", "advisor.gb": "{gb} GB",
        "advisor.ic.nvswitch": "NVSwitch (all-to-all NVLink)", "advisor.ic.nvlink-pairs": "NVLink bridges in pairs",
        "advisor.ic.pcie": "PCIe" },
  ru: { "advisor.title": "Подбор GPU",
        "advisor.intro": "Сколько памяти GPU нужно модели для задачи и какие конфигурации в продаже её вмещают.",
        "advisor.model": "Модель", "advisor.custom": "Другая модель (по числу параметров)",
        "advisor.params": "Параметров, млрд", "advisor.precision": "Точность", "advisor.task": "Задача",
        "advisor.context": "Контекст, токенов", "advisor.context_hint": "Только для языковых моделей; пусто — 4096 или сколько читает модель.",
        "advisor.batch": "Размер батча", "advisor.estimate": "Рассчитать",
        "task.inference": "Инференс", "task.lora": "Дообучение LoRA", "task.qlora": "QLoRA (база в 4 битах)",
        "task.full_finetune": "Полное дообучение", "task.pretrain": "Предобучение",
        "advisor.result": "Нужно памяти", "advisor.total": "{gb} ГБ на одном GPU",
        "advisor.bar": "Память по частям: {parts}",
        "part.weights": "Веса", "part.kv_cache": "KV-кэш", "part.gradients": "Градиенты",
        "part.optimizer": "Состояние оптимизатора", "part.activations": "Активации", "part.overhead": "Накладные расходы",
        "advisor.sharding": "Ни один GPU не вмещает это целиком: задачу нужно разделить между несколькими GPU.",
        "advisor.recommendations": "Подходящие конфигурации", "advisor.recs_caption": "Подходящие конфигурации, сначала дешёвые",
        "advisor.none": "В продаже нет конфигурации, которая вместит эту задачу.",
        "advisor.config": "Конфигурация", "advisor.interconnect": "Связь GPU", "advisor.per_gpu": "Память на GPU",
        "advisor.per_gpu_value": "{need} из {has} ГБ", "advisor.price": "Цена за сутки", "advisor.when": "Ближайший старт",
        "advisor.now": "Сейчас", "advisor.later": "Нет в горизонте", "advisor.why": "Почему",
        "advisor.book": "Арендовать", "advisor.book_label": "Арендовать: {count}× {model}",
        "advisor.excluded": "Почему не другие", "advisor.gb": "{gb} ГБ",
        "advisor.ic.nvswitch": "NVSwitch (NVLink все со всеми)", "advisor.ic.nvlink-pairs": "NVLink-мосты парами",
        "advisor.ic.pcie": "PCIe" },
});

// The breakdown as one bar of 100 units, a segment per non-empty part, with a legend beside.
function breakdownBar(breakdown, total) {
  const parts = PARTS.map((p) => ({ part: p, gb: breakdown[`${p}_gb`] || 0 })).filter((p) => p.gb > 0);
  const sum = parts.reduce((s, p) => s + p.gb, 0) || 1;
  let x = 0;
  const described = parts.map((p) => `${t(`part.${p.part}`)} ${t("advisor.gb", { gb: number(p.gb, 1) })}`).join(", ");
  const bar = svg("svg", { class: "advisor-bar", viewBox: "0 0 100 8", preserveAspectRatio: "none", role: "img",
                           "aria-label": t("advisor.bar", { parts: described }) },
    parts.map((p) => {
      const width = (100 * p.gb) / sum;
      const rect = svg("rect", { class: `seg seg-${p.part}`, x: x.toFixed(2), y: 0, width: width.toFixed(2), height: 8 });
      x += width;
      return rect;
    }));
  const legend = h("ul", { class: "advisor-legend" }, parts.map((p) => h("li", {},
    svg("svg", { class: "swatch", viewBox: "0 0 10 10", width: 12, height: 12, "aria-hidden": "true", focusable: "false" },
      svg("rect", { class: `seg seg-${p.part}`, x: 0, y: 0, width: 10, height: 10, rx: 2 })),
    " ", t(`part.${p.part}`), ": ", h("strong", {}, t("advisor.gb", { gb: number(p.gb, 1) })))));
  return h("div", { class: "advisor-breakdown" },
    h("p", { class: "advisor-total", "data-testid": "advisor-total" }, t("advisor.total", { gb: number(total, 1) })),
    bar, legend);
}

// The booking form with this configuration chosen; a later start when it is not free now.
function bookingLink(r) {
  const q = new URLSearchParams({ gpu_model: r.gpu_model, gpu_count: String(r.gpu_count), interconnect: r.booking_interconnect });
  // A booking's date is the site's midnight: the site's first bookable date, not the date
  // of the earliest instant, which in UTC may be the site's yesterday.
  if (!r.available_now && r.earliest_date) q.set("start", r.earliest_date);
  return h("a", { class: "button", href: `#/book?${q}`,
    "aria-label": t("advisor.book_label", { count: r.gpu_count, model: r.gpu_model }) }, t("advisor.book"));
}

function results(advice) {
  const recs = advice.recommendations;
  const recTable = table(t("advisor.recs_caption"), [
    { label: t("advisor.config"), cell: (r) => h("strong", {}, `${r.gpu_count}× ${r.gpu_model}`) },
    { label: t("advisor.interconnect"), cell: (r) => t(`advisor.ic.${r.interconnect}`) },
    { label: t("advisor.per_gpu"), cell: (r) => t("advisor.per_gpu_value",
      { need: number(r.required_per_gpu_gb, 1), has: number(r.vram_per_gpu_gb) }) },
    { label: t("advisor.price"), cell: (r) => money(r.price_per_day) },
    { label: t("advisor.when"), cell: (r) => (r.available_now ? t("advisor.now")
      : r.earliest_start ? dateTime(r.earliest_start) : t("advisor.later")) },
    { label: t("advisor.why"), cell: (r) => h("span", { class: "advisor-why" }, r.why) },
    { label: t("advisor.book"), cell: (r) => bookingLink(r) },
  ], recs, t("advisor.none"));
  const excluded = advice.excluded.length
    ? h("details", { class: "advisor-excluded" }, h("summary", {}, t("advisor.excluded")),
      h("ul", {}, advice.excluded.map((x) => h("li", {},
        h("strong", {}, x.gpu_count ? `${x.gpu_count}× ${x.gpu_model}` : x.gpu_model), ": ", x.why))))
    : null;
  return [
    h("section", { class: "card", "aria-labelledby": "advisor-need" },
      h("h2", { id: "advisor-need" }, t("advisor.result")),
      breakdownBar(advice.breakdown, advice.vram_required_gb),
      advice.sharding_required ? h("p", { class: "alert info" }, t("advisor.sharding")) : null),
    h("section", { "aria-labelledby": "advisor-recs" },
      h("h2", { id: "advisor-recs" }, t("advisor.recommendations")), recTable, excluded),
  ];
}

export async function render(ctx) {
  const q = ctx.query;
  const initialPreset = PRESETS.some(([p]) => p === q.get("preset")) ? q.get("preset") : q.get("params") ? "" : "llama-3-8b";
  const form = h("form", { class: "card advisor-form", novalidate: true });
  const presetField = field({ label: t("advisor.model"), name: "preset", value: initialPreset,
    options: [...PRESETS.map(([value, label]) => ({ value, label })), { value: "", label: t("advisor.custom") }] });
  const paramsField = field({ label: t("advisor.params"), name: "model_params_billion", type: "number",
    value: q.get("params") || "7", attrs: { min: 0.01, max: 2000, step: "any", inputmode: "decimal" } });
  const precisionField = field({ label: t("advisor.precision"), name: "precision",
    value: PRECISIONS.includes(q.get("precision")) ? q.get("precision") : "bf16",
    options: PRECISIONS.map((p) => ({ value: p, label: p })) });
  const taskField = field({ label: t("advisor.task"), name: "task",
    value: TASKS.includes(q.get("task")) ? q.get("task") : "inference",
    options: TASKS.map((k) => ({ value: k, label: t(`task.${k}`) })) });
  const contextField = field({ label: t("advisor.context"), name: "context_tokens", type: "number",
    value: q.get("context") || "", hint: t("advisor.context_hint"), attrs: { min: 1, inputmode: "numeric" } });
  const batchField = field({ label: t("advisor.batch"), name: "batch_size", type: "number", value: q.get("batch") || "1",
    attrs: { min: 1, max: 4096, inputmode: "numeric" } });
  const submit = h("button", { type: "submit", class: "primary" }, t("advisor.estimate"));
  form.append(h("div", { class: "advisor-fields" }, presetField, paramsField, precisionField, taskField,
    contextField, batchField), submit);
  const out = h("div", { class: "advisor-results", "aria-live": "polite" });

  const value = (name) => form.querySelector(`[name="${name}"]`).value.trim();
  // The parameter count is asked only for a model without a preset.
  const showParams = () => { paramsField.hidden = value("preset") !== ""; };
  form.querySelector('[name="preset"]').addEventListener("change", showParams);
  showParams();

  function body() {
    const b = { precision: value("precision"), task: value("task") };
    if (value("preset")) b.preset = value("preset");
    else b.model_params_billion = Number(value("model_params_billion"));
    if (value("context_tokens")) b.context_tokens = Number(value("context_tokens"));
    if (value("batch_size")) b.batch_size = Number(value("batch_size"));
    return b;
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(submit, async () => {
      clearErrors(form);
      try {
        const advice = await post("/v1/advisor", body());
        if (!ctx.stale()) replace(out, ...results(advice));
      } catch (err) {
        out.replaceChildren();
        showError(form, err);
      }
    });
  });

  return page(t("advisor.title"), h("p", {}, t("advisor.intro")), form, out);
}
