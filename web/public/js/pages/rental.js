// One rental: where it is on its way to ready (live, by long poll), how to log in (the SSH
// command to copy, the host's known_hosts lines, a certificate for a public key), its notices
// (and the answer one awaits), the signed handover report (what the platform measured before
// handing the node over), its events; extend, reboot or terminate it, the checkpoint command
// its node runs on a notice, and its handovers (moves to a spare, reboots, power actions).
import { all, del, get, post, put, newIdempotencyKey } from "../api.js";
import { strings, t, money, dateTime } from "../i18n.js";
import { badge, busy, copyText, field, h, page, replace, svg, table, toast } from "../ui.js";
import { days, period, progress, shape, title } from "../rentals-view.js";
import { fieldError } from "../rows.js";

strings({
  en: { "r.facts": "Details", "r.gpus": "GPUs", "r.period": "Period", "r.days": "Length", "r.price": "Price",
        "r.per_day": "{price} a day, {total} in all", "r.node": "Node", "r.image": "Image", "r.state": "State",
        "r.ssh": "Log in", "r.ssh_wait": "The SSH command appears here once the node is ready.",
        "r.command": "SSH command", "r.known_hosts": "Host keys for ~/.ssh/known_hosts (so ssh checks the host; never trust it blindly)",
        "r.ssh_config": "Or add to ~/.ssh/config", "r.fingerprints": "Host key fingerprints",
        "r.cert": "SSH certificate", "r.cert_help": "Paste a public key (for example ~/.ssh/id_ed25519.pub) to get a certificate valid only for this rental's period. Save it beside the key as id_ed25519-cert.pub; ssh uses it automatically.",
        "r.public_key": "Public key", "r.get_cert": "Get certificate", "r.cert_saved": "Certificate valid {from} – {to}",
        "r.download": "Download certificate",
        "r.notices": "Notices", "r.notice_at": "Takes effect {at}",
        "r.notice_choose": "Choose by {at}:", "r.notice_awaits": "Awaiting your organisation's answer by {at}.",
        "r.notice_answered": "Your answer: {choice} ({at}).", "r.notice_lapsed": "No answer came in time; the default was applied {at}.",
        "r.choice.other_node": "Move to another node", "r.choice.shift": "Start after the window", "r.choice.cancel": "Cancel the rental",
        "r.choice_confirm": "Answer “{choice}”? It is applied at once and cannot be changed.",
        "r.choice_done": "Answer applied: {choice}.",
        "r.manage": "Manage the rental", "r.reboot": "Reboot",
        "r.reboot_confirm": "Reboot the node now? Everything running on it stops; the rental is back once the node has restarted and its access is checked again.",
        "r.rebooting": "Rebooting: the rental is back once the node is up.",
        "r.reboot_shared": "Only a rental of the whole node can reboot it.",
        "r.checkpoint": "Checkpoint before a notice",
        "r.checkpoint_help": "A command the node runs as your login when a notice (maintenance, a move, a fault) reaches it, so your job can save its state first. It runs with sh -c; the notice itself is in /run/gpurent/notice.json.",
        "r.checkpoint_command": "Command", "r.checkpoint_timeout": "Time limit, seconds",
        "r.checkpoint_save": "Save command", "r.checkpoint_clear": "Clear command",
        "r.checkpoint_none": "No command: nothing runs on a notice.",
        "r.checkpoint_current": "Runs on a notice, for at most {seconds} s:",
        "r.checkpoint_empty": "Enter a command, or clear it.",
        "r.checkpoint_saved": "Checkpoint command saved.", "r.checkpoint_cleared": "Checkpoint command cleared.",
        "r.handovers": "Moves and reboots",
        "r.handovers_caption": "This rental's handovers: moves to a spare node, reboots and power actions",
        "r.h_started": "Started", "r.h_cause": "Cause", "r.h_nodes": "Node", "r.h_ended": "Ended",
        "r.h_outcome": "Outcome", "r.h_credited": "Credited", "r.h_same": "{node} (same node)",
        "r.h_moved": "{from} → {to}", "r.h_running": "in progress",
        "cause.fault": "Node fault", "cause.maintenance": "Maintenance", "cause.reboot": "Reboot", "cause.power": "Power action",
        "r.events": "Events", "r.at": "Time", "r.from": "From", "r.to": "To", "r.reason": "Reason",
        "r.events_caption": "What happened to this rental",
        "r.extend": "Extend", "r.extend_days": "More days", "r.extend_submit": "Extend",
        "r.extended": "Extended: it now ends {end}.",
        "r.terminate": "Terminate", "r.terminate_confirm": "Terminate this rental now? Days not yet started are refunded; the GPUs are wiped.",
        "r.terminated": "The rental is being released.", "r.waitlist": "Waiting for GPUs: position {position} in line.",
        "r.waitlist_eta": "Expected start: {at}.", "r.live": "Updating live",
        "r.report": "Handover report", "r.report_wait": "The report appears once the node has been measured and handed over.",
        "r.report_caption": "What the platform measured before handing the node over",
        "r.measure": "Measured", "r.value": "Value", "r.expected": "At least", "r.verdict": "Verdict",
        "r.report_meta": "Measured {at} with {tools}; driver {driver}, CUDA {cuda}. Signed with key {key}.",
        "r.report_moved": "Moved here after node {node} failed its checks at {at}; nothing was charged for it.",
        "r.report_download": "Download the signed report",
        "r.report_verify": "Check it offline: base64-decode payload and signature, then openssl pkeyutl -verify -pubin -inkey key.pem -rawin -in report.json -sigfile report.sig with the key from /v1/platform/report-key.",
        "verdict.pass": "pass", "verdict.warn": "warning", "verdict.fail": "failed",
        "r.telemetry": "Your GPUs", "r.telemetry_wait": "Charts appear once the rental runs and its GPUs report.",
        "r.energy": "Energy drawn so far: {kwh} kWh.", "r.energy_day": "Day {day}: {kwh} kWh", "r.chart_util": "Utilisation, %", "r.chart_power": "Power, W", "r.chart_clock": "SM clock, MHz",
        "r.gpu_events": "What happened to your GPUs", "r.gpu_event": "GPU {index}: {reason}", "r.gpu_event_xid": "GPU {index}, XID {xid}: {reason}",
        "r.chart_label": "{title} from {from} to {to}: {series}", "r.chart_series": "GPU {index} average {avg}, peak {peak}" },
  ru: { "r.facts": "Подробности", "r.gpus": "GPU", "r.period": "Период", "r.days": "Срок", "r.price": "Цена",
        "r.per_day": "{price} в сутки, всего {total}", "r.node": "Узел", "r.image": "Образ", "r.state": "Состояние",
        "r.ssh": "Вход", "r.ssh_wait": "Команда SSH появится здесь, когда узел будет готов.",
        "r.command": "Команда SSH", "r.known_hosts": "Ключи хоста для ~/.ssh/known_hosts (ssh проверит хост; никогда не доверяйте вслепую)",
        "r.ssh_config": "Или добавьте в ~/.ssh/config", "r.fingerprints": "Отпечатки ключей хоста",
        "r.cert": "SSH-сертификат", "r.cert_help": "Вставьте открытый ключ (например, ~/.ssh/id_ed25519.pub), чтобы получить сертификат только на срок этой аренды. Сохраните его рядом с ключом как id_ed25519-cert.pub — ssh подхватит его сам.",
        "r.public_key": "Открытый ключ", "r.get_cert": "Получить сертификат", "r.cert_saved": "Сертификат действует {from} – {to}",
        "r.download": "Скачать сертификат",
        "r.notices": "Уведомления", "r.notice_at": "Вступает в силу {at}",
        "r.notice_choose": "Выберите до {at}:", "r.notice_awaits": "Ждёт ответа вашей организации до {at}.",
        "r.notice_answered": "Ваш ответ: {choice} ({at}).", "r.notice_lapsed": "Ответа не было; применено решение по умолчанию {at}.",
        "r.choice.other_node": "Перенести на другой узел", "r.choice.shift": "Начать после окна", "r.choice.cancel": "Отменить аренду",
        "r.choice_confirm": "Ответить «{choice}»? Ответ применяется сразу, изменить его нельзя.",
        "r.choice_done": "Ответ применён: {choice}.",
        "r.manage": "Управление арендой", "r.reboot": "Перезагрузить",
        "r.reboot_confirm": "Перезагрузить узел сейчас? Всё, что на нём работает, остановится; аренда вернётся, когда узел перезапустится и доступ будет снова проверен.",
        "r.rebooting": "Перезагрузка: аренда вернётся, когда узел поднимется.",
        "r.reboot_shared": "Перезагрузить узел может только аренда всего узла.",
        "r.checkpoint": "Сохранение перед уведомлением",
        "r.checkpoint_help": "Команда, которую узел выполнит от вашего имени, когда до него дойдёт уведомление (обслуживание, перенос, сбой), чтобы задача успела сохранить состояние. Выполняется через sh -c; само уведомление — в /run/gpurent/notice.json.",
        "r.checkpoint_command": "Команда", "r.checkpoint_timeout": "Ограничение времени, секунд",
        "r.checkpoint_save": "Сохранить команду", "r.checkpoint_clear": "Удалить команду",
        "r.checkpoint_none": "Команды нет: при уведомлении ничего не выполняется.",
        "r.checkpoint_current": "Выполняется при уведомлении, не дольше {seconds} с:",
        "r.checkpoint_empty": "Введите команду или удалите её.",
        "r.checkpoint_saved": "Команда сохранена.", "r.checkpoint_cleared": "Команда удалена.",
        "r.handovers": "Переносы и перезагрузки",
        "r.handovers_caption": "Передачи аренды: переносы на резервный узел, перезагрузки и действия с питанием",
        "r.h_started": "Начало", "r.h_cause": "Причина", "r.h_nodes": "Узел", "r.h_ended": "Окончание",
        "r.h_outcome": "Итог", "r.h_credited": "Возмещено", "r.h_same": "{node} (тот же узел)",
        "r.h_moved": "{from} → {to}", "r.h_running": "идёт",
        "cause.fault": "Сбой узла", "cause.maintenance": "Обслуживание", "cause.reboot": "Перезагрузка", "cause.power": "Действие с питанием",
        "r.events": "События", "r.at": "Время", "r.from": "Из", "r.to": "В", "r.reason": "Причина",
        "r.events_caption": "Что происходило с арендой",
        "r.extend": "Продлить", "r.extend_days": "Ещё суток", "r.extend_submit": "Продлить",
        "r.extended": "Продлено: теперь до {end}.",
        "r.terminate": "Завершить", "r.terminate_confirm": "Завершить аренду сейчас? Не начавшиеся сутки вернутся на баланс; GPU будут очищены.",
        "r.terminated": "Аренда освобождается.", "r.waitlist": "Ожидание GPU: позиция {position} в очереди.",
        "r.waitlist_eta": "Ожидаемый старт: {at}.", "r.live": "Обновляется",
        "r.report": "Отчёт о передаче", "r.report_wait": "Отчёт появится, когда узел будет проверен и передан.",
        "r.report_caption": "Что платформа измерила перед передачей узла",
        "r.measure": "Измерение", "r.value": "Значение", "r.expected": "Не ниже", "r.verdict": "Итог",
        "r.report_meta": "Измерено {at} ({tools}); драйвер {driver}, CUDA {cuda}. Подписано ключом {key}.",
        "r.report_moved": "Перенесено сюда: узел {node} не прошёл проверку {at}; за него ничего не списано.",
        "r.report_download": "Скачать подписанный отчёт",
        "r.report_verify": "Проверка без нас: раскодируйте payload и signature из base64 и выполните openssl pkeyutl -verify -pubin -inkey key.pem -rawin -in report.json -sigfile report.sig с ключом из /v1/platform/report-key.",
        "verdict.pass": "норма", "verdict.warn": "предупреждение", "verdict.fail": "сбой",
        "r.telemetry": "Ваши GPU", "r.telemetry_wait": "Графики появятся, когда аренда начнётся и GPU начнут отчитываться.",
        "r.energy": "Потреблено энергии: {kwh} кВт·ч.", "r.energy_day": "День {day}: {kwh} кВт·ч", "r.chart_util": "Загрузка, %", "r.chart_power": "Мощность, Вт", "r.chart_clock": "Частота SM, МГц",
        "r.gpu_events": "Что происходило с вашими GPU", "r.gpu_event": "GPU {index}: {reason}", "r.gpu_event_xid": "GPU {index}, XID {xid}: {reason}",
        "r.chart_label": "{title} с {from} по {to}: {series}", "r.chart_series": "GPU {index}: в среднем {avg}, максимум {peak}" },
});

// On its way somewhere: not final and not settled in active. Where it may still go, the
// server says (reachable_states): towards active while it can get there, else to its end.
const moving = (r) => !r.final && r.state !== "active";
const nextStop = (r) => ((r.reachable_states || []).includes("active") ? "active" : "ended");

export async function render(ctx) {
  const id = encodeURIComponent(ctx.params.id);
  const [first, images] = await Promise.all([get(`/v1/rentals/${id}`), all("/v1/images")]);
  let rental = first;
  // The rental names its image by id; people know it by name, OS, driver and CUDA.
  const imageName = (imageId) => {
    const image = images.find((i) => i.id === imageId);
    return image ? `${image.name} (${image.os}, CUDA ${image.cuda_version})` : imageId || "—";
  };
  const root = h("div");
  const controller = new AbortController();
  ctx.onLeave(() => controller.abort());

  async function refresh() {
    rental = await get(`/v1/rentals/${id}`);
    await Promise.all([loadEvents(), loadNotices(), loadReport(), loadTelemetry(), loadCheckpoint(), loadHandovers()]);
    draw();
  }

  // While the rental is on its way, hold a long poll for its next state; each answer redraws.
  let following = false;
  async function follow() {
    if (following) return;
    following = true;
    while (!controller.signal.aborted && moving(rental)) {
      const target = nextStop(rental);
      try {
        const next = await get(`/v1/rentals/${id}/wait?state=${target}&timeout_s=25`, { signal: controller.signal });
        const changed = next.state !== rental.state;
        rental = { ...rental, ...next };
        if (changed) await refresh();
      } catch (err) {
        if (controller.signal.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
    following = false;
  }

  function draw() {
    if (ctx.stale()) return;
    const focused = document.activeElement && root.contains(document.activeElement) ? document.activeElement.id : null;
    replace(root,
      h("p", { class: "state-line" }, badge(rental.state), " ",
        moving(rental) ? h("span", { class: "loading inline" }, h("span", { class: "spin", "aria-hidden": "true" }), t("r.live")) : null),
      progress(rental),
      noticesSection,
      rental.waitlist ? h("p", { class: "alert info" }, t("r.waitlist", { position: rental.waitlist.position }),
        rental.waitlist.estimated_start ? ` ${t("r.waitlist_eta", { at: dateTime(rental.waitlist.estimated_start) })}` : "") : null,
      sshSection(),
      h("section", { class: "card", "aria-labelledby": "r-facts" }, h("h2", { id: "r-facts" }, t("r.facts")),
        h("dl", { class: "facts" },
          h("dt", {}, t("r.gpus")), h("dd", {}, shape(rental)),
          h("dt", {}, t("r.period")), h("dd", {}, period(rental)),
          h("dt", {}, t("r.days")), h("dd", {}, days(rental.days)),
          h("dt", {}, t("r.price")), h("dd", {}, t("r.per_day", { price: money(rental.price.per_day), total: money(rental.price.total) })),
          h("dt", {}, t("r.node")), h("dd", {}, rental.node_id || "—"),
          h("dt", {}, t("r.image")), h("dd", {}, imageName(rental.image?.id)))),
      actions(),
      checkpointSection,
      handoversSection,
      reportSection,
      telemetrySection,
      eventsSection);
    if (focused) document.getElementById(focused)?.focus();
  }

  function sshSection() {
    const s = rental.ssh;
    const box = h("section", { class: "card", "aria-labelledby": "r-ssh" }, h("h2", { id: "r-ssh" }, t("r.ssh")));
    if (!s || rental.state !== "active") {
      box.append(h("p", {}, t("r.ssh_wait")));
      return box;
    }
    const copyable = (label, text, testid) => h("div", { class: "copy-block" },
      h("h3", {}, label), h("pre", { class: "copyable", "data-testid": testid }, text),
      h("button", { type: "button", onclick: (e) => copyText(text, e.currentTarget) }, `${t("copy")}: ${label}`));
    // h() leaves absent parts out; Element.append would show them as "null".
    box.append(...[
      copyable(t("r.command"), s.command, "ssh-command"),
      s.known_hosts && s.known_hosts.length ? copyable(t("r.known_hosts"), s.known_hosts.join("\n"), "known-hosts") : null,
      s.ssh_config ? copyable(t("r.ssh_config"), s.ssh_config, "ssh-config") : null,
      s.host_key_fingerprints && s.host_key_fingerprints.length
        ? h("div", {}, h("h3", {}, t("r.fingerprints")), h("ul", {}, s.host_key_fingerprints.map((f) => h("li", {}, h("code", {}, f))))) : null,
      certificateForm()].filter(Boolean));
    return box;
  }

  function certificateForm() {
    const form = h("form", { class: "cert", novalidate: true },
      h("h3", {}, t("r.cert")), h("p", {}, t("r.cert_help")),
      field({ label: t("r.public_key"), name: "public_key", multiline: true, required: true,
              attrs: { placeholder: "ssh-ed25519 AAAA… you@laptop", spellcheck: "false" } }),
      h("button", { type: "submit" }, t("r.get_cert")), h("div", { class: "cert-out" }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const publicKey = form.querySelector('[name="public_key"]').value.trim();
      busy(form.querySelector("button[type=submit]"), async () => {
        const c = await post(`/v1/rentals/${id}/ssh-certificate`, { public_key: publicKey },
          { idempotencyKey: newIdempotencyKey() });
        const url = URL.createObjectURL(new Blob([`${c.certificate}\n`], { type: "text/plain" }));
        ctx.onLeave(() => URL.revokeObjectURL(url));
        replace(form.querySelector(".cert-out"),
          h("p", {}, t("r.cert_saved", { from: dateTime(c.valid_after), to: dateTime(c.valid_before) })),
          h("pre", { class: "copyable" }, c.certificate),
          h("a", { class: "button", href: url, download: "id_ed25519-cert.pub" }, t("r.download")));
      }, form);
    });
    return form;
  }

  // What the server says the rental allows in its state (allowed_actions): the panel keeps
  // no copy of the state machine. A reboot is not among them yet: an active rental offers it,
  // and the server refuses it (409 conflict) for one that shares its node.
  function actions() {
    const allowed = rental.allowed_actions || [];
    const canExtend = allowed.includes("extend");
    const canTerminate = allowed.includes("terminate");
    const canReboot = rental.state === "active";
    if ((!canExtend && !canTerminate && !canReboot) || !ctx.session.can("rentals:write")) return null;
    let form = null;
    if (canExtend) {
      form = h("form", { class: "row", novalidate: true },
        field({ label: t("r.extend_days"), name: "days", type: "number", value: "1", attrs: { min: 1 } }),
        h("div", { class: "field" }, h("button", { type: "submit" }, t("r.extend_submit"))));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const more = Number(form.querySelector('[name="days"]').value);
        busy(form.querySelector("button[type=submit]"), async () => {
          rental = await post(`/v1/rentals/${id}/extend`, { days: more }, { idempotencyKey: newIdempotencyKey() });
          toast(t("r.extended", { end: dateTime(rental.period.end) }));
          await refresh();
        }, form);
      });
    }
    const reboot = canReboot ? h("button", { type: "button", onclick: (e) => {
      if (!confirm(t("r.reboot_confirm"))) return;
      busy(e.currentTarget, async () => {
        try {
          rental = await post(`/v1/rentals/${id}/reboot`, {}, { idempotencyKey: newIdempotencyKey() });
        } catch (err) {
          if (err.code !== "conflict") throw err;
          toast(t("r.reboot_shared"), "error");
          return;
        }
        toast(t("r.rebooting"));
        await refresh();
        follow();
      });
    } }, t("r.reboot")) : null;
    const terminate = canTerminate ? h("button", { type: "button", class: "danger", onclick: (e) => {
      if (!confirm(t("r.terminate_confirm"))) return;
      busy(e.currentTarget, async () => {
        rental = await post(`/v1/rentals/${id}/terminate`, {}, { idempotencyKey: newIdempotencyKey() });
        toast(t("r.terminated"));
        await refresh();
        follow();
      });
    } }, t("r.terminate")) : null;
    return h("section", { class: "card", "aria-labelledby": "r-actions" },
      h("h2", { id: "r-actions" }, t("r.manage")), form,
      reboot || terminate ? h("p", { class: "toolbar" }, reboot, terminate) : null);
  }

  // Declared before the first draw, which places it.
  const eventsSection = h("section", { "aria-labelledby": "r-events" }, h("h2", { id: "r-events" }, t("r.events")));
  async function loadEvents() {
    const events = await get(`/v1/rentals/${id}/events`);
    if (ctx.stale()) return;
    replace(eventsSection, h("h2", { id: "r-events" }, t("r.events")),
      table(t("r.events_caption"), [
        { label: t("r.at"), cell: (e) => dateTime(e.at) },
        { label: t("r.from"), cell: (e) => (e.from_state ? badge(e.from_state) : "—") },
        { label: t("r.to"), cell: (e) => badge(e.to_state) },
        { label: t("r.reason"), cell: (e) => e.reason || "" },
      ], events.items));
  }

  // What the platform told the tenant about this rental (a move for maintenance, a coming
  // window), newest first; nothing shown when there is none. A maintenance notice over a rental
  // that stays offers choices until its respond_by: buttons that answer it, applied at once.
  const noticesSection = h("section", { "aria-labelledby": "r-notices", hidden: true });
  const choiceLabel = (c) => (t(`r.choice.${c}`) === `r.choice.${c}` ? c : t(`r.choice.${c}`));
  const awaitsAnswer = (n) => (n.choices || []).length > 0 && !n.choice && !n.applied_at;
  function noticeAnswer(n) {
    if (n.choice) {
      return h("p", { id: `notice-${n.id}-answer`, tabindex: "-1", "data-testid": "notice-answer" },
        t("r.notice_answered", { choice: choiceLabel(n.choice), at: dateTime(n.chosen_at) }));
    }
    if ((n.choices || []).length && n.applied_at) {
      return h("p", { "data-testid": "notice-answer" }, t("r.notice_lapsed", { at: dateTime(n.applied_at) }));
    }
    if (!awaitsAnswer(n)) return null;
    if (!ctx.session.can("rentals:write")) return h("p", {}, t("r.notice_awaits", { at: dateTime(n.respond_by) }));
    const prompt = `notice-${n.id}-prompt`;
    return h("div", { class: "notice-choices", role: "group", "aria-labelledby": prompt },
      h("p", { id: prompt }, t("r.notice_choose", { at: dateTime(n.respond_by) })),
      n.choices.map((c) => h("button", { type: "button", onclick: (e) => answer(n, c, e.currentTarget) }, choiceLabel(c))));
  }
  function answer(n, choice, button) {
    if (!confirm(t("r.choice_confirm", { choice: choiceLabel(choice) }))) return;
    busy(button, async () => {
      await post(`/v1/rentals/${id}/notices/${encodeURIComponent(n.id)}/choice`, { choice },
        { idempotencyKey: newIdempotencyKey() });
      toast(t("r.choice_done", { choice: choiceLabel(choice) }));
      await refresh();
      document.getElementById(`notice-${n.id}-answer`)?.focus();
      follow();
    });
  }
  async function loadNotices() {
    const notices = await get(`/v1/rentals/${id}/notices`);
    if (ctx.stale()) return;
    noticesSection.hidden = notices.items.length === 0;
    replace(noticesSection, h("h2", { id: "r-notices" }, t("r.notices")),
      h("ul", { class: "notices", "data-testid": "notices" }, notices.items.map((n) =>
        h("li", { class: "alert info", "data-notice": n.id }, n.message, " ",
          h("span", { class: "muted" }, t("r.notice_at", { at: dateTime(n.effective_at) })),
          noticeAnswer(n)))));
  }

  // The command the node's agent runs as the rental's login when a notice reaches the node
  // (docs/agent-notices.md). Redrawn only when it or what may be done changed, so a refresh
  // does not wipe what is being typed.
  const checkpointSection = h("section", { class: "card", "aria-labelledby": "r-checkpoint" });
  let checkpoint = { command: null, timeout_s: 600 };
  let checkpointDrawn = null;
  async function loadCheckpoint() {
    checkpoint = await get(`/v1/rentals/${id}/checkpoint`);
    if (ctx.stale()) return;
    drawCheckpoint();
  }
  function drawCheckpoint() {
    const editable = !rental.final && ctx.session.can("rentals:write");
    const key = JSON.stringify([checkpoint, editable]);
    if (key === checkpointDrawn) return;
    checkpointDrawn = key;
    checkpointSection.hidden = rental.final && !checkpoint.command;
    const hadFocus = checkpointSection.contains(document.activeElement);
    const current = checkpoint.command
      ? [h("p", {}, t("r.checkpoint_current", { seconds: checkpoint.timeout_s })),
         h("pre", { class: "copyable", "data-testid": "checkpoint-command" }, checkpoint.command)]
      : h("p", { "data-testid": "checkpoint-command" }, t("r.checkpoint_none"));
    if (!editable) {
      replace(checkpointSection, h("h2", { id: "r-checkpoint" }, t("r.checkpoint")), current);
      return;
    }
    const save = h("button", { type: "submit" }, t("r.checkpoint_save"));
    const form = h("form", { novalidate: true },
      field({ label: t("r.checkpoint_command"), name: "command", value: checkpoint.command || "", required: true,
              attrs: { spellcheck: "false", autocomplete: "off", placeholder: "cd ~/job && ./save.sh" } }),
      field({ label: t("r.checkpoint_timeout"), name: "timeout_s", type: "number", value: String(checkpoint.timeout_s) }),
      h("p", { class: "toolbar" }, save, checkpoint.command ? h("button", { type: "button", onclick: (e) =>
        busy(e.currentTarget, async () => {
          checkpoint = await del(`/v1/rentals/${id}/checkpoint`);
          toast(t("r.checkpoint_cleared"));
          drawCheckpoint();
        }, form) }, t("r.checkpoint_clear")) : null));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const command = form.querySelector('[name="command"]').value;
      const timeout = form.querySelector('[name="timeout_s"]').value.trim();
      busy(save, async () => {
        if (!command.trim()) throw fieldError("command", t("r.checkpoint_empty"));
        checkpoint = await put(`/v1/rentals/${id}/checkpoint`,
          timeout === "" ? { command } : { command, timeout_s: Number(timeout) });
        toast(t("r.checkpoint_saved"));
        drawCheckpoint();
      }, form);
    });
    replace(checkpointSection, h("h2", { id: "r-checkpoint" }, t("r.checkpoint")),
      h("p", { class: "hint" }, t("r.checkpoint_help")), current, form);
    if (hadFocus) save.focus();
  }

  // Handovers, oldest first: a move to a spare node after a fault or for a maintenance window,
  // a reboot, an admin's power action; what each credited, in the rental's currency.
  const handoversSection = h("section", { "aria-labelledby": "r-handovers", hidden: true });
  const causeLabel = (c) => (t(`cause.${c}`) === `cause.${c}` ? c : t(`cause.${c}`));
  async function loadHandovers() {
    const handovers = await get(`/v1/rentals/${id}/handovers`);
    if (ctx.stale()) return;
    const currency = rental.price?.per_day?.currency;
    handoversSection.hidden = handovers.items.length === 0;
    replace(handoversSection, h("h2", { id: "r-handovers" }, t("r.handovers")),
      table(t("r.handovers_caption"), [
        { label: t("r.h_started"), cell: (x) => dateTime(x.started_at) },
        { label: t("r.h_cause"), cell: (x) => causeLabel(x.cause) },
        { label: t("r.h_nodes"), cell: (x) => (x.from_node_id === x.to_node_id
          ? t("r.h_same", { node: x.from_node_id }) : t("r.h_moved", { from: x.from_node_id, to: x.to_node_id })) },
        { label: t("r.h_ended"), cell: (x) => (x.ended_at ? dateTime(x.ended_at) : t("r.h_running")) },
        { label: t("r.h_outcome"), cell: (x) => (x.outcome ? badge(x.outcome) : "—") },
        { label: t("r.h_credited"), cell: (x) => (x.credited_minor === null || x.credited_minor === undefined
          ? "—" : money({ amount_minor: x.credited_minor, currency })) },
      ], handovers.items));
  }

  // The signed handover report: its measurements beside the bars they were held to.
  const reportSection = h("section", { class: "card", "aria-labelledby": "r-report" }, h("h2", { id: "r-report" }, t("r.report")));
  const number = (v) => (typeof v === "number" ? v.toLocaleString(document.documentElement.lang || "en", { maximumFractionDigits: v < 10 ? 3 : 1 }) : "—");
  async function loadReport() {
    const report = await get(`/v1/rentals/${id}/report`);
    if (ctx.stale()) return;
    const heading = h("h2", { id: "r-report" }, t("r.report"));
    if (!report.handover) {
      replace(reportSection, heading, h("p", {}, t("r.report_wait")));
      return;
    }
    const url = URL.createObjectURL(new Blob([JSON.stringify(report, null, 2)], { type: "application/json" }));
    ctx.onLeave(() => URL.revokeObjectURL(url));
    replace(reportSection, heading,
      h("p", { "data-testid": "report-meta" }, t("r.report_meta", {
        at: dateTime(report.handover.measured_at), tools: (report.handover.tools || []).join(", ") || "—",
        driver: report.image?.driver_version || "—", cuda: report.image?.cuda_version || "—", key: report.key_id })),
      ...(report.failed_handovers || []).map((f) => h("p", { class: "alert info" },
        t("r.report_moved", { node: f.node_id, at: dateTime(f.measured_at) }))),
      table(t("r.report_caption"), [
        { label: t("r.measure"), cell: (m) => m.name },
        { label: t("r.value"), cell: (m) => `${number(m.value)}${m.unit ? ` ${m.unit}` : ""}` },
        { label: t("r.expected"), cell: (m) => (m.expected === null || m.expected === undefined ? "—" : `${number(m.expected)}${m.unit ? ` ${m.unit}` : ""}`) },
        { label: t("r.verdict"), cell: (m) => t(`verdict.${m.verdict}`) },
      ], report.measurements || []),
      h("p", {}, h("a", { class: "button", href: url, download: `handover-report-${rental.id}.json` }, t("r.report_download"))),
      h("p", { class: "hint" }, t("r.report_verify")));
  }

  // The rental's own GPUs over its period: a line per GPU, and the energy they drew.
  const telemetrySection = h("section", { class: "card", "aria-labelledby": "r-telemetry" }, h("h2", { id: "r-telemetry" }, t("r.telemetry")));
  const COLOURS = ["#0b5cad", "#8250df", "#bf3989", "#bc4c00", "#1a7f37", "#9a6700", "#0550ae", "#cf222e"];
  function chart(data, title, key, max) {
    const series = data.gpus.map((g) => ({ index: g.index, points: g.samples.filter((p) => typeof p[key] === "number") }));
    const from = new Date(data.from).getTime();
    const span = Math.max(1, new Date(data.to).getTime() - from);
    const top = Math.max(max || 0, ...series.flatMap((s) => s.points.map((p) => p[key]))) || 1;
    const described = series.map((s) => {
      const values = s.points.map((p) => p[key]);
      const avg = values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
      return t("r.chart_series", { index: s.index, avg: number(avg), peak: number(values.length ? Math.max(...values) : 0) });
    }).join("; ");
    return h("figure", { class: "telemetry-chart" },
      h("figcaption", {}, title),
      svg("svg", { viewBox: "0 0 100 40", preserveAspectRatio: "none", width: "100%", height: "120", role: "img",
                   "aria-label": t("r.chart_label", { title, from: dateTime(data.from), to: dateTime(data.to), series: described }) },
        svg("rect", { x: 0, y: 0, width: 100, height: 40, fill: "none", stroke: "#8c959f", "stroke-width": 0.2 }),
        series.map((s, i) => svg("polyline", {
          fill: "none", stroke: COLOURS[i % COLOURS.length], "stroke-width": 0.6, "vector-effect": "non-scaling-stroke",
          // 2 units of margin above and below, so a line at 0 or at the top stays visible.
          points: s.points.map((p) => `${((100 * (new Date(p.at).getTime() - from)) / span).toFixed(2)},${(38 - (36 * p[key]) / top).toFixed(2)}`).join(" "),
        }))));
  }
  async function loadTelemetry() {
    const data = await get(`/v1/rentals/${id}/telemetry`);
    if (ctx.stale()) return;
    const heading = h("h2", { id: "r-telemetry" }, t("r.telemetry"));
    if (!data.from || !data.gpus.some((g) => g.samples.length)) {
      replace(telemetrySection, heading, h("p", {}, t("r.telemetry_wait")));
      return;
    }
    replace(telemetrySection, heading,
      h("p", { "data-testid": "energy" }, t("r.energy", {
        kwh: data.energy_kwh.toLocaleString(document.documentElement.lang || "en", { maximumSignificantDigits: 3 }) })),
      // Per rental-day once there is more than one.
      data.energy_by_day.length > 1 ? h("ul", { "data-testid": "energy-by-day" }, data.energy_by_day.map((d) => h("li", {},
        t("r.energy_day", { day: d.day, kwh: d.energy_kwh.toLocaleString(document.documentElement.lang || "en", { maximumSignificantDigits: 3 }) })))) : null,
      chart(data, t("r.chart_util"), "utilization_pct", 100),
      chart(data, t("r.chart_power"), "power_w", 0),
      chart(data, t("r.chart_clock"), "sm_clock_mhz", 0),
      // XID events and health changes of the rental's own GPUs, newest first.
      data.events.length ? [h("h3", {}, t("r.gpu_events")), h("ul", { "data-testid": "gpu-events" },
        data.events.slice().reverse().map((e) => h("li", { class: e.severity === "critical" ? "bad" : null },
          h("time", { datetime: e.at }, dateTime(e.at)), " ",
          e.xid === null ? t("r.gpu_event", { index: e.gpu_index, reason: e.reason })
            : t("r.gpu_event_xid", { index: e.gpu_index, xid: e.xid, reason: e.reason }))))] : null);
  }

  await Promise.all([loadEvents(), loadNotices(), loadReport(), loadTelemetry(), loadCheckpoint(), loadHandovers()]);
  draw();
  follow();
  return page(title(rental), root);
}
