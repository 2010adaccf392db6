// Administration: the images customers boot (driver and CUDA stacks): the list with the GPU
// models each runs on, publishing a new one (the API refuses a driver that cannot run its
// CUDA release: 422 incompatible_image, shown beside the CUDA field), deprecating one.
import { newIdempotencyKey, post } from "../../api.js";
import { date, strings, t } from "../../i18n.js";
import { busy, field, h, page, toast } from "../../ui.js";
import { allPages, clientError, dataTable, idCode, pointAt, section } from "./fleet.js";

strings({
  en: {
    "admin.images.title": "Images", "admin.images.list": "Published images", "admin.images.caption": "Every image, deprecated ones included",
    "admin.images.none": "No images yet.", "admin.images.name": "Name", "admin.images.os": "Operating system",
    "admin.images.driver": "Driver", "admin.images.cuda": "CUDA", "admin.images.frameworks": "Frameworks",
    "admin.images.compatible": "Runs on", "admin.images.status": "Status", "admin.images.added": "Added",
    "admin.images.status.active": "active", "admin.images.status.deprecated": "deprecated",
    "admin.images.deprecated_on": "since {date}", "admin.images.no_models": "no GPU model in the catalog",
    "admin.images.deprecate": "Deprecate", "admin.images.deprecate_named": "Deprecate {name}",
    "admin.images.confirm": "Deprecate {name}? New rentals can no longer choose it; rentals that use it keep it. This cannot be undone here.",
    "admin.images.deprecated": "{name} is deprecated.",
    "admin.images.add": "Publish an image", "admin.images.driver_hint": "The NVIDIA driver version, such as 550.54.14.",
    "admin.images.cuda_hint": "The CUDA release, such as 12.4.",
    "admin.images.frameworks_hint": "Comma separated, such as PyTorch 2.4, JAX 0.4 (at most 20).",
    "admin.images.os_placeholder": "Ubuntu 22.04", "admin.images.submit": "Publish image",
    "admin.images.added_toast": "{name} is published.",
    "admin.images.incompatible": "This driver cannot run this CUDA release: {reason}",
  },
  ru: {
    "admin.images.title": "Образы", "admin.images.list": "Опубликованные образы", "admin.images.caption": "Все образы, включая устаревшие",
    "admin.images.none": "Образов пока нет.", "admin.images.name": "Название", "admin.images.os": "Операционная система",
    "admin.images.driver": "Драйвер", "admin.images.cuda": "CUDA", "admin.images.frameworks": "Фреймворки",
    "admin.images.compatible": "Работает на", "admin.images.status": "Статус", "admin.images.added": "Добавлен",
    "admin.images.status.active": "действует", "admin.images.status.deprecated": "устарел",
    "admin.images.deprecated_on": "с {date}", "admin.images.no_models": "ни на одной модели GPU из каталога",
    "admin.images.deprecate": "Сделать устаревшим", "admin.images.deprecate_named": "Сделать устаревшим: {name}",
    "admin.images.confirm": "Сделать {name} устаревшим? Новые аренды не смогут его выбрать; текущие аренды сохранят его. Отменить это здесь нельзя.",
    "admin.images.deprecated": "{name} помечен устаревшим.",
    "admin.images.add": "Опубликовать образ", "admin.images.driver_hint": "Версия драйвера NVIDIA, например 550.54.14.",
    "admin.images.cuda_hint": "Выпуск CUDA, например 12.4.",
    "admin.images.frameworks_hint": "Через запятую, например PyTorch 2.4, JAX 0.4 (не больше 20).",
    "admin.images.os_placeholder": "Ubuntu 22.04", "admin.images.submit": "Опубликовать",
    "admin.images.added_toast": "{name} опубликован.",
    "admin.images.incompatible": "Этот драйвер не запускает этот выпуск CUDA: {reason}",
  },
});

const statusText = (s) => {
  const text = t(`admin.images.status.${s}`);
  return text.startsWith("admin.") ? s : text;
};

export async function render(ctx) {
  const controller = new AbortController();
  ctx.onLeave(() => controller.abort());
  const images = await allPages("/v1/admin/images", controller.signal);
  const listHolder = h("div", {});

  function draw(focusName = null) {
    const columns = [
      { label: t("admin.images.name"), cell: (i) => [h("span", { class: "admin-strong" }, i.name), h("br"), idCode(i.id)] },
      { label: t("admin.images.os"), cell: (i) => i.os },
      { label: t("admin.images.driver"), cell: (i) => i.driver_version },
      { label: t("admin.images.cuda"), cell: (i) => i.cuda_version },
      { label: t("admin.images.frameworks"), cell: (i) => (i.frameworks && i.frameworks.length ? i.frameworks.join(", ") : t("admin.none")) },
      { label: t("admin.images.compatible"), cell: (i) => (i.compatible_gpu_models && i.compatible_gpu_models.length
        ? h("ul", { class: "admin-lines" }, i.compatible_gpu_models.map((m) => h("li", {}, m)))
        : t("admin.images.no_models")) },
      { label: t("admin.images.status"), cell: (i) => [h("span", { class: `badge ${i.status === "active" ? "active" : ""}` }, statusText(i.status)),
        i.deprecated_at ? [" ", h("span", { class: "admin-small" }, t("admin.images.deprecated_on", { date: date(i.deprecated_at) }))] : null] },
      { label: t("admin.images.added"), cell: (i) => date(i.created_at) },
      { label: h("span", { class: "visually-hidden" }, t("admin.images.deprecate")), cell: (i) => {
        if (i.status === "deprecated") return null;
        const button = h("button", { type: "button", class: "admin-small-button", dataset: { image: i.id },
                                     "aria-label": t("admin.images.deprecate_named", { name: i.name }) }, t("admin.images.deprecate"));
        button.addEventListener("click", () => {
          if (!window.confirm(t("admin.images.confirm", { name: i.name }))) return;
          busy(button, async () => {
            const updated = await post(`/v1/admin/images/${encodeURIComponent(i.id)}/deprecate`, {},
              { idempotencyKey: newIdempotencyKey() });
            Object.assign(i, updated);
            toast(t("admin.images.deprecated", { name: i.name }));
            draw();
            listHolder.querySelector("table")?.focus();
          });
        });
        return button;
      } },
    ];
    listHolder.replaceChildren(dataTable({ caption: t("admin.images.caption"), columns, rows: images,
                                               empty: t("admin.images.none"), rowKey: (i) => i.name }));
    const table = listHolder.querySelector("table");
    if (table) table.setAttribute("tabindex", "-1");
    if (focusName) listHolder.querySelector(`tr[data-key="${CSS.escape(focusName)}"] th`)?.scrollIntoView({ block: "nearest" });
  }
  draw();

  const form = h("form", { class: "card", novalidate: true, "aria-labelledby": "admin-images-add" },
    h("h2", { id: "admin-images-add" }, t("admin.images.add")),
    h("div", { class: "admin-form-grid" },
      field({ label: t("admin.images.name"), name: "name", required: true, attrs: { maxlength: 100 } }),
      field({ label: t("admin.images.os"), name: "os", required: true, attrs: { maxlength: 100, placeholder: t("admin.images.os_placeholder") } }),
      field({ label: t("admin.images.driver"), name: "driver_version", required: true, hint: t("admin.images.driver_hint"),
              attrs: { maxlength: 32, spellcheck: "false", autocomplete: "off" } }),
      field({ label: t("admin.images.cuda"), name: "cuda_version", required: true, hint: t("admin.images.cuda_hint"),
              attrs: { maxlength: 32, spellcheck: "false", autocomplete: "off" } }),
      field({ label: t("admin.images.frameworks"), name: "frameworks", hint: t("admin.images.frameworks_hint") })),
    h("button", { type: "submit", class: "primary" }, t("admin.images.submit")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    busy(form.querySelector("button[type=submit]"), async () => {
      const body = {};
      for (const name of ["name", "os", "driver_version", "cuda_version"]) {
        body[name] = String(data.get(name) || "").trim();
        if (!body[name]) throw clientError(name, t("admin.error.required"));
      }
      body.frameworks = String(data.get("frameworks") || "").split(",").map((s) => s.trim()).filter(Boolean);
      let created;
      try {
        created = await post("/v1/admin/images", body, { idempotencyKey: newIdempotencyKey() });
      } catch (err) {
        // The driver/CUDA verdict names no field: it is about the pair, shown at the CUDA release.
        if (err.code === "incompatible_image") {
          throw clientError("cuda_version", t("admin.images.incompatible", { reason: err.details.reason || err.message }));
        }
        if (err.field && err.field.startsWith("frameworks")) throw pointAt(err, "frameworks");
        throw err;
      }
      images.push(created);
      images.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
      form.reset();
      draw(created.name);
      toast(t("admin.images.added_toast", { name: created.name }));
    }, form);
  });

  return page(t("admin.images.title"),
    section("admin-images-list", t("admin.images.list"), listHolder),
    form);
}
