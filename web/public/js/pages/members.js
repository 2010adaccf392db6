// Members of the organisation and their roles. Owners manage everyone; admins everyone but
// owners; anyone may leave. Adding needs an existing gpurent account (POST /v1/members).
import { all, del, patch, post } from "../api.js";
import { dateTime, strings, t } from "../i18n.js";
import { busy, field, h, page, table, toast } from "../ui.js";
import { confirmInline, fieldError, stackable } from "../rows.js";

strings({
  en: {
    "members.title": "Members",
    "members.list": "People in your organisation", "members.caption": "Members of the organisation and their roles",
    "members.none": "No members.",
    "members.col.email": "Email", "members.col.role": "Role", "members.col.joined": "Joined", "members.col.actions": "Actions",
    "members.you": "you",
    "members.role.owner": "Owner", "members.role.admin": "Admin", "members.role.member": "Member",
    "members.role.billing": "Billing", "members.role.viewer": "Viewer",
    "members.role_of": "Role of {email}",
    "members.save_role": "Save role", "members.save_role_label": "Save role of {email}",
    "members.role_saved": "{email} is now {role}.",
    "members.remove": "Remove", "members.remove_label": "Remove {email}",
    "members.confirm_remove": "Remove {email} from the organisation? They lose access at once.",
    "members.confirm_remove_yes": "Yes, remove", "members.confirm_remove_yes_label": "Yes, remove {email}",
    "members.removed": "{email} was removed from the organisation.",
    "members.leave": "Leave", "members.leave_label": "Leave the organisation",
    "members.confirm_leave": "Leave the organisation? You lose access to its rentals, keys and billing at once.",
    "members.confirm_leave_yes": "Yes, leave", "members.confirm_leave_yes_label": "Yes, leave the organisation",
    "members.left": "You left the organisation.",
    "members.add_title": "Add a member",
    "members.email": "Email", "members.email_hint": "The person needs a gpurent account already: ask them to sign up first.",
    "members.role": "Role", "members.add": "Add member", "members.added": "{email} added as {role}.",
    "members.need_email": "Enter the person's email address.",
    "members.no_user": "Nobody has signed up with this email yet. Ask them to create an account first, then add them.",
    "members.already": "This person is already a member of the organisation.",
    "members.owners_only": "Only an owner can grant, change or remove the owner role.",
    "members.last_owner": "An organisation needs at least one owner: make someone else an owner first.",
    "members.bad_field": "This {reason}.",
    "members.roles_title": "What each role can do",
    "members.about.owner": "Everything, including adding and removing owners.",
    "members.about.admin": "Rentals, billing, SSH keys, API tokens and members — everything but the owners.",
    "members.about.member": "Book and manage rentals, SSH keys and API tokens; no billing.",
    "members.about.billing": "See rentals, the balance, transactions and invoices.",
    "members.about.viewer": "See rentals.",
    "members.readonly": "Only owners and admins can add or remove members and change roles.",
  },
  ru: {
    "members.title": "Участники",
    "members.list": "Участники организации", "members.caption": "Участники организации и их роли",
    "members.none": "Участников нет.",
    "members.col.email": "Эл. почта", "members.col.role": "Роль", "members.col.joined": "Присоединился",
    "members.col.actions": "Действия",
    "members.you": "вы",
    "members.role.owner": "Владелец", "members.role.admin": "Администратор", "members.role.member": "Участник",
    "members.role.billing": "Бухгалтер", "members.role.viewer": "Наблюдатель",
    "members.role_of": "Роль {email}",
    "members.save_role": "Сохранить роль", "members.save_role_label": "Сохранить роль {email}",
    "members.role_saved": "Новая роль {email}: {role}.",
    "members.remove": "Удалить", "members.remove_label": "Удалить {email}",
    "members.confirm_remove": "Удалить {email} из организации? Доступ пропадёт сразу.",
    "members.confirm_remove_yes": "Да, удалить", "members.confirm_remove_yes_label": "Да, удалить {email}",
    "members.removed": "{email} удалён из организации.",
    "members.leave": "Выйти", "members.leave_label": "Выйти из организации",
    "members.confirm_leave": "Выйти из организации? Вы сразу потеряете доступ к её арендам, ключам и оплате.",
    "members.confirm_leave_yes": "Да, выйти", "members.confirm_leave_yes_label": "Да, выйти из организации",
    "members.left": "Вы вышли из организации.",
    "members.add_title": "Добавить участника",
    "members.email": "Эл. почта", "members.email_hint": "У человека уже должен быть аккаунт gpurent: попросите его сначала зарегистрироваться.",
    "members.role": "Роль", "members.add": "Добавить участника", "members.added": "{email} добавлен с ролью «{role}».",
    "members.need_email": "Введите адрес эл. почты.",
    "members.no_user": "С этим адресом ещё никто не зарегистрировался. Попросите человека создать аккаунт, затем добавьте его.",
    "members.already": "Этот человек уже состоит в организации.",
    "members.owners_only": "Назначать, менять и снимать роль владельца может только владелец.",
    "members.last_owner": "В организации должен остаться хотя бы один владелец: сначала назначьте владельцем кого-то ещё.",
    "members.bad_field": "Значение не принято: {reason}.",
    "members.roles_title": "Что может каждая роль",
    "members.about.owner": "Всё, включая добавление и удаление владельцев.",
    "members.about.admin": "Аренды, оплата, SSH-ключи, API-токены и участники — всё, кроме владельцев.",
    "members.about.member": "Бронировать аренды и управлять ими, SSH-ключи и API-токены; без доступа к оплате.",
    "members.about.billing": "Просмотр аренд, баланса, операций и счетов.",
    "members.about.viewer": "Просмотр аренд.",
    "members.readonly": "Добавлять и удалять участников и менять роли могут только владельцы и администраторы.",
  },
});

const ROLES = ["owner", "admin", "member", "billing", "viewer"];
const roleName = (role) => t(`members.role.${role}`);

export async function render(ctx) {
  const me = ctx.session.current();
  const myId = me && me.user ? me.user.id : null;
  const myRole = (me && me.role) || null;
  const canWrite = ctx.session.can("members:write");
  // Admins manage everyone but owners, and cannot make anyone an owner.
  const grantable = ROLES.filter((r) => myRole === "owner" || r !== "owner");
  const listHeading = h("h2", { id: "members-list", tabindex: "-1" }, t("members.list"));
  const list = h("div", { class: "members-list" });

  async function refresh() {
    const members = await all("/v1/members");
    if (ctx.stale()) return;
    list.replaceChildren(memberTable(members));
  }

  const manages = (m) => canWrite && (myRole === "owner" || m.role !== "owner");

  function memberTable(members) {
    const columns = [
      { label: t("members.col.email"), cell: (m) => [h("span", { class: "wrap" }, m.email),
        m.user_id === myId ? [" ", h("span", { class: "badge" }, t("members.you"))] : null] },
      { label: t("members.col.role"), cell: (m) => (manages(m) ? roleEditor(m) : roleName(m.role)) },
      { label: t("members.col.joined"), cell: (m) => dateTime(m.joined_at) },
      { label: t("members.col.actions"), cell: (m) => actions(m) },
    ];
    return stackable(table(t("members.caption"), columns, members, t("members.none")));
  }

  function roleEditor(member) {
    const options = (grantable.includes(member.role) ? grantable : [member.role, ...grantable])
      .map((r) => ({ value: r, label: roleName(r) }));
    const roleField = field({ label: t("members.role_of", { email: member.email }), name: "role", value: member.role, options });
    roleField.classList.add("compact");
    const save = h("button", { type: "submit", "aria-label": t("members.save_role_label", { email: member.email }) },
      t("members.save_role"));
    const form = h("form", { class: "inline-form", novalidate: true }, roleField, save);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const role = form.querySelector("select").value;
      busy(save, async () => {
        try {
          await patch(`/v1/members/${encodeURIComponent(member.user_id)}`, { role });
        } catch (err) {
          throw friendlier(err, "role");
        }
        toast(t("members.role_saved", { email: member.email, role: roleName(role) }));
        if (member.user_id === myId) {
          // My own role changed: what the panel offers me changes with it.
          await ctx.session.load();
          ctx.rerender();
          return;
        }
        await refresh();
        listHeading.focus();
      }, form);
    });
    return form;
  }

  function actions(member) {
    const self = member.user_id === myId;
    if (!self && !manages(member)) return null;
    const box = h("div", { class: "row-actions" });
    const start = self
      ? h("button", { type: "button", "aria-label": t("members.leave_label") }, t("members.leave"))
      : h("button", { type: "button", "aria-label": t("members.remove_label", { email: member.email }) }, t("members.remove"));
    start.addEventListener("click", () => confirmInline(box, {
      question: self ? t("members.confirm_leave") : t("members.confirm_remove", { email: member.email }),
      yes: self ? t("members.confirm_leave_yes") : t("members.confirm_remove_yes"),
      yesLabel: self ? t("members.confirm_leave_yes_label") : t("members.confirm_remove_yes_label", { email: member.email }),
      restore: start,
      work: async () => {
        try {
          await del(`/v1/members/${encodeURIComponent(member.user_id)}`);
        } catch (err) {
          throw friendlier(err, null);
        }
        if (self) {
          toast(t("members.left"));
          try {
            await ctx.session.load();
          } catch (err) {
            // The next page asks to sign in if the session no longer stands.
          }
          ctx.go("#/");
          return;
        }
        toast(t("members.removed", { email: member.email }));
        await refresh();
        listHeading.focus();
      },
    }));
    box.append(start);
    return box;
  }

  await refresh();

  const children = [listHeading, list];
  if (canWrite) children.push(addForm(grantable, refresh));
  else children.push(h("p", { class: "alert info" }, t("members.readonly")));
  children.push(h("h2", {}, t("members.roles_title")),
    h("dl", { class: "facts roles" }, ROLES.flatMap((r) => [h("dt", {}, roleName(r)), h("dd", {}, t(`members.about.${r}`))])));
  return page(t("members.title"), ...children);
}

function addForm(grantable, refresh) {
  const emailField = field({ label: t("members.email"), name: "email", type: "email", required: true,
                             hint: t("members.email_hint"), attrs: { autocomplete: "off", maxlength: 254 } });
  const roleField = field({ label: t("members.role"), name: "role", value: "member", required: true,
                           options: grantable.map((r) => ({ value: r, label: roleName(r) })) });
  const submit = h("button", { type: "submit", class: "primary" }, t("members.add"));
  const form = h("form", { class: "card account-form", novalidate: true }, h("div", { class: "row member-row" }, emailField, roleField), submit);
  const email = emailField.querySelector("input");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(submit, async () => {
      const body = { email: email.value.trim(), role: form.querySelector("select").value };
      if (!body.email) throw fieldError("email", t("members.need_email"));
      let member;
      try {
        member = await post("/v1/members", body);
      } catch (err) {
        throw friendlier(err, "role");
      }
      toast(t("members.added", { email: member.email, role: roleName(member.role) }));
      form.reset();
      await refresh();
      email.focus();
    }, form);
  });
  return h("div", {}, h("h2", {}, t("members.add_title")), form);
}

// The store's refusals in our words, beside the field they are about. `roleField`: where an
// owner-only refusal belongs (null: at the top, or a toast outside a form).
function friendlier(err, roleField) {
  if (!err || typeof err !== "object") return err;
  if (err.code === "not_found" && err.field === "email") return fieldError("email", t("members.no_user"));
  if (err.code === "conflict" && err.field === "email") return fieldError("email", t("members.already"));
  if (err.code === "conflict" && err.details && err.details.reason === "last_owner") {
    return fieldError(roleField, t("members.last_owner"));
  }
  if (err.code === "forbidden" && /owner/i.test(err.message || "")) return fieldError(roleField, t("members.owners_only"));
  if (err.code === "invalid_request" && err.field && err.details.reason) {
    return fieldError(err.field, t("members.bad_field", { reason: err.details.reason }));
  }
  return err;
}

