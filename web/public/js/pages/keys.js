// SSH keys of the organisation: the list, adding a public key, removing one (after a
// confirmation in the key's own row).
import { all, del, post } from "../api.js";
import { dateTime, strings, t } from "../i18n.js";
import { busy, field, h, page, table, toast } from "../ui.js";
import { confirmInline, fieldError, stackable } from "../rows.js";

strings({
  en: {
    "keys.title": "SSH keys",
    "keys.intro": "Keys you add here can be installed on the GPU servers you rent, so you can log in with ssh.",
    "keys.list": "Your organisation's keys", "keys.caption": "SSH keys of the organisation",
    "keys.none": "No SSH keys yet. Add one below to log in to your rentals.",
    "keys.col.name": "Name", "keys.col.type": "Type", "keys.col.fingerprint": "Fingerprint",
    "keys.col.added": "Added", "keys.col.actions": "Actions",
    "keys.bits": { one: "{n} bit", other: "{n} bits" },
    "keys.add_title": "Add a key", "keys.name": "Name", "keys.name_hint": "For example, the laptop the key lives on.",
    "keys.public_key": "Public key",
    "keys.public_key_hint": "Paste the contents of the .pub file, e.g. ~/.ssh/id_ed25519.pub. Never paste the private key.",
    "keys.add": "Add key", "keys.added": "Key “{name}” added.",
    "keys.need_name": "Give the key a name.", "keys.need_key": "Paste a public key.",
    "keys.bad_key": "This key {reason}.", "keys.bad_field": "This {reason}.",
    "keys.delete": "Delete", "keys.delete_label": "Delete key {name}",
    "keys.confirm": "Delete key “{name}”? Rentals booked with it keep it until they end.",
    "keys.confirm_yes": "Yes, delete", "keys.confirm_yes_label": "Yes, delete key {name}",
    "keys.deleted": "Key “{name}” deleted.",
    "keys.readonly": "Your role can see the keys but not add or delete them; ask an owner, admin or member of the organisation.",
  },
  ru: {
    "keys.title": "SSH-ключи",
    "keys.intro": "Добавленные здесь ключи устанавливаются на арендованные GPU-серверы, чтобы вы могли войти по ssh.",
    "keys.list": "Ключи организации", "keys.caption": "SSH-ключи организации",
    "keys.none": "SSH-ключей пока нет. Добавьте ключ ниже, чтобы входить на арендованные серверы.",
    "keys.col.name": "Название", "keys.col.type": "Тип", "keys.col.fingerprint": "Отпечаток",
    "keys.col.added": "Добавлен", "keys.col.actions": "Действия",
    "keys.bits": { one: "{n} бит", few: "{n} бита", many: "{n} бит", other: "{n} бита" },
    "keys.add_title": "Добавить ключ", "keys.name": "Название",
    "keys.name_hint": "Например, ноутбук, на котором хранится ключ.",
    "keys.public_key": "Открытый ключ",
    "keys.public_key_hint": "Вставьте содержимое файла .pub, например ~/.ssh/id_ed25519.pub. Никогда не вставляйте закрытый ключ.",
    "keys.add": "Добавить ключ", "keys.added": "Ключ «{name}» добавлен.",
    "keys.need_name": "Дайте ключу название.", "keys.need_key": "Вставьте открытый ключ.",
    "keys.bad_key": "Ключ не принят: {reason}.", "keys.bad_field": "Значение не принято: {reason}.",
    "keys.delete": "Удалить", "keys.delete_label": "Удалить ключ {name}",
    "keys.confirm": "Удалить ключ «{name}»? Аренды, созданные с ним, сохранят его до своего окончания.",
    "keys.confirm_yes": "Да, удалить", "keys.confirm_yes_label": "Да, удалить ключ {name}",
    "keys.deleted": "Ключ «{name}» удалён.",
    "keys.readonly": "Ваша роль позволяет видеть ключи, но не добавлять и не удалять их; обратитесь к владельцу, администратору или участнику организации.",
  },
});

export async function render(ctx) {
  const canWrite = ctx.session.can("ssh-keys:write");
  const listHeading = h("h2", { id: "keys-list", tabindex: "-1" }, t("keys.list"));
  const list = h("div", { class: "keys-list" });

  async function refresh() {
    const keys = await all("/v1/ssh-keys");
    if (ctx.stale()) return;
    list.replaceChildren(keyTable(keys));
  }

  function keyTable(keys) {
    const columns = [
      { label: t("keys.col.name"), cell: (k) => h("strong", {}, k.name) },
      { label: t("keys.col.type"), cell: (k) => [k.type, k.bits ? h("span", { class: "muted" }, ` · ${t("keys.bits", { n: k.bits })}`) : null] },
      { label: t("keys.col.fingerprint"), cell: (k) => h("code", { class: "fingerprint" }, k.fingerprint) },
      { label: t("keys.col.added"), cell: (k) => dateTime(k.created_at) },
    ];
    if (canWrite) columns.push({ label: t("keys.col.actions"), cell: (k) => actions(k) });
    return stackable(table(t("keys.caption"), columns, keys, t("keys.none")));
  }

  function actions(key) {
    const box = h("div", { class: "row-actions" });
    const start = h("button", { type: "button", "aria-label": t("keys.delete_label", { name: key.name }) }, t("keys.delete"));
    start.addEventListener("click", () => confirmInline(box, {
      question: t("keys.confirm", { name: key.name }),
      yes: t("keys.confirm_yes"),
      yesLabel: t("keys.confirm_yes_label", { name: key.name }),
      restore: start,
      work: async () => {
        await del(`/v1/ssh-keys/${encodeURIComponent(key.id)}`);
        toast(t("keys.deleted", { name: key.name }));
        await refresh();
        listHeading.focus();
      },
    }));
    box.append(start);
    return box;
  }

  await refresh();

  const children = [h("p", { class: "lead" }, t("keys.intro")), listHeading, list];
  if (canWrite) children.push(addForm(refresh));
  else children.push(h("p", { class: "alert info" }, t("keys.readonly")));
  return page(t("keys.title"), ...children);
}

function addForm(refresh) {
  const nameField = field({ label: t("keys.name"), name: "name", required: true, hint: t("keys.name_hint"),
                            attrs: { maxlength: 200, autocomplete: "off" } });
  const keyField = field({ label: t("keys.public_key"), name: "public_key", multiline: true, required: true,
                           hint: t("keys.public_key_hint"),
                           attrs: { class: "mono", spellcheck: "false", autocapitalize: "off", autocomplete: "off",
                                    placeholder: "ssh-ed25519 AAAAC3Nza… user@host" } });
  const nameInput = nameField.querySelector("input");
  const keyInput = keyField.querySelector("textarea");
  // A key's comment (user@host) is a good name when the user has not typed one.
  let nameTyped = false;
  nameInput.addEventListener("input", () => (nameTyped = nameInput.value !== ""));
  keyInput.addEventListener("input", () => {
    if (nameTyped) return;
    const parts = keyInput.value.trim().split(/\s+/);
    nameInput.value = parts.length >= 3 ? parts.slice(2).join(" ").slice(0, 200) : "";
  });

  const submit = h("button", { type: "submit", class: "primary" }, t("keys.add"));
  const form = h("form", { class: "card account-form", novalidate: true }, nameField, keyField, submit);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(submit, async () => {
      const name = nameInput.value.trim();
      const publicKey = keyInput.value.trim();
      if (!name) throw fieldError("name", t("keys.need_name"));
      if (!publicKey) throw fieldError("public_key", t("keys.need_key"));
      let key;
      try {
        key = await post("/v1/ssh-keys", { name, public_key: publicKey });
      } catch (err) {
        throw friendlier(err);
      }
      toast(t("keys.added", { name: key.name }));
      form.reset();
      nameTyped = false;
      await refresh();
      nameInput.focus();
    }, form);
  });
  return h("div", {}, h("h2", {}, t("keys.add_title")), form);
}

// The server says "Field 'public_key' has key data that ends early."; beside the field the
// field's name is redundant, so only the reason is shown, in a sentence of our language.
function friendlier(err) {
  if (err && err.code === "invalid_request" && err.field && err.details.reason) {
    const key = err.field === "public_key" ? "keys.bad_key" : "keys.bad_field";
    return fieldError(err.field, t(key, { reason: err.details.reason }));
  }
  return err;
}

