// The booking flow: configuration, start, days, a compatible image, SSH keys; a live price
// quote (a dry run that books nothing); confirm. One Idempotency-Key per filled-in form, so
// a double click or a retried request books once.
import { all, get, post, newIdempotencyKey } from "../api.js";
import { strings, t, money, dateTime, date } from "../i18n.js";
import { busy, clearErrors, field, h, page, replace, showError } from "../ui.js";
import "../rentals-view.js";  // the plural of days

strings({
  en: { "book.title": "Book GPUs", "book.model": "GPU model", "book.count": "Number of GPUs",
        "book.interconnect": "GPU interconnect", "book.ic.nvlink": "NVLink between all chosen GPUs",
        "book.ic.any": "Any (PCIe is fine)", "book.start": "Start", "book.start_now": "Now",
        "book.start_date": "On a day", "book.start_day": "Start day", "book.days": "Days",
        "book.image": "Image", "book.image_hint": "Only images whose driver runs on this GPU are listed.",
        "book.keys": "SSH keys", "book.keys_none": "No SSH keys yet: add one first, or use SSH certificates later.",
        "book.add_key": "Add an SSH key", "book.name": "Name (optional)", "book.wait": "If no GPUs are free, wait in line for them",
        "book.quote": "Price", "book.per_day": "Per day", "book.total": "Total", "book.discount": "Discount {p}% for a long rental",
        "book.available": "Available for this period.", "book.unavailable": "Not free for this period.",
        "book.earliest": "Earliest start: {at}.", "book.alternatives": "These would fit:",
        "book.alt": "{count}× {model} from {start}", "book.confirm": "Book and pay",
        "book.quoting": "Pricing…", "book.no_offers": "Nothing is on sale yet.",
        "book.summary": "{count}× {model}, {days}" },
  ru: { "book.title": "Аренда GPU", "book.model": "Модель GPU", "book.count": "Количество GPU",
        "book.interconnect": "Связь между GPU", "book.ic.nvlink": "NVLink между всеми выбранными GPU",
        "book.ic.any": "Любая (PCIe подойдёт)", "book.start": "Начало", "book.start_now": "Сейчас",
        "book.start_date": "В выбранный день", "book.start_day": "День начала", "book.days": "Сутки",
        "book.image": "Образ", "book.image_hint": "Показаны только образы, чей драйвер работает на этих GPU.",
        "book.keys": "SSH-ключи", "book.keys_none": "SSH-ключей пока нет: добавьте ключ или используйте SSH-сертификаты.",
        "book.add_key": "Добавить SSH-ключ", "book.name": "Название (необязательно)", "book.wait": "Если свободных GPU нет, встать в очередь",
        "book.quote": "Стоимость", "book.per_day": "За сутки", "book.total": "Итого", "book.discount": "Скидка {p}% за длительную аренду",
        "book.available": "Свободно на этот срок.", "book.unavailable": "На этот срок занято.",
        "book.earliest": "Ближайший старт: {at}.", "book.alternatives": "Подойдут:",
        "book.alt": "{count}× {model} с {start}", "book.confirm": "Арендовать и оплатить",
        "book.quoting": "Расчёт…", "book.no_offers": "Пока нечего арендовать.",
        "book.summary": "{count}× {model}, {days}" },
});

function tomorrow() {
  const d = new Date(Date.now() + 24 * 3600 * 1000);
  return d.toISOString().slice(0, 10);
}

export async function render(ctx) {
  const [offers, images, keys] = await Promise.all([
    get("/v1/offers?interconnect=any"), all("/v1/images"),
    ctx.session.can("rentals:read") ? all("/v1/ssh-keys") : [],
  ]);
  if (!offers.items.length) return page(t("book.title"), h("p", {}, t("book.no_offers")));
  const models = [...new Set(offers.items.map((o) => o.gpu_model))].sort();
  const q = ctx.query;
  const initialModel = models.includes(q.get("gpu_model")) ? q.get("gpu_model") : models[0];
  // "now" (the calendar's today once its midnight has passed) or a date.
  const startParam = q.get("start") === "now" ? null : q.get("start");

  const form = h("form", { class: "card booking", novalidate: true });
  const modelField = field({ label: t("book.model"), name: "gpu_model", value: initialModel,
    options: models.map((m) => ({ value: m, label: m })) });
  const countField = h("div");
  // The advisor links PCIe sets with interconnect=any; anything else asks for NVLink.
  const icField = field({ label: t("book.interconnect"), name: "interconnect",
    value: q.get("interconnect") === "any" ? "any" : "nvlink",
    options: [{ value: "nvlink", label: t("book.ic.nvlink") }, { value: "any", label: t("book.ic.any") }] });
  const startNow = h("input", { type: "radio", name: "start_kind", value: "now", id: "start-now", checked: !startParam });
  const startDay = h("input", { type: "radio", name: "start_kind", value: "date", id: "start-date", checked: !!startParam });
  const startFieldset = h("fieldset", { class: "field", dataset: { field: "start" } },
    h("legend", {}, t("book.start")),
    h("div", { class: "choices" },
      h("label", { for: "start-now" }, startNow, " ", t("book.start_now")),
      h("label", { for: "start-date" }, startDay, " ", t("book.start_date"))),
    field({ label: t("book.start_day"), name: "start_date", type: "date", value: startParam || tomorrow(),
            attrs: { min: new Date().toISOString().slice(0, 10) } }),
    h("div", { class: "field-error", role: "alert" }));
  const daysField = field({ label: t("book.days"), name: "days", type: "number", value: q.get("days") || "1",
    required: true, attrs: { min: 1, inputmode: "numeric" } });
  const imageField = h("div");
  const keyBox = h("fieldset", { class: "field", dataset: { field: "ssh_key_ids" } },
    h("legend", {}, t("book.keys")),
    keys.length ? keys.map((k, i) => h("label", { class: "check" },
      h("input", { type: "checkbox", name: "ssh_key_ids", value: k.id, checked: i === 0 }), " ",
      k.name, " ", h("code", {}, k.fingerprint)))
      : h("p", {}, t("book.keys_none"), " ", h("a", { href: "#/keys" }, t("book.add_key"))),
    h("div", { class: "field-error", role: "alert" }));
  const nameField = field({ label: t("book.name"), name: "name", attrs: { maxlength: 100 } });
  const waitBox = h("label", { class: "check" }, h("input", { type: "checkbox", name: "wait_for_capacity" }), " ", t("book.wait"));
  const quoteBox = h("section", { class: "quote card", "aria-labelledby": "quote-title", "aria-live": "polite" },
    h("h2", { id: "quote-title" }, t("book.quote")), h("div", { class: "quote-body" }));
  const submit = h("button", { type: "submit", class: "primary" }, t("book.confirm"));

  form.append(h("div", { class: "booking-grid" },
    h("div", {}, modelField, countField, icField, startFieldset, daysField, imageField, keyBox, nameField, waitBox),
    h("div", {}, quoteBox, submit)));

  const value = (name) => form.querySelector(`[name="${name}"]`)?.value;

  function renderCounts() {
    const model = value("gpu_model");
    const counts = [...new Set(offers.items.filter((o) => o.gpu_model === model).map((o) => o.gpu_count))].sort((a, b) => a - b);
    const wanted = Number(q.get("gpu_count"));
    const chosen = counts.includes(wanted) ? wanted : counts[counts.length - 1];
    countField.replaceChildren(field({ label: t("book.count"), name: "gpu_count", value: chosen,
      options: counts.map((c) => ({ value: c, label: String(c) })) }));
  }
  function renderImages() {
    const model = value("gpu_model");
    const fitting = images.filter((i) => i.status !== "deprecated" && (i.compatible_gpu_models || []).includes(model));
    imageField.replaceChildren(field({ label: t("book.image"), name: "image_id", hint: t("book.image_hint"),
      options: fitting.map((i) => ({ value: i.id, label: `${i.name} — ${i.os}, driver ${i.driver_version}, CUDA ${i.cuda_version}` })) }));
  }

  function body() {
    const b = {
      gpu_model: value("gpu_model"),
      gpu_count: Number(value("gpu_count")),
      interconnect: value("interconnect"),
      start: startNow.checked ? "now" : value("start_date"),
      days: Number(value("days")),
      image_id: value("image_id") || "",
      ssh_key_ids: [...form.querySelectorAll('input[name="ssh_key_ids"]:checked')].map((c) => c.value),
    };
    const name = value("name").trim();
    if (name) b.name = name;
    if (form.querySelector('input[name="wait_for_capacity"]').checked) b.wait_for_capacity = true;
    return b;
  }

  // The key follows the body: the same form sent twice is one booking; a changed form a new one.
  let key = { body: "", value: "" };
  function idempotencyKey(b) {
    const text = JSON.stringify(b);
    if (key.body !== text) key = { body: text, value: newIdempotencyKey() };
    return key.value;
  }

  let quoteTimer = null;
  let quoteSeq = 0;
  async function quote() {
    const target = quoteBox.querySelector(".quote-body");
    const seq = ++quoteSeq;
    const b = body();
    if (!b.image_id || !(b.days >= 1)) {
      target.replaceChildren();
      return;
    }
    target.replaceChildren(h("p", { class: "loading" }, h("span", { class: "spin", "aria-hidden": "true" }), t("book.quoting")));
    try {
      const quoteBody = { ...b };
      delete quoteBody.wait_for_capacity;
      const r = await post("/v1/quotes", quoteBody);
      if (seq !== quoteSeq || ctx.stale()) return;
      clearErrors(form);
      replace(target,
        h("p", { class: "summary" }, t("book.summary", { count: b.gpu_count, model: b.gpu_model,
          days: t("rental.days", { n: b.days }) })),
        h("dl", { class: "facts" },
          h("dt", {}, t("book.per_day")), h("dd", {}, money(r.price.per_day)),
          h("dt", {}, t("book.total")), h("dd", { class: "total", "data-testid": "quote-total" }, money(r.price.total))),
        r.price.discount_percent ? h("p", {}, t("book.discount", { p: r.price.discount_percent })) : null,
        h("p", { class: r.available ? "ok" : "bad" }, r.available ? t("book.available") : t("book.unavailable"),
          !r.available && r.earliest_start ? ` ${t("book.earliest", { at: dateTime(r.earliest_start) })}` : ""),
        alternatives(r.alternatives));
    } catch (err) {
      if (seq !== quoteSeq || ctx.stale()) return;
      target.replaceChildren();
      showError(form, err);
    }
  }
  function alternatives(list) {
    if (!list || !list.length) return null;
    return h("div", {}, h("p", {}, t("book.alternatives")), h("ul", {}, list.map((a) => h("li", {},
      h("a", { href: `#/book?gpu_model=${encodeURIComponent(a.gpu_model)}&gpu_count=${a.gpu_count}&start=${a.start.slice(0, 10)}&days=${value("days")}` },
        t("book.alt", { count: a.gpu_count, model: a.gpu_model, start: date(a.start) }))))));
  }
  function requote() {
    clearTimeout(quoteTimer);
    quoteTimer = setTimeout(quote, 250);
  }

  form.addEventListener("change", (e) => {
    if (e.target.name === "gpu_model") {
      renderCounts();
      renderImages();
    }
    requote();
  });
  form.addEventListener("input", (e) => {
    if (e.target.name === "days" || e.target.name === "start_date") requote();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const b = body();
    busy(submit, async () => {
      try {
        const rental = await post("/v1/rentals", b, { idempotencyKey: idempotencyKey(b) });
        ctx.go(`#/rentals/${encodeURIComponent(rental.id)}`);
      } catch (err) {
        showError(form, err);
        if (err.code === "insufficient_capacity") {
          form.querySelector(":scope > .form-error")?.append(alternatives(err.details.alternatives) || "");
        }
      }
    });
  });
  ctx.onLeave(() => clearTimeout(quoteTimer));

  renderCounts();
  renderImages();
  quote();
  return page(t("book.title"), form);
}

