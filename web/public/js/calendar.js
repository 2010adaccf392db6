// The availability calendar: how many rentals of one shape can start on each of the next
// days, as a month-like grid (weeks in rows), each day a link to book from that day.
import { get } from "./api.js";
import { strings, t, locale } from "./i18n.js";
import { h } from "./ui.js";

strings({
  en: { "cal.caption": "Availability of {count}× {model}, by start day",
        "cal.free": { one: "{n} free", other: "{n} free" }, "cal.none": "full",
        "cal.book": "Book from this day" },
  ru: { "cal.caption": "Доступность {count}× {model} по дням начала",
        "cal.free": { one: "{n} свободна", few: "{n} свободны", many: "{n} свободно", other: "{n} свободно" },
        "cal.none": "занято", "cal.book": "Арендовать с этого дня" },
});

export async function calendar(model, count, days = 28) {
  const data = await get(`/v1/availability?gpu_model=${encodeURIComponent(model)}&gpu_count=${count}&days=${days}`);
  const dayFormat = new Intl.DateTimeFormat(locale(), { day: "numeric", month: "short", timeZone: "UTC" });
  const weekday = new Intl.DateTimeFormat(locale(), { weekday: "short", timeZone: "UTC" });
  const cells = data.days.map((d) => {
    const [y, m, dd] = d.date.split("-").map(Number);
    const when = new Date(Date.UTC(y, m - 1, dd));
    const free = d.available > 0 ? t("cal.free", { n: d.available }) : t("cal.none");
    const level = d.available === 0 ? "none" : d.available < 3 ? "few" : "many";
    // The link's name is its visible text (weekday, date, how many are free) and a hidden
    // sentence after it, so what a screen reader says matches what is shown.
    return { when, el: h("li", { class: `day ${level}` },
      // The site's today, its midnight gone, is booked from now: a booking by that date is late.
      h("a", { href: `#/book?gpu_model=${encodeURIComponent(model)}&gpu_count=${count}&start=${d.from_now ? "now" : d.date}` },
        h("span", { class: "dow" }, weekday.format(when)), " ",
        h("span", { class: "dom" }, dayFormat.format(when)), h("span", { class: "visually-hidden" }, ": "),
        h("span", { class: "free" }, free), h("span", { class: "visually-hidden" }, `. ${t("cal.book")}`))) };
  });
  // Monday-first weeks: blank cells before the first day.
  const lead = cells.length ? (cells[0].when.getUTCDay() + 6) % 7 : 0;
  return h("figure", { class: "calendar" },
    h("figcaption", {}, t("cal.caption", { count, model })),
    h("ol", { class: "days" },
      Array.from({ length: lead }, () => h("li", { class: "blank", "aria-hidden": "true" })),
      cells.map((c) => c.el)));
}
