// The panel's shell: routes (in the URL's hash, so the server serves one page), the
// navigation for the caller's role, the language switch. Pages are modules under pages/,
// loaded when first visited; each exports `render(ctx)` returning its content.
"use strict";

import "./strings.js";
import { whenUnauthenticated } from "./api.js";
import { language, money, setLanguage, t } from "./i18n.js";
import * as session from "./session.js";
import { h, page, replace, setMoneyFormatter, spinner, describeError, toast } from "./ui.js";

setMoneyFormatter(money);

const ROUTES = [
  ["/login", "login", { public: true }],
  ["/signup", "signup", { public: true }],
  ["/", "dashboard"],
  ["/catalog", "catalog"],
  ["/book", "book"],
  ["/advisor", "advisor"],
  ["/rentals", "rentals"],
  ["/rentals/:id", "rental"],
  ["/keys", "keys"],
  ["/tokens", "tokens"],
  ["/members", "members"],
  ["/billing", "billing"],
  ["/admin", "admin/fleet", { admin: true }],
  ["/admin/nodes/:id", "admin/node", { admin: true }],
  ["/admin/images", "admin/images", { admin: true }],
  ["/admin/prices", "admin/prices", { admin: true }],
  ["/admin/orgs", "admin/orgs", { admin: true }],
  ["/admin/audit", "admin/audit", { admin: true }],
];

const CUSTOMER_NAV = [
  ["#/", "nav.dashboard"], ["#/catalog", "nav.catalog"], ["#/book", "nav.book"],
  ["#/advisor", "nav.advisor"],
  ["#/rentals", "nav.rentals"], ["#/keys", "nav.keys"], ["#/tokens", "nav.tokens"],
  ["#/members", "nav.members"], ["#/billing", "nav.billing"],
];
const ADMIN_NAV = [
  ["#/admin", "nav.admin"], ["#/admin/images", "nav.images"], ["#/admin/prices", "nav.prices"],
  ["#/admin/orgs", "nav.orgs"], ["#/admin/audit", "nav.audit"],
];

function match(path) {
  for (const [pattern, module, options] of ROUTES) {
    const names = [];
    const re = new RegExp(`^${pattern.replace(/:(\w+)/g, (m, n) => (names.push(n), "([^/]+)"))}$`);
    const m = path.match(re);
    if (m) {
      const params = {};
      names.forEach((n, i) => (params[n] = decodeURIComponent(m[i + 1])));
      return { module, params, options: options || {} };
    }
  }
  return null;
}

export function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function renderNav() {
  const nav = document.getElementById("nav");
  const who = document.getElementById("who");
  const me = session.current();
  const here = `#${(location.hash.slice(1) || "/").split("?")[0]}`;
  const link = ([href, key]) =>
    h("a", { href, "aria-current": href === here ? "page" : false }, t(key));
  nav.replaceChildren();
  who.replaceChildren();
  if (!me) {
    nav.append(h("ul", {}, [["#/login", "nav.login"], ["#/signup", "nav.signup"]].map((l) => h("li", {}, link(l)))));
    return;
  }
  nav.append(h("ul", {}, CUSTOMER_NAV.map((l) => h("li", {}, link(l)))));
  if (session.isAdmin()) {
    nav.append(h("ul", { class: "admin-nav", "aria-label": t("nav.admin_section") },
      ADMIN_NAV.map((l) => h("li", {}, link(l)))));
  }
  const orgs = session.organisations();
  if (orgs.length > 1) {
    const select = h("select", { id: "org-switch", onchange: async () => {
      const chosen = orgs.find((o) => o.id === select.value);
      try {
        await session.switchOrg(select.value);
        toast(t("nav.org_switched", { name: chosen.name }));
        go("#/");
      } catch (err) {
        toast(describeError(err));
        renderNav();
      }
    } }, orgs.map((o) => h("option", { value: o.id, selected: o.current }, o.name)));
    who.append(h("label", { class: "org-switch" },
      h("span", { class: "visually-hidden" }, t("nav.org")), select), " ");
  }
  who.append(h("span", { class: "email" }, me.user.email), " ",
    h("button", { type: "button", class: "link", onclick: async () => {
      await session.signOut();
      go("#/login");
    } }, t("nav.logout")));
}

let leaving = [];
let rendered = 0;
let generation = 0;

async function render() {
  const main = document.getElementById("main");
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  for (const fn of leaving) fn();
  leaving = [];
  const mine = ++generation;
  const route = match(path || "/");
  renderNav();
  if (!route) {
    main.replaceChildren(...page(t("notfound.title"), h("p", {}, t("notfound.text"))));
    return;
  }
  if (!route.options.public && !session.current()) {
    sessionStorage.setItem("gpurent.after", location.hash);
    go("#/login");
    return;
  }
  if (route.options.admin && !session.isAdmin()) {
    main.replaceChildren(...page(t("forbidden.title"), h("p", {}, t("forbidden.text"))));
    return;
  }
  main.setAttribute("aria-busy", "true");
  main.replaceChildren(spinner());
  const ctx = {
    params: route.params,
    query: new URLSearchParams(query || ""),
    session,
    go,
    // A page's timers and long polls stop when the user leaves it.
    onLeave: (fn) => leaving.push(fn),
    stale: () => mine !== generation,
    rerender: render,
  };
  try {
    const module = await import(`./pages/${route.module}.js`);
    const content = await module.render(ctx);
    if (ctx.stale()) return;
    replace(main, content);
    // After a navigation, focus moves to the new page's heading (screen readers announce it);
    // not on the first load, where the browser's own start is expected.
    const heading = main.querySelector("h1");
    if (heading && rendered > 0) heading.focus({ preventScroll: false });
    rendered++;
  } catch (err) {
    if (ctx.stale() || err.status === 401) return;
    main.replaceChildren(...page(t("error.unknown"), h("p", { role: "alert" }, describeError(err))));
  } finally {
    if (!ctx.stale()) main.removeAttribute("aria-busy");
  }
}

whenUnauthenticated(() => {
  session.forget();
  sessionStorage.setItem("gpurent.after", location.hash);
  go("#/login");
});

const languageSelect = document.getElementById("lang");
languageSelect.value = language();
languageSelect.addEventListener("change", () => {
  setLanguage(languageSelect.value);
  document.querySelectorAll("[data-i18n]").forEach((el) => (el.textContent = t(el.dataset.i18n)));
  render();
});
document.querySelectorAll("[data-i18n]").forEach((el) => (el.textContent = t(el.dataset.i18n)));

window.addEventListener("hashchange", render);
document.querySelector(".skip").addEventListener("click", (event) => {
  event.preventDefault();  // the hash is the route; the skip link only moves focus
  document.getElementById("main").focus();
});

(async () => {
  try {
    await session.load();
  } catch (err) {
    // The server is down: the pages say so when they load.
  }
  render();
})();
