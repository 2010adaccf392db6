// Small DOM helpers shared by every page: an element builder, labelled form fields whose
// errors appear beside them, busy buttons, tables, badges and a status toast.
"use strict";

import { t } from "./i18n.js";

// h("a", {href: "#/"}, "text", child...). Attributes starting with "on" are listeners;
// `false`/`null` attributes and children are skipped. Text is always set as text, never
// parsed as HTML, so nothing the API returns can inject markup.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (!present(child)) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// SVG elements (topology drawings, sparklines).
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined && value !== false) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

let fieldCounter = 0;

// A labelled input (or select/textarea when `options`/`multiline`), with a slot for the
// API's error about it. `name` is the API's field name, so errors find their field.
export function field({ label, name, type = "text", value = "", required = false, options = null,
                        multiline = false, hint = null, attrs = {} }) {
  const id = `f-${name}-${++fieldCounter}`;
  const errorId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : null;
  let control;
  const common = { id, name, required, "aria-describedby": [hintId, errorId].filter(Boolean).join(" "), ...attrs };
  if (options) {
    control = h("select", common, options.map((o) =>
      h("option", { value: o.value, selected: String(o.value) === String(value) }, o.label)));
  } else if (multiline) {
    control = h("textarea", { ...common, rows: 4 }, value);
  } else {
    control = h("input", { ...common, type, value });
  }
  return h("div", { class: "field", dataset: { field: name } },
    h("label", { for: id }, label, required ? h("span", { class: "req", "aria-hidden": "true" }, " *") : null),
    control,
    hint ? h("small", { id: hintId, class: "hint" }, hint) : null,
    h("div", { id: errorId, class: "field-error", role: "alert" }));
}

// Shows an ApiError beside the field it names (details.field), or at the top of the form.
export function showError(form, error) {
  clearErrors(form);
  const name = error && error.field;
  const message = describeError(error);
  const slot = name && form.querySelector(`[data-field="${CSS.escape(name)}"] .field-error`);
  if (slot) {
    slot.textContent = message;
    const control = form.querySelector(`[data-field="${CSS.escape(name)}"] [name]`);
    if (control) {
      control.setAttribute("aria-invalid", "true");
      control.focus();
    }
    return;
  }
  let box = form.querySelector(":scope > .form-error");
  if (!box) {
    box = h("div", { class: "form-error", role: "alert" });
    form.prepend(box);
  }
  box.textContent = message;
}

export function clearErrors(form) {
  form.querySelectorAll(".field-error").forEach((e) => (e.textContent = ""));
  form.querySelectorAll("[aria-invalid]").forEach((e) => e.removeAttribute("aria-invalid"));
  const box = form.querySelector(":scope > .form-error");
  if (box) box.remove();
}

// The user-facing sentence for an error: our translation of its code when we have one
// (with the details it carries), else the server's own message.
export function describeError(error) {
  if (!error) return t("error.unknown");
  const key = `error.${error.code}`;
  const text = t(key, { ...error.details, ...flatDetails(error.details) });
  // No translation, or one needing details this error lacks: the server's own sentence.
  return text === key || /\{\w+\}/.test(text) ? error.message : text;
}

function flatDetails(details = {}) {
  const out = {};
  for (const [k, v] of Object.entries(details)) {
    if (v && typeof v === "object" && "amount_minor" in v) out[k] = moneyOf(v);
  }
  return out;
}

let moneyOf = (m) => `${m.amount_minor / 100} ${m.currency}`;
export function setMoneyFormatter(fn) {
  moneyOf = fn;
}

// Runs `work` with the button disabled and marked busy; errors go to `form` when given.
export async function busy(button, work, form = null) {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  const label = button.textContent;
  button.textContent = `${label}…`;
  try {
    if (form) clearErrors(form);
    return await work();
  } catch (err) {
    if (form) showError(form, err);
    else toast(describeError(err), "error");
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
    button.textContent = label;
  }
}

export function spinner(label = t("loading")) {
  return h("p", { class: "loading", role: "status" }, h("span", { class: "spin", "aria-hidden": "true" }), label);
}

export function toast(message, kind = "info") {
  const box = document.getElementById("toast");
  box.className = `toast ${kind}`;
  box.textContent = message;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => {
    box.textContent = "";
    box.className = "";
  }, 6000);
}

// A table with a caption; `columns` = [{label, cell: row => node|string}].
export function table(caption, columns, rows, empty = t("empty")) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  // The wrapper scrolls sideways on a phone: a named region that takes focus, so a keyboard
  // can scroll it too.
  const name = caption.text || caption;
  return h("div", { class: "table-wrap", role: "region", "aria-label": name, tabindex: "0" },
    h("table", {},
      h("caption", { class: caption.visible ? "" : "visually-hidden" }, name),
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c.label)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, columns.map((c) => h("td", {}, c.cell(r))))))));
}

export function badge(text, kind) {
  return h("span", { class: `badge ${kind || text}` }, t(`state.${text}`) === `state.${text}` ? text : t(`state.${text}`));
}

// A page's content: its heading, then the children that are there (null/false left out).
export function page(title, ...children) {
  return [h("h1", { tabindex: "-1" }, title), ...children.flat(Infinity).filter(present)];
}

// el.replaceChildren, leaving out null/false children (which it would show as "null").
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function present(child) {
  return child !== null && child !== undefined && child !== false;
}

export async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {
    // Without clipboard permission: select the text so the user can copy it by hand.
    const range = document.createRange();
    const target = button && button.previousElementSibling;
    if (target) {
      range.selectNodeContents(target);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
  }
  toast(t("copied"));
}
