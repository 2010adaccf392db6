// Sign in with email and password; back to where the user was going.
import { strings, t } from "../i18n.js";
import { busy, field, h, page } from "../ui.js";

strings({
  en: { "login.title": "Sign in", "login.email": "Email", "login.password": "Password",
        "login.submit": "Sign in", "login.new": "New here?", "login.signup": "Create an account" },
  ru: { "login.title": "Вход", "login.email": "Эл. почта", "login.password": "Пароль",
        "login.submit": "Войти", "login.new": "Впервые здесь?", "login.signup": "Создать аккаунт" },
});

export function render(ctx) {
  const form = h("form", { class: "card narrow", novalidate: true },
    field({ label: t("login.email"), name: "email", type: "email", required: true, attrs: { autocomplete: "username" } }),
    field({ label: t("login.password"), name: "password", type: "password", required: true, attrs: { autocomplete: "current-password" } }),
    h("button", { type: "submit", class: "primary" }, t("login.submit")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    busy(form.querySelector("button[type=submit]"), async () => {
      await ctx.session.signIn(String(data.get("email")).trim(), String(data.get("password")));
      const after = sessionStorage.getItem("gpurent.after");
      sessionStorage.removeItem("gpurent.after");
      ctx.go(after && !after.startsWith("#/login") && !after.startsWith("#/signup") ? after : "#/");
    }, form);
  });
  return page(t("login.title"), form,
    h("p", {}, t("login.new"), " ", h("a", { href: "#/signup" }, t("login.signup"))));
}
