// A new customer: an account and its organisation in one step, then signed in.
import { post } from "../api.js";
import { strings, t } from "../i18n.js";
import { busy, field, h, page } from "../ui.js";

strings({
  en: { "signup.title": "Create an account", "signup.email": "Email", "signup.password": "Password",
        "signup.password_hint": "At least 12 characters.", "signup.org": "Organisation name",
        "signup.submit": "Create account", "signup.have": "Already have an account?", "signup.login": "Sign in" },
  ru: { "signup.title": "Регистрация", "signup.email": "Эл. почта", "signup.password": "Пароль",
        "signup.password_hint": "Не короче 12 символов.", "signup.org": "Название организации",
        "signup.submit": "Создать аккаунт", "signup.have": "Уже есть аккаунт?", "signup.login": "Войти" },
});

export function render(ctx) {
  const form = h("form", { class: "card narrow", novalidate: true },
    field({ label: t("signup.email"), name: "email", type: "email", required: true, attrs: { autocomplete: "username" } }),
    field({ label: t("signup.password"), name: "password", type: "password", required: true,
            hint: t("signup.password_hint"), attrs: { autocomplete: "new-password" } }),
    field({ label: t("signup.org"), name: "org_name", required: true, attrs: { autocomplete: "organization" } }),
    h("button", { type: "submit", class: "primary" }, t("signup.submit")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const email = String(data.get("email")).trim();
    const password = String(data.get("password"));
    busy(form.querySelector("button[type=submit]"), async () => {
      await post("/v1/auth/signup", { email, password, org_name: String(data.get("org_name")).trim() });
      await ctx.session.signIn(email, password);
      ctx.go("#/");
    }, form);
  });
  return page(t("signup.title"), form,
    h("p", {}, t("signup.have"), " ", h("a", { href: "#/login" }, t("signup.login"))));
}
