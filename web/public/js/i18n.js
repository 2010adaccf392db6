// Russian and English. Each page module registers its own strings with `strings()`, so pages
// never collide; `t()` looks a key up in the chosen language, then English, then shows the
// key itself (a missing translation is visible, never a blank). Dates, times and money are
// formatted for the chosen locale with Intl.
"use strict";

const dictionaries = { en: {}, ru: {} };
const STORAGE_KEY = "gpurent.lang";
const LOCALES = { en: "en-GB", ru: "ru-RU" };

export function strings(bundle) {
  for (const [lang, entries] of Object.entries(bundle)) Object.assign(dictionaries[lang], entries);
}

// First visit: the first of the browser's languages (its Accept-Language) that we speak.
function initialLanguage() {
  const saved = localStorage.getItem(STORAGE_KEY);
  if (saved in dictionaries) return saved;
  for (const tag of navigator.languages || [navigator.language || "en"]) {
    const base = tag.toLowerCase().split("-")[0];
    if (base in dictionaries) return base;
  }
  return "en";
}

let current = initialLanguage();

export function language() {
  return current;
}

export function locale() {
  return LOCALES[current];
}

export function setLanguage(lang) {
  if (!(lang in dictionaries)) return;
  current = lang;
  localStorage.setItem(STORAGE_KEY, lang);
  document.documentElement.lang = lang;
}

// t("rental.days", {n: 3}); plural forms: a key whose value is an object {one, few, many,
// other} is chosen by Intl.PluralRules for params.n.
export function t(key, params = {}) {
  let text = dictionaries[current][key] ?? dictionaries.en[key] ?? key;
  if (typeof text === "object") {
    const form = new Intl.PluralRules(locale()).select(params.n ?? 0);
    text = text[form] ?? text.other;
  }
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
}

// {amount_minor, currency} → "1 234,00 ₽" / "₽1,234.00".
export function money(m) {
  if (!m || typeof m.amount_minor !== "number") return "—";
  const format = new Intl.NumberFormat(locale(), {
    style: "currency",
    currency: m.currency || "RUB",
    currencyDisplay: "narrowSymbol",
  });
  const digits = format.resolvedOptions().maximumFractionDigits;
  return format.format(m.amount_minor / 10 ** digits);
}

// "2026-12-01" (a calendar day) → "1 Dec 2026" / "1 дек. 2026 г."
export function date(day) {
  if (!day) return "—";
  const [y, m, d] = day.slice(0, 10).split("-").map(Number);
  return new Intl.DateTimeFormat(locale(), { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" })
    .format(new Date(Date.UTC(y, m - 1, d)));
}

// An RFC 3339 time → local date and time of the viewer.
export function dateTime(at) {
  if (!at) return "—";
  return new Intl.DateTimeFormat(locale(), { dateStyle: "medium", timeStyle: "short" }).format(new Date(at));
}

export function number(n, digits = 0) {
  if (n === null || n === undefined) return "—";
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: digits }).format(n);
}

document.documentElement.lang = current;
