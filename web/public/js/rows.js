// Helpers of the account pages (keys, tokens, members, billing): confirmation inside a
// table row, a client-side error shaped like the API's, tables that read as cards on a phone.
import { t } from "./i18n.js";
import { busy, h } from "./ui.js";

export function fieldError(name, message) {
  return { field: name, code: "form_check", details: name ? { field: name } : {}, message };
}

// Replaces a row's actions with a question and two buttons; Cancel (focused, so a second
// Enter never deletes by accident) puts the actions back.
export function confirmInline(box, { question, yes, yesLabel, restore, work }) {
  const before = [...box.childNodes];
  const id = `confirm-${Math.random().toString(36).slice(2)}`;
  const cancel = h("button", { type: "button", "aria-describedby": id }, t("cancel"));
  const confirm = h("button", { type: "button", class: "danger", "aria-label": yesLabel, "aria-describedby": id }, yes);
  const back = () => {
    box.replaceChildren(...before);
    restore.focus();
  };
  cancel.addEventListener("click", back);
  confirm.addEventListener("click", () => busy(confirm, work));
  box.replaceChildren(h("span", { id, class: "confirm-question" }, question), " ", confirm, " ", cancel);
  box.addEventListener("keydown", function onKey(event) {
    if (event.key === "Escape" && box.contains(cancel)) {
      box.removeEventListener("keydown", onKey);
      back();
    }
  });
  cancel.focus();
}

// Tables read as cards on a phone (css/account.css): each cell carries its column's name,
// and explicit roles keep the table's semantics when CSS changes how it is displayed.
export function stackable(node) {
  const tableEl = node.querySelector ? node.querySelector("table") : null;
  if (!tableEl) return node;
  node.classList.add("stack");
  const labels = [...tableEl.tHead.rows[0].cells].map((th) => th.textContent);
  tableEl.setAttribute("role", "table");
  for (const group of [tableEl.tHead, ...tableEl.tBodies]) group.setAttribute("role", "rowgroup");
  for (const th of tableEl.tHead.rows[0].cells) th.setAttribute("role", "columnheader");
  for (const row of tableEl.rows) row.setAttribute("role", "row");
  for (const row of tableEl.tBodies[0].rows) {
    [...row.cells].forEach((td, i) => {
      td.setAttribute("role", "cell");
      td.dataset.label = labels[i];
    });
  }
  return node;
}

