// API tokens of the organisation: the list (never a secret), creating one with scopes, an
// expiry and guardrails for automation (its secret shown once), revoking one.
import { all, del, get, post } from "../api.js";
import { dateTime, money, strings, t } from "../i18n.js";
import { busy, copyText, field, h, page, table, toast } from "../ui.js";
import { confirmInline, fieldError, stackable } from "../rows.js";

strings({
  en: {
    "tokens.title": "API tokens",
    "tokens.intro": "Tokens let scripts, CI pipelines and the gpurent CLI use the API for your organisation. Send one as “Authorization: Bearer <token>”.",
    "tokens.list": "Active tokens", "tokens.caption": "API tokens of the organisation",
    "tokens.none": "No API tokens yet.",
    "tokens.col.name": "Name", "tokens.col.scopes": "Scopes", "tokens.col.limits": "Limits",
    "tokens.col.created": "Created", "tokens.col.expires": "Expires", "tokens.col.used": "Last used",
    "tokens.col.actions": "Actions",
    "tokens.by": "by {who}", "tokens.never_expires": "Never", "tokens.never_used": "Never",
    "tokens.no_limits": "None",
    "tokens.limit.gpus": { one: "At most {n} GPU at once", other: "At most {n} GPUs at once" },
    "tokens.limit.days": { one: "Rentals of at most {n} day", other: "Rentals of at most {n} days" },
    "tokens.limit.spend": "Spends at most {amount} a month",
    "tokens.create_title": "Create a token",
    "tokens.name": "Name", "tokens.name_hint": "What uses it, e.g. “nightly training CI”.",
    "tokens.scopes": "What the token may do", "tokens.scopes_hint": "Only the permissions you have yourself are offered.",
    "tokens.scope.rentals:read": "See rentals",
    "tokens.scope.rentals:write": "Book, extend and end rentals",
    "tokens.scope.billing:read": "See the balance, transactions and invoices",
    "tokens.scope.ssh-keys:write": "Add and delete SSH keys",
    "tokens.scope.members:write": "Manage members and read the audit log",
    "tokens.scope.tokens:write": "Create and revoke API tokens",
    "tokens.scope.admin": "Platform administration (you are a platform admin)",
    "tokens.expires": "Expires after (days)", "tokens.expires_hint": "Whole days. Leave empty for a token that never expires.",
    "tokens.guardrails": "Guardrails (optional)",
    "tokens.guardrails_hint": "A request beyond a guardrail is refused, so a runaway script cannot book or spend without limit.",
    "tokens.max_gpus": "Most GPUs rented at once", "tokens.max_days": "Longest rental (days)",
    "tokens.spend": "Monthly spending limit ({currency})", "tokens.spend_hint": "Per calendar month, e.g. 50000 or 50000.50.",
    "tokens.create": "Create token",
    "tokens.need_name": "Give the token a name.", "tokens.need_scope": "Choose at least one permission.",
    "tokens.whole_number": "Enter a whole number.",
    "tokens.bad_amount": "Enter an amount such as 50000 or 50000.50.",
    "tokens.bad_field": "This {reason}.",
    "tokens.secret_title": "Your new token “{name}”",
    "tokens.secret_warning": "Copy the token now and keep it somewhere safe. It will not be shown again: if you lose it, revoke it and create a new one.",
    "tokens.secret_label": "Token",
    "tokens.secret_use": "Use it in the header:",
    "tokens.secret_done": "I have saved it",
    "tokens.created": "Token “{name}” created.",
    "tokens.revoke": "Revoke", "tokens.revoke_label": "Revoke token {name}",
    "tokens.confirm": "Revoke “{name}”? Anything using it stops working at once.",
    "tokens.confirm_yes": "Yes, revoke", "tokens.confirm_yes_label": "Yes, revoke token {name}",
    "tokens.revoked": "Token “{name}” revoked.",
    "tokens.readonly": "Your role can see the tokens but not create or revoke them.",
  },
  ru: {
    "tokens.title": "API-токены",
    "tokens.intro": "Токены позволяют скриптам, CI-конвейерам и CLI gpurent работать с API от имени организации. Передавайте токен в заголовке «Authorization: Bearer <токен>».",
    "tokens.list": "Действующие токены", "tokens.caption": "API-токены организации",
    "tokens.none": "API-токенов пока нет.",
    "tokens.col.name": "Название", "tokens.col.scopes": "Права", "tokens.col.limits": "Ограничения",
    "tokens.col.created": "Создан", "tokens.col.expires": "Истекает", "tokens.col.used": "Последнее использование",
    "tokens.col.actions": "Действия",
    "tokens.by": "автор: {who}", "tokens.never_expires": "Бессрочно", "tokens.never_used": "Не использовался",
    "tokens.no_limits": "Нет",
    "tokens.limit.gpus": { one: "Не больше {n} GPU одновременно", few: "Не больше {n} GPU одновременно",
                           many: "Не больше {n} GPU одновременно", other: "Не больше {n} GPU одновременно" },
    "tokens.limit.days": { one: "Аренда не дольше {n} дня", few: "Аренда не дольше {n} дней",
                           many: "Аренда не дольше {n} дней", other: "Аренда не дольше {n} дня" },
    "tokens.limit.spend": "Расходы не больше {amount} в месяц",
    "tokens.create_title": "Создать токен",
    "tokens.name": "Название", "tokens.name_hint": "Что будет им пользоваться, например «ночной CI обучения».",
    "tokens.scopes": "Что разрешено токену", "tokens.scopes_hint": "Можно выдать только те права, что есть у вас.",
    "tokens.scope.rentals:read": "Просматривать аренды",
    "tokens.scope.rentals:write": "Бронировать, продлевать и завершать аренды",
    "tokens.scope.billing:read": "Видеть баланс, операции и счета",
    "tokens.scope.ssh-keys:write": "Добавлять и удалять SSH-ключи",
    "tokens.scope.members:write": "Управлять участниками и читать журнал аудита",
    "tokens.scope.tokens:write": "Создавать и отзывать API-токены",
    "tokens.scope.admin": "Администрирование платформы (вы администратор платформы)",
    "tokens.expires": "Срок действия (дней)", "tokens.expires_hint": "Целое число дней. Оставьте пустым для бессрочного токена.",
    "tokens.guardrails": "Ограничения (необязательно)",
    "tokens.guardrails_hint": "Запрос сверх ограничения отклоняется, и вышедший из-под контроля скрипт не сможет бронировать и тратить без предела.",
    "tokens.max_gpus": "Не больше GPU одновременно", "tokens.max_days": "Самая длинная аренда (дней)",
    "tokens.spend": "Лимит расходов в месяц ({currency})", "tokens.spend_hint": "За календарный месяц, например 50000 или 50000,50.",
    "tokens.create": "Создать токен",
    "tokens.need_name": "Дайте токену название.", "tokens.need_scope": "Выберите хотя бы одно право.",
    "tokens.whole_number": "Введите целое число.",
    "tokens.bad_amount": "Введите сумму, например 50000 или 50000,50.",
    "tokens.bad_field": "Значение не принято: {reason}.",
    "tokens.secret_title": "Ваш новый токен «{name}»",
    "tokens.secret_warning": "Скопируйте токен сейчас и сохраните в надёжном месте. Больше он показан не будет: если потеряете, отзовите его и создайте новый.",
    "tokens.secret_label": "Токен",
    "tokens.secret_use": "Передавайте его в заголовке:",
    "tokens.secret_done": "Я сохранил токен",
    "tokens.created": "Токен «{name}» создан.",
    "tokens.revoke": "Отозвать", "tokens.revoke_label": "Отозвать токен {name}",
    "tokens.confirm": "Отозвать «{name}»? Всё, что его использует, сразу перестанет работать.",
    "tokens.confirm_yes": "Да, отозвать", "tokens.confirm_yes_label": "Да, отозвать токен {name}",
    "tokens.revoked": "Токен «{name}» отозван.",
    "tokens.readonly": "Ваша роль позволяет видеть токены, но не создавать и не отзывать их.",
  },
});

const SCOPE_ORDER = ["rentals:read", "rentals:write", "billing:read", "ssh-keys:write", "members:write",
                     "tokens:write", "admin"];

export async function render(ctx) {
  const canWrite = ctx.session.can("tokens:write");
  const me = ctx.session.current();
  const listHeading = h("h2", { id: "tokens-list", tabindex: "-1" }, t("tokens.list"));
  const list = h("div", { class: "tokens-list" });
  const secretSlot = h("div", {});

  // Who created a token: an email from the member list (which any member may read).
  const [emails, currency] = await Promise.all([memberEmails(), platformCurrency(ctx)]);

  async function refresh() {
    const tokens = await all("/v1/api-tokens");
    if (ctx.stale()) return;
    list.replaceChildren(tokenTable(tokens));
  }

  function tokenTable(tokens) {
    const columns = [
      { label: t("tokens.col.name"), cell: (k) => [h("strong", {}, k.name), h("br"), h("code", { class: "muted" }, `${k.prefix}…`)] },
      { label: t("tokens.col.scopes"), cell: (k) => h("ul", { class: "scope-list" },
        (k.scopes || []).map((s) => h("li", {}, h("code", { title: t(`tokens.scope.${s}`) }, s)))) },
      { label: t("tokens.col.limits"), cell: (k) => limits(k, currency) },
      { label: t("tokens.col.created"), cell: (k) => [dateTime(k.created_at),
        k.created_by ? h("div", { class: "muted" }, t("tokens.by", { who: emails.get(k.created_by) || k.created_by })) : null] },
      { label: t("tokens.col.expires"), cell: (k) => (k.expires_at ? dateTime(k.expires_at) : t("tokens.never_expires")) },
      { label: t("tokens.col.used"), cell: (k) => (k.last_used_at ? dateTime(k.last_used_at) : t("tokens.never_used")) },
    ];
    if (canWrite) columns.push({ label: t("tokens.col.actions"), cell: (k) => actions(k) });
    return stackable(table(t("tokens.caption"), columns, tokens, t("tokens.none")));
  }

  function actions(token) {
    const box = h("div", { class: "row-actions" });
    const start = h("button", { type: "button", "aria-label": t("tokens.revoke_label", { name: token.name }) }, t("tokens.revoke"));
    start.addEventListener("click", () => confirmInline(box, {
      question: t("tokens.confirm", { name: token.name }),
      yes: t("tokens.confirm_yes"),
      yesLabel: t("tokens.confirm_yes_label", { name: token.name }),
      restore: start,
      work: async () => {
        await del(`/v1/api-tokens/${encodeURIComponent(token.id)}`);
        toast(t("tokens.revoked", { name: token.name }));
        await refresh();
        listHeading.focus();
      },
    }));
    box.append(start);
    return box;
  }

  await refresh();

  const children = [h("p", { class: "lead" }, t("tokens.intro")), secretSlot, listHeading, list];
  if (canWrite) {
    children.push(createForm({ scopes: (me && me.scopes) || [], currency, secretSlot, refresh }));
  } else {
    children.push(h("p", { class: "alert info" }, t("tokens.readonly")));
  }
  return page(t("tokens.title"), ...children);
}

function limits(token, currency) {
  const out = [];
  if (token.max_concurrent_gpus !== null && token.max_concurrent_gpus !== undefined) {
    out.push(t("tokens.limit.gpus", { n: token.max_concurrent_gpus }));
  }
  if (token.max_days !== null && token.max_days !== undefined) out.push(t("tokens.limit.days", { n: token.max_days }));
  if (token.spend_limit_minor !== null && token.spend_limit_minor !== undefined) {
    out.push(t("tokens.limit.spend", { amount: money({ amount_minor: token.spend_limit_minor, currency }) }));
  }
  if (!out.length) return h("span", { class: "muted" }, t("tokens.no_limits"));
  return h("ul", { class: "plain" }, out.map((text) => h("li", {}, text)));
}

function createForm({ scopes, currency, secretSlot, refresh }) {
  const offered = SCOPE_ORDER.filter((s) => scopes.includes(s));
  const scopesHint = "tokens-scopes-hint";
  const scopesError = "tokens-scopes-error";
  const scopeBoxes = h("fieldset", { class: "field scopes", dataset: { field: "scopes" } },
    h("legend", {}, t("tokens.scopes"), h("span", { class: "req", "aria-hidden": "true" }, " *")),
    h("small", { id: scopesHint, class: "hint" }, t("tokens.scopes_hint")),
    h("ul", { class: "checks" }, offered.map((s, i) => {
      const id = `tokens-scope-${i}`;
      return h("li", {},
        h("input", { type: "checkbox", id, name: "scopes", value: s, checked: s === "rentals:read",
                     "aria-describedby": `${scopesHint} ${scopesError}` }),
        h("label", { for: id }, t(`tokens.scope.${s}`), " ", h("code", {}, s)));
    })),
    h("div", { id: scopesError, class: "field-error", role: "alert" }));

  const nameField = field({ label: t("tokens.name"), name: "name", required: true, hint: t("tokens.name_hint"),
                            attrs: { maxlength: 200, autocomplete: "off" } });
  const expiresField = field({ label: t("tokens.expires"), name: "expires_in_days", type: "number", value: "90",
                               hint: t("tokens.expires_hint"), attrs: { min: 1, step: 1, inputmode: "numeric" } });
  const gpusField = field({ label: t("tokens.max_gpus"), name: "max_concurrent_gpus", type: "number",
                            attrs: { min: 0, step: 1, inputmode: "numeric" } });
  const daysField = field({ label: t("tokens.max_days"), name: "max_days", type: "number",
                            attrs: { min: 1, step: 1, inputmode: "numeric" } });
  const spendField = field({ label: t("tokens.spend", { currency }), name: "spend_limit", hint: t("tokens.spend_hint"),
                             attrs: { inputmode: "decimal", autocomplete: "off" } });
  const guardrails = h("fieldset", { class: "group", "aria-describedby": "tokens-guardrails-hint" },
    h("legend", {}, t("tokens.guardrails")),
    h("p", { id: "tokens-guardrails-hint", class: "hint" }, t("tokens.guardrails_hint")),
    h("div", { class: "grid-fields" }, gpusField, daysField, spendField));

  const submit = h("button", { type: "submit", class: "primary" }, t("tokens.create"));
  const form = h("form", { class: "card account-form", novalidate: true },
    nameField, scopeBoxes, expiresField, guardrails, submit);
  const input = (name) => form.querySelector(`[name="${name}"]`);

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(submit, async () => {
      const body = { name: input("name").value.trim() };
      if (!body.name) throw fieldError("name", t("tokens.need_name"));
      body.scopes = [...form.querySelectorAll('input[name="scopes"]:checked')].map((c) => c.value);
      if (!body.scopes.length) throw fieldError("scopes", t("tokens.need_scope"));
      // The ranges are the server's (core/limits.h, stated in the OpenAPI document): its 400
      // names the field and is shown beside it.
      const days = wholeNumber(input("expires_in_days"));
      if (days !== null) body.expires_in_days = days;
      const gpus = wholeNumber(input("max_concurrent_gpus"));
      if (gpus !== null) body.max_concurrent_gpus = gpus;
      const maxDays = wholeNumber(input("max_days"));
      if (maxDays !== null) body.max_days = maxDays;
      const spend = amountMinor(input("spend_limit"), currency);
      if (spend !== null) body.spend_limit = { amount_minor: spend, currency };
      let created;
      try {
        created = await post("/v1/api-tokens", body);
      } catch (err) {
        throw friendlier(err);
      }
      form.reset();
      showSecret(secretSlot, created, () => input("name").focus());
      toast(t("tokens.created", { name: created.name }));
      await refresh();
    }, form);
  });
  return h("div", {}, h("h2", {}, t("tokens.create_title")), form);
}

// The secret, once: a copyable box and a warning; "I have saved it" takes it off the page.
function showSecret(slot, created, after) {
  const heading = h("h2", { tabindex: "-1" }, t("tokens.secret_title", { name: created.name }));
  const secret = h("pre", { class: "copyable secret", "aria-label": t("tokens.secret_label"), "data-testid": "token-secret" },
    created.token);
  const copy = h("button", { type: "button", class: "primary" }, t("copy"));
  copy.addEventListener("click", () => copyText(created.token, copy));
  const done = h("button", { type: "button" }, t("tokens.secret_done"));
  done.addEventListener("click", () => {
    slot.replaceChildren();
    after();
  });
  slot.replaceChildren(h("div", { class: "card secret-box" },
    heading,
    h("p", { class: "alert warn" }, t("tokens.secret_warning")),
    h("div", { class: "secret-copy" }, secret, copy),
    h("p", {}, t("tokens.secret_use"), " ", h("code", { class: "wrap" }, `Authorization: Bearer ${created.token}`)),
    h("div", { class: "toolbar" }, done)));
  heading.focus();
}

// A number input's whole value, null when empty; else an error beside it.
function wholeNumber(control) {
  const text = control.value.trim();
  if (!text && !control.validity.badInput) return null;
  if (!/^\d+$/.test(text)) throw fieldError(control.name, t("tokens.whole_number"));
  return Number(text);
}

// "50 000,50" or "50000.50" in the currency's major unit → integer minor units, exactly
// (by digits, never by floating point); null when empty.
function amountMinor(control, currency) {
  const text = control.value.replace(/[\s\u00a0\u202f']/g, "").replace(",", ".");
  if (!text) return null;
  const digits = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits;
  const m = text.match(digits ? new RegExp(`^(\\d+)(?:\\.(\\d{0,${digits}}))?$`) : /^(\d+)$/);
  if (!m) throw fieldError(control.name, t("tokens.bad_amount"));
  const minor = BigInt(m[1]) * 10n ** BigInt(digits) + BigInt((m[2] || "").padEnd(digits, "0") || "0");
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw fieldError(control.name, t("tokens.bad_amount"));
  return Number(minor);
}

// The platform bills in one currency, which the token list does not name: read it from the
// balance (billing:read) or from the price list, which every member may read.
async function platformCurrency(ctx) {
  try {
    if (ctx.session.can("billing:read")) return (await get("/v1/billing/balance")).balance.currency;
    const offers = await get("/v1/offers");
    const priced = (offers.items || []).find((o) => o.price_per_day);
    if (priced) return priced.price_per_day.currency;
  } catch (err) {
    // Fall through to the platform's default.
  }
  return "RUB";
}

async function memberEmails() {
  try {
    return new Map((await all("/v1/members")).map((m) => [m.user_id, m.email]));
  } catch (err) {
    return new Map();
  }
}

// Guardrail errors name the money's parts (spend_limit.amount_minor); the form has one field.
function friendlier(err) {
  if (err && err.code === "invalid_request" && err.field) {
    const name = err.field.split(".")[0];
    const reason = err.details.reason;
    return fieldError(name, reason ? t("tokens.bad_field", { reason }) : err.message);
  }
  return err;
}

