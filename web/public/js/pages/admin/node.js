// Administration: one node — its facts, GPUs with their latest telemetry and recent history
// as sparklines, the GPU link matrix drawn and as a table, rentals, state and health history,
// sshd host keys, and the admin actions (maintenance, drain, activate, retire: each asks why).
import { del, get, newIdempotencyKey, post } from "../../api.js";
import { dateTime, locale, money, number, strings, t } from "../../i18n.js";
import { busy, describeError, field, h, page, replace, svg, toast } from "../../ui.js";
import {
  allPages, celsius, clientError, dataTable, healthBadge, idCode, scrollRegion, secretBox, section, stateBadge, stateLabel,
} from "./fleet.js";

strings({
  en: {
    "admin.node.back": "Fleet", "admin.node.facts": "Facts", "admin.node.id": "Node id", "admin.node.site": "Site",
    "admin.node.gpus_fact": "GPUs", "admin.node.interconnect": "Declared interconnect", "admin.node.state": "State",
    "admin.node.state_since": "{state} since {time}", "admin.node.health": "Health",
    "admin.node.driver": "Driver", "admin.node.agent": "Agent version", "admin.node.heartbeat": "Last heartbeat",
    "admin.node.cpu": "CPU", "admin.node.cpu_value": "{model}, {cores} cores", "admin.node.ram": "Memory",
    "admin.node.disk": "Disk", "admin.node.gb": "{n} GB", "admin.node.labels": "Labels",
    "admin.node.topology_source": "Link matrix from", "admin.node.created": "Added",
    "admin.node.topo_source.declared": "the declared interconnect", "admin.node.topo_source.agent": "the agent's report",
    "admin.node.topo_source.admin": "an administrator",
    "admin.node.actions": "Actions", "admin.node.reason": "Reason",
    "admin.node.reason_hint": "Kept in the node's history and the audit log.",
    "admin.node.act.maintenance": "Take into maintenance", "admin.node.act.drain": "Drain",
    "admin.node.act.activate": "Return to service", "admin.node.act.retire": "Retire",
    "admin.node.ask.maintenance": "Why is {host} going into maintenance? It leaves service until it is returned.",
    "admin.node.ask.drain": "Why drain {host}? It gets no new rentals and goes into maintenance when the current ones end.",
    "admin.node.ask.activate": "Why return {host} to service? It will receive new rentals again.",
    "admin.node.ask.retire": "Why retire {host}? This is for good: a retired node never returns.",
    "admin.node.confirm": "Confirm", "admin.node.done": "{host}: {action} done; the node is now {state}.",
    "admin.node.no_actions": "No action applies to a node in this state.",
    "admin.node.new_token": "New enrolment token",
    "admin.node.new_token_hint": "For a reinstalled agent or an expired token; its next enrolment revokes the agent's current certificate.",
    "admin.node.token_once": "Shown only this once: copy it now. Single use, valid until {time}.",
    "admin.node.gpus": "GPUs", "admin.node.gpus_caption": "The node's GPUs with their latest telemetry",
    "admin.node.telemetry_at": "Latest telemetry at {time}.", "admin.node.no_telemetry": "The agent has reported no telemetry yet.",
    "admin.node.gpu": "GPU", "admin.node.temperature": "Temperature", "admin.node.utilization": "Utilisation",
    "admin.node.memory": "Memory used", "admin.node.power": "Power", "admin.node.ecc": "ECC and memory",
    "admin.node.links": "NVLink and PCIe", "admin.node.throttle": "Clock throttling",
    "admin.node.of": "{value} of {max}", "admin.node.gib": "{n} GiB", "admin.node.watts": "{n} W", "admin.node.pct": "{n} %",
    "admin.node.ecc_volatile": "since driver load: {sbe} single-bit, {dbe} double-bit",
    "admin.node.ecc_aggregate": "lifetime double-bit: {n}",
    "admin.node.retired_pages": "retired pages: {sbe} single-bit, {dbe} double-bit",
    "admin.node.retired_pending": "page retirement pending",
    "admin.node.remapped": "remapped rows: {c} correctable, {u} uncorrectable",
    "admin.node.remap_pending": "row remap pending", "admin.node.remap_failure": "row remap FAILED",
    "admin.node.crc": "NVLink CRC errors: {n}", "admin.node.links_down": "NVLink links down: {n}",
    "admin.node.replays": "PCIe replays: {n}", "admin.node.not_throttled": "none", "admin.node.no_errors": "no errors",
    "admin.node.history": "Telemetry history", "admin.node.period": "Period",
    "admin.node.period.1": "Last hour", "admin.node.period.6": "Last 6 hours", "admin.node.period.24": "Last 24 hours",
    "admin.node.period.168": "Last 7 days",
    "admin.node.history_caption": "Each GPU's telemetry over the chosen period",
    "admin.node.history_none": "No telemetry was kept for this period.",
    "admin.node.history_unavailable": "The telemetry history could not be read: {error}",
    "admin.node.range": "{min}–{max}, now {last}",
    "admin.node.spark_label": "{metric} of GPU {gpu}: from {min} to {max}, latest {last}",
    "admin.node.topology": "GPU links", "admin.node.topology_none": "No link matrix is known for this node.",
    "admin.node.topology_drawing": "GPU link diagram: {summary}",
    "admin.node.matrix_caption": "Link matrix as nvidia-smi topo -m prints it (X is the GPU itself)",
    "admin.node.legend": "Legend",
    "admin.node.pairs": { one: "{n} pair", other: "{n} pairs" },
    "admin.node.kind.nv": "{kind}: NVLink, {n} links bonded",
    "admin.node.kind.pix": "PIX: through one PCIe switch",
    "admin.node.kind.pxb": "PXB: through several PCIe switches, not the host bridge",
    "admin.node.kind.phb": "PHB: through a PCIe host bridge (the CPU)",
    "admin.node.kind.node": "NODE: between PCIe host bridges within one NUMA node",
    "admin.node.kind.sys": "{kind}: across NUMA nodes, over the CPUs' interconnect",
    "admin.node.model_nvlink": "{model}: NVLink generation {generation}, {bandwidth} GB/s per GPU in all.",
    "admin.node.rentals": "Rentals", "admin.node.rentals_caption": "The node's latest rentals",
    "admin.node.maintenance": "Maintenance windows",
    "admin.node.maintenance_caption": "Planned maintenance of the node: its GPUs are taken for the period",
    "admin.node.maintenance_none": "No maintenance is planned.",
    "admin.node.mw_start": "Starts", "admin.node.mw_end": "Ends", "admin.node.mw_reason": "Reason",
    "admin.node.mw_plan": "Plan a window", "admin.node.mw_why": "What the window is for",
    "admin.node.mw_hint": "Booked rentals in the way move to other nodes for the same period; the plan is refused when one has started or has nowhere to go.",
    "admin.node.mw_planned": "Window planned; rentals moved: {n}.",
    "admin.node.mw_cancel": "Cancel window", "admin.node.mw_cancel_label": "Cancel window from {start}",
    "admin.node.mw_cancelled": "Window cancelled: the GPUs are free again.",
    "admin.node.rentals_none": "No rentals on this node yet.",
    "admin.node.rental": "Rental", "admin.node.org": "Organisation", "admin.node.rental_gpus": "GPU indices",
    "admin.node.period_col": "Period", "admin.node.per_day": "Price per day",
    "admin.node.events": "State history", "admin.node.events_caption": "Changes of the node's state",
    "admin.node.when": "When", "admin.node.action": "Action", "admin.node.change": "Change", "admin.node.by": "By",
    "admin.node.system": "system",
    "admin.node.ev.enrolled": "enrolled", "admin.node.ev.activate": "activate", "admin.node.ev.maintenance": "maintenance",
    "admin.node.ev.drain": "drain", "admin.node.ev.drained": "drained", "admin.node.ev.fail": "fail",
    "admin.node.ev.retire": "retire", "admin.node.ev.created": "created",
    "admin.node.health_events": "Health history", "admin.node.health_caption": "XID events and health changes, newest first",
    "admin.node.health_none": "No health events recorded.",
    "admin.node.subject": "GPU", "admin.node.whole_node": "whole node", "admin.node.kind": "Kind",
    "admin.node.severity": "Severity", "admin.node.xid": "XID {n}", "admin.node.health_change": "health change",
    "admin.node.sev.info": "info",
    "admin.node.host_keys": "SSH host keys", "admin.node.host_keys_caption": "The sshd host keys the agent reported",
    "admin.node.algorithm": "Algorithm", "admin.node.fingerprint": "Fingerprint", "admin.node.reported": "Reported",
    "admin.node.host_keys_none": "The agent has reported no host keys yet.",
  },
  ru: {
    "admin.node.back": "Парк серверов", "admin.node.facts": "Сведения", "admin.node.id": "Идентификатор узла",
    "admin.node.site": "Площадка", "admin.node.gpus_fact": "GPU", "admin.node.interconnect": "Заявленная связь GPU",
    "admin.node.state": "Состояние", "admin.node.state_since": "{state} с {time}", "admin.node.health": "Исправность",
    "admin.node.driver": "Драйвер", "admin.node.agent": "Версия агента", "admin.node.heartbeat": "Последний сигнал агента",
    "admin.node.cpu": "Процессор", "admin.node.cpu_value": "{model}, ядер: {cores}", "admin.node.ram": "Память",
    "admin.node.disk": "Диск", "admin.node.gb": "{n} ГБ", "admin.node.labels": "Метки",
    "admin.node.topology_source": "Источник матрицы связей", "admin.node.created": "Добавлен",
    "admin.node.topo_source.declared": "заявленная связь", "admin.node.topo_source.agent": "отчёт агента",
    "admin.node.topo_source.admin": "администратор",
    "admin.node.actions": "Действия", "admin.node.reason": "Причина",
    "admin.node.reason_hint": "Сохраняется в истории узла и в журнале аудита.",
    "admin.node.act.maintenance": "Перевести в обслуживание", "admin.node.act.drain": "Вывести из работы",
    "admin.node.act.activate": "Вернуть в работу", "admin.node.act.retire": "Списать",
    "admin.node.ask.maintenance": "Почему {host} переводится в обслуживание? Узел выйдет из работы, пока его не вернут.",
    "admin.node.ask.drain": "Почему {host} выводится из работы? Новых аренд не будет, а после окончания текущих узел перейдёт в обслуживание.",
    "admin.node.ask.activate": "Почему {host} возвращается в работу? Узел снова будет получать аренды.",
    "admin.node.ask.retire": "Почему {host} списывается? Это навсегда: списанный узел не возвращается.",
    "admin.node.confirm": "Подтвердить", "admin.node.done": "{host}: действие «{action}» выполнено; состояние узла — {state}.",
    "admin.node.no_actions": "В этом состоянии действия с узлом недоступны.",
    "admin.node.new_token": "Новый токен подключения",
    "admin.node.new_token_hint": "Для переустановленного агента или истёкшего токена; при следующем подключении текущий сертификат агента будет отозван.",
    "admin.node.token_once": "Показывается только один раз — скопируйте его сейчас. Одноразовый, действует до {time}.",
    "admin.node.gpus": "GPU", "admin.node.gpus_caption": "GPU узла и их последняя телеметрия",
    "admin.node.telemetry_at": "Последняя телеметрия: {time}.", "admin.node.no_telemetry": "Агент ещё не присылал телеметрию.",
    "admin.node.gpu": "GPU", "admin.node.temperature": "Температура", "admin.node.utilization": "Загрузка",
    "admin.node.memory": "Занято памяти", "admin.node.power": "Мощность", "admin.node.ecc": "ECC и память",
    "admin.node.links": "NVLink и PCIe", "admin.node.throttle": "Снижение частот",
    "admin.node.of": "{value} из {max}", "admin.node.gib": "{n} ГиБ", "admin.node.watts": "{n} Вт", "admin.node.pct": "{n} %",
    "admin.node.ecc_volatile": "с загрузки драйвера: одиночных {sbe}, двойных {dbe}",
    "admin.node.ecc_aggregate": "двойных за всё время: {n}",
    "admin.node.retired_pages": "изъятые страницы: одиночные {sbe}, двойные {dbe}",
    "admin.node.retired_pending": "ожидается изъятие страниц",
    "admin.node.remapped": "переназначенные строки: исправимые {c}, неисправимые {u}",
    "admin.node.remap_pending": "ожидается переназначение строк", "admin.node.remap_failure": "СБОЙ переназначения строк",
    "admin.node.crc": "ошибки CRC NVLink: {n}", "admin.node.links_down": "неработающие линии NVLink: {n}",
    "admin.node.replays": "повторы PCIe: {n}", "admin.node.not_throttled": "нет", "admin.node.no_errors": "ошибок нет",
    "admin.node.history": "История телеметрии", "admin.node.period": "Период",
    "admin.node.period.1": "Последний час", "admin.node.period.6": "Последние 6 часов",
    "admin.node.period.24": "Последние 24 часа", "admin.node.period.168": "Последние 7 дней",
    "admin.node.history_caption": "Телеметрия каждого GPU за выбранный период",
    "admin.node.history_none": "За этот период телеметрия не сохранялась.",
    "admin.node.history_unavailable": "Не удалось прочитать историю телеметрии: {error}",
    "admin.node.range": "{min}–{max}, сейчас {last}",
    "admin.node.spark_label": "{metric} GPU {gpu}: от {min} до {max}, последнее значение {last}",
    "admin.node.topology": "Связи GPU", "admin.node.topology_none": "Матрица связей этого узла неизвестна.",
    "admin.node.topology_drawing": "Схема связей GPU: {summary}",
    "admin.node.matrix_caption": "Матрица связей в виде nvidia-smi topo -m (X — сам GPU)",
    "admin.node.legend": "Условные обозначения",
    "admin.node.pairs": { one: "{n} пара", few: "{n} пары", many: "{n} пар", other: "{n} пары" },
    "admin.node.kind.nv": "{kind}: NVLink, объединено линий: {n}",
    "admin.node.kind.pix": "PIX: через один коммутатор PCIe",
    "admin.node.kind.pxb": "PXB: через несколько коммутаторов PCIe, минуя хост-мост",
    "admin.node.kind.phb": "PHB: через хост-мост PCIe (процессор)",
    "admin.node.kind.node": "NODE: между хост-мостами PCIe одного узла NUMA",
    "admin.node.kind.sys": "{kind}: между узлами NUMA, через межпроцессорную шину",
    "admin.node.model_nvlink": "{model}: NVLink поколения {generation}, всего {bandwidth} ГБ/с на GPU.",
    "admin.node.rentals": "Аренды", "admin.node.rentals_caption": "Последние аренды узла",
    "admin.node.maintenance": "Окна обслуживания",
    "admin.node.maintenance_caption": "Запланированное обслуживание узла: на это время его GPU заняты",
    "admin.node.maintenance_none": "Обслуживание не запланировано.",
    "admin.node.mw_start": "Начало", "admin.node.mw_end": "Конец", "admin.node.mw_reason": "Причина",
    "admin.node.mw_plan": "Запланировать окно", "admin.node.mw_why": "Для чего окно",
    "admin.node.mw_hint": "Забронированные аренды переезжают на другие узлы на тот же срок; план отклоняется, если аренда уже началась или ей некуда переехать.",
    "admin.node.mw_planned": "Окно запланировано; перенесено аренд: {n}.",
    "admin.node.mw_cancel": "Отменить окно", "admin.node.mw_cancel_label": "Отменить окно с {start}",
    "admin.node.mw_cancelled": "Окно отменено: GPU снова свободны.",
    "admin.node.rentals_none": "На этом узле аренд ещё не было.",
    "admin.node.rental": "Аренда", "admin.node.org": "Организация", "admin.node.rental_gpus": "Номера GPU",
    "admin.node.period_col": "Период", "admin.node.per_day": "Цена за день",
    "admin.node.events": "История состояний", "admin.node.events_caption": "Смены состояния узла",
    "admin.node.when": "Когда", "admin.node.action": "Действие", "admin.node.change": "Изменение", "admin.node.by": "Кто",
    "admin.node.system": "система",
    "admin.node.ev.enrolled": "подключён", "admin.node.ev.activate": "возврат в работу",
    "admin.node.ev.maintenance": "обслуживание", "admin.node.ev.drain": "вывод из работы",
    "admin.node.ev.drained": "выведен", "admin.node.ev.fail": "сбой", "admin.node.ev.retire": "списание",
    "admin.node.ev.created": "создан",
    "admin.node.health_events": "История исправности", "admin.node.health_caption": "События XID и изменения исправности, новые сверху",
    "admin.node.health_none": "Событий исправности нет.",
    "admin.node.subject": "GPU", "admin.node.whole_node": "весь узел", "admin.node.kind": "Вид",
    "admin.node.severity": "Важность", "admin.node.xid": "XID {n}", "admin.node.health_change": "изменение исправности",
    "admin.node.sev.info": "сведения",
    "admin.node.host_keys": "SSH-ключи хоста", "admin.node.host_keys_caption": "Ключи sshd, о которых сообщил агент",
    "admin.node.algorithm": "Алгоритм", "admin.node.fingerprint": "Отпечаток", "admin.node.reported": "Получен",
    "admin.node.host_keys_none": "Агент ещё не сообщил ключи хоста.",
  },
});


const none = () => t("admin.none");
const gib = (mib) => t("admin.node.gib", { n: number(mib / 1024, 1) });
const watts = (w) => t("admin.node.watts", { n: number(w, 0) });
const pct = (p) => t("admin.node.pct", { n: number(p, 0) });

export async function render(ctx) {
  const id = ctx.params.id;
  const controller = new AbortController();
  ctx.onLeave(() => controller.abort());
  const { signal } = controller;
  const [node, sites, models, windows] = await Promise.all([
    get(`/v1/admin/nodes/${encodeURIComponent(id)}`, { signal }),
    allPages("/v1/admin/sites", signal).catch(() => []),
    allPages("/v1/gpu-models", signal).catch(() => []),
    get(`/v1/admin/maintenance?node_id=${encodeURIComponent(id)}`, { signal }).then((r) => r.items).catch(() => []),
  ]);
  const site = sites.find((s) => s.id === node.site_id);
  const model = models.find((m) => m.name === node.gpu_model);

  return page(node.hostname,
    h("p", { class: "admin-crumbs" }, h("a", { href: "#/admin" }, "← ", t("admin.node.back")), " · ", idCode(node.id), " ",
      stateBadge(node.state), " ", healthBadge(node.health)),
    h("div", { class: "admin-node-top" }, facts(node, site), actions(ctx, node)),
    gpuSection(node),
    historySection(node, signal),
    topologySection(node, model),
    rentalsSection(node),
    maintenanceSection(ctx, node, windows),
    eventsSection(node),
    healthSection(node, signal),
    hostKeysSection(node));
}

function facts(node, site) {
  const row = (label, value) => [h("dt", {}, label), h("dd", {}, value ?? none())];
  const labels = Object.entries(node.labels || {});
  const topoSource = t(`admin.node.topo_source.${node.topology_source}`);
  return section("admin-node-facts", t("admin.node.facts"),
    h("dl", { class: "facts card" },
      row(t("admin.node.id"), idCode(node.id)),
      row(t("admin.node.site"), site ? `${site.name} (${site.region}, ${site.timezone})` : idCode(node.site_id)),
      row(t("admin.node.gpus_fact"), `${node.gpu_model} × ${node.gpu_count}`),
      row(t("admin.node.interconnect"), node.interconnect),
      row(t("admin.node.state"), t("admin.node.state_since", { state: stateLabel(node.state), time: dateTime(node.state_changed_at) })),
      row(t("admin.node.health"), healthBadge(node.health)),
      row(t("admin.node.driver"), node.driver_version),
      row(t("admin.node.agent"), node.agent_version),
      row(t("admin.node.heartbeat"), node.last_heartbeat_at ? dateTime(node.last_heartbeat_at) : null),
      row(t("admin.node.cpu"), node.cpu_model
        ? (node.cpu_cores ? t("admin.node.cpu_value", { model: node.cpu_model, cores: node.cpu_cores }) : node.cpu_model)
        : (node.cpu_cores ?? null)),
      row(t("admin.node.ram"), node.ram_gb ? t("admin.node.gb", { n: number(node.ram_gb) }) : null),
      row(t("admin.node.disk"), node.disk_gb ? t("admin.node.gb", { n: number(node.disk_gb) }) : null),
      row(t("admin.node.labels"), labels.length
        ? h("ul", { class: "admin-labels" }, labels.map(([k, v]) => h("li", {}, h("code", {}, `${k}=${v}`))))
        : null),
      row(t("admin.node.topology_source"), topoSource.startsWith("admin.") ? node.topology_source : topoSource),
      row(t("admin.node.created"), dateTime(node.created_at))));
}

function actions(ctx, node) {
  const slot = h("div", { class: "admin-action-slot" });
  // The server says which admin actions the node's state allows (allowed_actions).
  const allowed = node.allowed_actions || [];
  const openForm = (action, opener) => {
    const form = h("form", { class: "admin-reason", novalidate: true },
      field({ label: t("admin.node.reason"), name: "reason", required: true, multiline: true,
              hint: `${t(`admin.node.ask.${action}`, { host: node.hostname })} ${t("admin.node.reason_hint")}`,
              attrs: { maxlength: 1000 } }),
      h("div", { class: "toolbar" },
        h("button", { type: "submit", class: action === "retire" ? "danger" : "primary" },
          `${t("admin.node.confirm")}: ${t(`admin.node.act.${action}`)}`),
        h("button", { type: "button", onclick: () => { slot.replaceChildren(); opener.focus(); } }, t("cancel"))));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(form.querySelector("button[type=submit]"), async () => {
        const reason = String(new FormData(form).get("reason") || "").trim();
        if (!reason) throw clientError("reason", t("admin.error.required"));
        const moved = await post(`/v1/admin/nodes/${encodeURIComponent(node.id)}/${action}`, { reason },
          { idempotencyKey: newIdempotencyKey() });
        toast(t("admin.node.done", { host: node.hostname, action: t(`admin.node.act.${action}`), state: stateLabel(moved.state) }));
        ctx.rerender();
      }, form);
    });
    slot.replaceChildren(form);
    form.querySelector("textarea").focus();
  };
  const buttons = allowed.map((action) => {
    const button = h("button", { type: "button", class: action === "retire" ? "admin-danger-outline" : ""
                               }, t(`admin.node.act.${action}`));
    button.addEventListener("click", () => openForm(action, button));
    return button;
  });
  const tokenSlot = h("div", {});
  const tokenButton = node.state === "retired" ? null
    : h("button", { type: "button", "aria-describedby": "admin-token-hint" }, t("admin.node.new_token"));
  if (tokenButton) {
    tokenButton.addEventListener("click", () => busy(tokenButton, async () => {
      const issued = await post(`/v1/admin/nodes/${encodeURIComponent(node.id)}/enrollment-token`, {},
        { idempotencyKey: newIdempotencyKey() });
      const note = h("p", { tabindex: "-1" }, t("admin.node.token_once", { time: dateTime(issued.enrollment_token_expires_at) }));
      tokenSlot.replaceChildren(h("div", { class: "alert info admin-token" }, note, secretBox(issued.enrollment_token)));
      note.focus();
    }));
  }
  return section("admin-node-actions", t("admin.node.actions"),
    h("div", { class: "card" },
      buttons.length ? h("div", { class: "toolbar" }, buttons) : h("p", { class: "empty" }, t("admin.node.no_actions")),
      slot,
      tokenButton ? h("div", { class: "admin-token-block" }, tokenButton,
        h("p", { id: "admin-token-hint", class: "admin-muted" }, t("admin.node.new_token_hint")), tokenSlot) : null));
}

// A small horizontal bar for a value within 0..max (decoration: the value is written beside it).
function bar(value, max) {
  if (typeof value !== "number" || !max) return null;
  const ratio = Math.max(0, Math.min(1, value / max));
  return svg("svg", { class: "admin-bar", viewBox: "0 0 64 8", width: 64, height: 8, "aria-hidden": "true", focusable: "false" },
    svg("rect", { class: "track", x: 0, y: 0, width: 64, height: 8, rx: 2 }),
    svg("rect", { class: ratio >= 0.9 ? "fill hot" : "fill", x: 0, y: 0, width: (64 * ratio).toFixed(1), height: 8, rx: 2 }));
}

function measure(value, max, text) {
  if (typeof value !== "number") return none();
  return h("span", { class: "admin-measure" }, bar(value, max), h("span", {}, text));
}

function gpuSection(node) {
  const latest = new Map(((node.telemetry && node.telemetry.gpus) || []).map((g) => [g.index, g]));
  const indices = new Set([...(node.gpus || []).map((g) => g.index), ...latest.keys()]);
  const rows = [...indices].sort((a, b) => a - b).map((index) => ({
    index, gpu: (node.gpus || []).find((g) => g.index === index) || {}, tel: latest.get(index) || {},
  }));
  const lines = (...items) => {
    const kept = items.filter(Boolean);
    return kept.length ? h("ul", { class: "admin-lines" }, kept.map((i) => h("li", {}, i))) : none();
  };
  const has = (v) => v !== undefined && v !== null;
  const columns = [
    { label: t("admin.node.gpu"), cell: (r) => [h("strong", {}, `GPU ${r.index}`),
      r.gpu.uuid || r.tel.uuid ? h("span", { class: "admin-small" }, r.gpu.uuid || r.tel.uuid) : null,
      r.gpu.pci_bus_id || r.tel.pci_bus_id ? h("span", { class: "admin-small admin-nowrap" }, r.gpu.pci_bus_id || r.tel.pci_bus_id) : null] },
    { label: t("admin.node.health"), cell: (r) => (r.gpu.health ? healthBadge(r.gpu.health) : none()) },
    { label: t("admin.node.temperature"), cell: (r) => measure(r.tel.temperature_c, r.tel.shutdown_temperature_c || 100,
      celsius(r.tel.temperature_c)) },
    { label: t("admin.node.utilization"), cell: (r) => measure(r.tel.utilization_pct, 100, pct(r.tel.utilization_pct)) },
    { label: t("admin.node.memory"), cell: (r) => measure(r.tel.memory_used_mib, r.tel.memory_total_mib,
      has(r.tel.memory_total_mib) ? t("admin.node.of", { value: gib(r.tel.memory_used_mib), max: gib(r.tel.memory_total_mib) })
        : gib(r.tel.memory_used_mib)) },
    { label: t("admin.node.power"), cell: (r) => measure(r.tel.power_w, r.tel.power_limit_w,
      has(r.tel.power_limit_w) ? t("admin.node.of", { value: watts(r.tel.power_w), max: watts(r.tel.power_limit_w) })
        : watts(r.tel.power_w)) },
    { label: t("admin.node.ecc"), cell: (r) => {
      const g = r.tel;
      const counts = ["ecc_volatile_sbe", "ecc_volatile_dbe", "ecc_aggregate_dbe", "retired_pages_sbe", "retired_pages_dbe",
        "remapped_rows_correctable", "remapped_rows_uncorrectable"];
      if (!counts.some((k) => has(g[k]))) return none();
      const nonzero = (...keys) => keys.some((k) => g[k] > 0);
      const bad = nonzero("ecc_volatile_dbe", "ecc_aggregate_dbe", "remapped_rows_uncorrectable") || g.remapped_rows_failure;
      const list = lines(
        nonzero("ecc_volatile_sbe", "ecc_volatile_dbe")
          ? t("admin.node.ecc_volatile", { sbe: number(g.ecc_volatile_sbe ?? 0), dbe: number(g.ecc_volatile_dbe ?? 0) }) : null,
        nonzero("ecc_aggregate_dbe") ? t("admin.node.ecc_aggregate", { n: number(g.ecc_aggregate_dbe) }) : null,
        nonzero("retired_pages_sbe", "retired_pages_dbe")
          ? t("admin.node.retired_pages", { sbe: number(g.retired_pages_sbe ?? 0), dbe: number(g.retired_pages_dbe ?? 0) }) : null,
        g.retired_pages_pending ? t("admin.node.retired_pending") : null,
        nonzero("remapped_rows_correctable", "remapped_rows_uncorrectable")
          ? t("admin.node.remapped", { c: number(g.remapped_rows_correctable ?? 0), u: number(g.remapped_rows_uncorrectable ?? 0) }) : null,
        g.remapped_rows_pending ? t("admin.node.remap_pending") : null,
        g.remapped_rows_failure ? h("strong", {}, t("admin.node.remap_failure")) : null);
      if (!(list instanceof Node)) return t("admin.node.no_errors");
      return bad ? h("div", { class: "admin-bad" }, list) : list;
    } },
    { label: t("admin.node.links"), cell: (r) => {
      const g = r.tel;
      if (!has(g.nvlink_crc_errors) && !has(g.nvlink_links_down) && !has(g.pcie_replays)) return none();
      const list = lines(
        g.nvlink_crc_errors > 0 ? t("admin.node.crc", { n: number(g.nvlink_crc_errors) }) : null,
        g.nvlink_links_down > 0 ? h("strong", { class: "admin-bad" }, t("admin.node.links_down", { n: number(g.nvlink_links_down) })) : null,
        g.pcie_replays > 0 ? t("admin.node.replays", { n: number(g.pcie_replays) }) : null);
      return list instanceof Node ? list : t("admin.node.no_errors");
    } },
    { label: t("admin.node.throttle"), cell: (r) => (r.tel.throttle_reasons && r.tel.throttle_reasons.length
      ? lines(...r.tel.throttle_reasons.map((x) => h("code", {}, x)))
      : (node.telemetry ? t("admin.node.not_throttled") : none())) },
  ];
  return section("admin-node-gpus", t("admin.node.gpus"),
    h("p", { class: "admin-muted" }, node.telemetry
      ? t("admin.node.telemetry_at", { time: dateTime(node.telemetry.at) }) : t("admin.node.no_telemetry")),
    dataTable({ caption: t("admin.node.gpus_caption"), columns, rows, className: "admin-gpus" }));
}

// ---- Telemetry history -------------------------------------------------------------------

const METRICS = [
  { key: "temperature_c", label: "admin.node.temperature", format: celsius, max: (v) => Math.max(100, v) },
  { key: "utilization_pct", label: "admin.node.utilization", format: pct, max: () => 100 },
  { key: "memory_used_mib", label: "admin.node.memory", format: gib, max: (v, g) => Math.max(v, g.memory_total_mib || 0) },
  { key: "power_w", label: "admin.node.power", format: watts, max: (v, g) => Math.max(v, g.power_limit_w || 0) },
];
const SPARK_W = 120;
const SPARK_H = 32;
const SPARK_BUCKETS = 60;

// The series as a line over [from, to): the mean of each of 60 time buckets; empty buckets
// break the line, so a silent agent shows as a gap.
function sparkline(points, from, to, max, label) {
  const span = to - from;
  const sums = new Array(SPARK_BUCKETS).fill(0);
  const counts = new Array(SPARK_BUCKETS).fill(0);
  for (const [at, v] of points) {
    const b = Math.min(SPARK_BUCKETS - 1, Math.max(0, Math.floor(((at - from) / span) * SPARK_BUCKETS)));
    sums[b] += v;
    counts[b] += 1;
  }
  const segments = [];
  let current = [];
  for (let b = 0; b < SPARK_BUCKETS; b++) {
    if (!counts[b]) {
      if (current.length) segments.push(current);
      current = [];
      continue;
    }
    const x = ((b + 0.5) / SPARK_BUCKETS) * SPARK_W;
    const y = SPARK_H - 2 - (Math.min(sums[b] / counts[b], max) / max) * (SPARK_H - 4);
    current.push([x.toFixed(1), y.toFixed(1)]);
  }
  if (current.length) segments.push(current);
  return svg("svg", { class: "admin-spark", viewBox: `0 0 ${SPARK_W} ${SPARK_H}`, width: SPARK_W, height: SPARK_H,
                      role: "img", "aria-label": label, focusable: "false" },
    svg("line", { class: "admin-spark-base", x1: 0, y1: SPARK_H - 1, x2: SPARK_W, y2: SPARK_H - 1 }),
    segments.map((s) => (s.length === 1
      ? svg("circle", { class: "admin-spark-dot", cx: s[0][0], cy: s[0][1], r: 1.8 })
      : svg("polyline", { class: "admin-spark-line", points: s.map((p) => p.join(",")).join(" ") }))));
}

function historySection(node, signal) {
  const body = h("div", { class: "admin-history" });
  const latest = new Map(((node.telemetry && node.telemetry.gpus) || []).map((g) => [g.index, g]));
  const period = field({ label: t("admin.node.period"), name: "hours", value: "24",
                         options: ["1", "6", "24", "168"].map((v) => ({ value: v, label: t(`admin.node.period.${v}`) })) });
  const select = period.querySelector("select");

  async function load() {
    body.setAttribute("aria-busy", "true");
    const hours = Number(select.value);
    const to = new Date();
    const from = new Date(to.getTime() - hours * 3600 * 1000);
    try {
      const data = await get(`/v1/admin/nodes/${encodeURIComponent(node.id)}/telemetry?from=${encodeURIComponent(from.toISOString())}`,
        { signal });
      body.replaceChildren(historyTable(data, latest, Date.parse(data.from), Date.parse(data.to)));
    } catch (err) {
      if (err.name === "AbortError") return;
      body.replaceChildren(h("p", { class: "empty" }, t("admin.node.history_unavailable", { error: describeError(err) })));
    } finally {
      body.removeAttribute("aria-busy");
    }
  }
  select.addEventListener("change", load);
  load();
  return section("admin-node-history", t("admin.node.history"), h("div", { class: "admin-narrow-field" }, period), body);
}

function historyTable(data, latest, from, to) {
  const series = new Map();  // gpu index → metric key → [[at, value]]
  for (const point of data.items || []) {
    const at = Date.parse(point.at);
    for (const g of point.gpus || []) {
      if (!series.has(g.index)) series.set(g.index, Object.fromEntries(METRICS.map((m) => [m.key, []])));
      for (const m of METRICS) if (typeof g[m.key] === "number") series.get(g.index)[m.key].push([at, g[m.key]]);
    }
  }
  if (!series.size) return h("p", { class: "empty" }, t("admin.node.history_none"));
  const rows = [...series.keys()].sort((a, b) => a - b).map((index) => ({ index, s: series.get(index) }));
  const columns = [{ label: t("admin.node.gpu"), cell: (r) => `GPU ${r.index}` },
    ...METRICS.map((m) => ({ label: t(m.label), cell: (r) => {
      const points = r.s[m.key];
      if (!points.length) return t("admin.none");
      const values = points.map((p) => p[1]);
      const min = Math.min(...values);
      const maxSeen = Math.max(...values);
      const last = values[values.length - 1];
      const words = { metric: t(m.label), gpu: r.index, min: m.format(min), max: m.format(maxSeen), last: m.format(last) };
      return h("div", { class: "admin-spark-cell" },
        sparkline(points, from, to, m.max(maxSeen, latest.get(r.index) || {}) || 1, t("admin.node.spark_label", words)),
        h("span", { class: "admin-small", "aria-hidden": "true" }, t("admin.node.range", words)));
    } }))];
  return dataTable({ caption: t("admin.node.history_caption"), columns, rows, className: "admin-history-table" });
}

// ---- Topology ----------------------------------------------------------------------------

const KIND_ORDER = ["sys", "node", "phb", "pxb", "pix", "nv"];

function kindClass(kind) {
  if (/^NV\d+$/.test(kind)) return "nv";
  const k = String(kind).toLowerCase();
  return k === "soc" ? "sys" : k;
}

function kindText(kind) {
  const c = kindClass(kind);
  if (c === "nv") return t("admin.node.kind.nv", { kind, n: Number(kind.slice(2)) });
  const key = `admin.node.kind.${c}`;
  const text = t(key, { kind });
  return text === key ? kind : text;
}

function nvWidth(kind) {
  return 1.5 + Math.min(Number(kind.slice(2)) || 1, 18) / 4;
}

function sampleLine(kind) {
  const c = kindClass(kind);
  return svg("svg", { class: "admin-legend-sample", viewBox: "0 0 48 12", width: 48, height: 12, "aria-hidden": "true", focusable: "false" },
    svg("line", { class: `admin-link link-${c}`, x1: 2, y1: 6, x2: 46, y2: 6, "stroke-width": c === "nv" ? nvWidth(kind) : null }));
}

function topologySection(node, model) {
  const topo = node.topology;
  const n = topo && topo.gpus;
  if (!n || !Array.isArray(topo.links) || topo.links.length !== n) {
    return section("admin-node-topology", t("admin.node.topology"), h("p", { class: "empty" }, t("admin.node.topology_none")));
  }
  const pairs = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) pairs.push({ i, j, kind: topo.links[i][j] });
  const kinds = new Map();
  for (const p of pairs) kinds.set(p.kind, (kinds.get(p.kind) || 0) + 1);
  const kindList = [...kinds.keys()].sort((a, b) => KIND_ORDER.indexOf(kindClass(b)) - KIND_ORDER.indexOf(kindClass(a))
    || Number(b.slice(2)) - Number(a.slice(2)) || a.localeCompare(b));
  const summary = kindList.map((k) => `${k} × ${t("admin.node.pairs", { n: kinds.get(k) })}`).join("; ");

  // GPUs on a circle (two GPUs side by side), links as chords beneath the boxes.
  const boxW = 60;
  const boxH = 30;
  const radius = n <= 2 ? 90 : Math.max(110, (n * (boxW + 14)) / (2 * Math.PI));
  const size = 2 * radius + boxW + 40;
  const c = size / 2;
  const at = (i) => {
    const angle = n <= 2 ? Math.PI + i * Math.PI : -Math.PI / 2 + (2 * Math.PI * i) / n;
    return { x: c + radius * Math.cos(angle), y: c + radius * Math.sin(angle) };
  };
  const pos = Array.from({ length: n }, (_, i) => at(i));
  const ordered = [...pairs].sort((a, b) => KIND_ORDER.indexOf(kindClass(a.kind)) - KIND_ORDER.indexOf(kindClass(b.kind)));
  const nvPairs = pairs.filter((p) => kindClass(p.kind) === "nv");
  const labelLinks = nvPairs.length > 0 && nvPairs.length <= 8;
  const drawing = svg("svg", { class: "admin-topology", viewBox: `0 0 ${size.toFixed(0)} ${size.toFixed(0)}`, role: "img",
                               "aria-label": t("admin.node.topology_drawing", { summary }), focusable: "false" },
    svg("g", { class: "links" }, ordered.map((p) => {
      const k = kindClass(p.kind);
      return svg("line", { class: `admin-link link-${k}`, x1: pos[p.i].x.toFixed(1), y1: pos[p.i].y.toFixed(1),
                           x2: pos[p.j].x.toFixed(1), y2: pos[p.j].y.toFixed(1), "stroke-width": k === "nv" ? nvWidth(p.kind) : null },
        svg("title", {}, `GPU${p.i} ↔ GPU${p.j}: ${p.kind}`));
    })),
    labelLinks ? svg("g", { class: "labels" }, nvPairs.map((p) => svg("text", {
      class: "admin-link-label", x: ((pos[p.i].x + pos[p.j].x) / 2).toFixed(1), y: ((pos[p.i].y + pos[p.j].y) / 2 - 4).toFixed(1),
      "text-anchor": "middle" }, p.kind))) : null,
    svg("g", { class: "gpus" }, pos.map((p, i) => svg("g", { class: "admin-gpu-box" },
      svg("rect", { x: (p.x - boxW / 2).toFixed(1), y: (p.y - boxH / 2).toFixed(1), width: boxW, height: boxH, rx: 5 }),
      svg("text", { x: p.x.toFixed(1), y: (p.y + 5).toFixed(1), "text-anchor": "middle" }, `GPU${i}`)))));

  const legend = h("div", { class: "admin-legend" },
    h("h3", {}, t("admin.node.legend")),
    h("ul", {}, kindList.map((k) => h("li", {}, sampleLine(k), h("span", {}, kindText(k), " (", t("admin.node.pairs", { n: kinds.get(k) }), ")")))),
    model && model.nvlink && model.nvlink.bandwidth_gbps
      ? h("p", { class: "admin-muted" }, t("admin.node.model_nvlink", { model: model.name, generation: model.nvlink.generation ?? "?",
                                                                         bandwidth: number(model.nvlink.bandwidth_gbps) }))
      : null);

  const matrix = scrollRegion(t("admin.node.matrix_caption"),
    h("table", { class: "admin-table admin-matrix" },
      h("caption", { class: "visually-hidden" }, t("admin.node.matrix_caption")),
      h("thead", {}, h("tr", {}, h("td", {}), Array.from({ length: n }, (_, j) => h("th", { scope: "col" }, `GPU${j}`)))),
      h("tbody", {}, topo.links.map((row, i) => h("tr", {}, h("th", { scope: "row" }, `GPU${i}`),
        row.map((kind, j) => h("td", { class: i === j ? "self" : `kind-${kindClass(kind)}` }, kind)))))));

  return section("admin-node-topology", t("admin.node.topology"),
    h("div", { class: "admin-topology-wrap" }, h("figure", {}, drawing), legend),
    h("h3", { class: "admin-matrix-title", "aria-hidden": "true" }, t("admin.node.matrix_caption")),
    matrix);
}

// ---- Rentals, history, host keys ---------------------------------------------------------

function rentalsSection(node) {
  const columns = [
    { label: t("admin.node.rental"), cell: (r) => [r.name ? h("strong", {}, r.name) : null, " ", idCode(r.id)] },
    { label: t("admin.node.org"), cell: (r) => h("a", { href: `#/admin/audit?org_id=${encodeURIComponent(r.org_id)}` }, r.org_id) },
    { label: t("admin.node.state"), cell: (r) => stateBadge(r.state) },
    { label: t("admin.node.rental_gpus"), cell: (r) => (r.gpu_indices || []).join(", ") || none() },
    { label: t("admin.node.period_col"), cell: (r) => (r.period ? `${dateTime(r.period.start)} – ${dateTime(r.period.end)}` : none()) },
    { label: t("admin.node.per_day"), num: true, cell: (r) => money(r.price && r.price.per_day) },
  ];
  return section("admin-node-rentals", t("admin.node.rentals"),
    dataTable({ caption: t("admin.node.rentals_caption"), columns, rows: node.rentals || [], empty: t("admin.node.rentals_none") }));
}

// The node's maintenance windows, each cancellable, and a form to plan one (its times in the
// browser's own zone).
function maintenanceSection(ctx, node, windows) {
  const columns = [
    { label: t("admin.node.mw_start"), cell: (w) => dateTime(w.start) },
    { label: t("admin.node.mw_end"), cell: (w) => dateTime(w.end) },
    { label: t("admin.node.mw_reason"), cell: (w) => w.reason },
    { label: t("admin.node.actions"), cell: (w) => {
      const button = h("button", { type: "button", "aria-label": t("admin.node.mw_cancel_label", { start: dateTime(w.start) }) },
        t("admin.node.mw_cancel"));
      button.addEventListener("click", () => busy(button, async () => {
        await del(`/v1/admin/maintenance/${encodeURIComponent(w.id)}`);
        toast(t("admin.node.mw_cancelled"));
        ctx.rerender();
      }));
      return button;
    } },
  ];
  const form = h("form", { class: "admin-reason", novalidate: true },
    h("h3", {}, t("admin.node.mw_plan")),
    h("p", { class: "admin-muted" }, t("admin.node.mw_hint")),
    field({ label: t("admin.node.mw_start"), name: "start", type: "datetime-local", required: true }),
    field({ label: t("admin.node.mw_end"), name: "end", type: "datetime-local", required: true }),
    field({ label: t("admin.node.mw_why"), name: "reason", required: true, attrs: { maxlength: 500 } }),
    h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary" }, t("admin.node.mw_plan"))));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button[type=submit]"), async () => {
      const data = new FormData(form);
      const at = (name) => {
        const value = String(data.get(name) || "");
        if (!value) throw clientError(name, t("admin.error.required"));
        return new Date(value).toISOString().replace(/\.\d+Z$/, "Z");
      };
      const reason = String(data.get("reason") || "").trim();
      if (!reason) throw clientError("reason", t("admin.error.required"));
      const planned = await post("/v1/admin/maintenance", { node_ids: [node.id], start: at("start"), end: at("end"), reason },
        { idempotencyKey: newIdempotencyKey() });
      toast(t("admin.node.mw_planned", { n: planned.moved.length }));
      ctx.rerender();
    }, form);
  });
  return section("admin-node-maintenance", t("admin.node.maintenance"),
    dataTable({ caption: t("admin.node.maintenance_caption"), columns, rows: windows, empty: t("admin.node.maintenance_none") }),
    h("div", { class: "card" }, form));
}

function eventsSection(node) {
  const rows = [...(node.events || [])].sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  const evLabel = (a) => {
    const text = t(`admin.node.ev.${a}`);
    return text.startsWith("admin.") ? a : text;
  };
  const columns = [
    { label: t("admin.node.when"), cell: (e) => dateTime(e.at) },
    { label: t("admin.node.action"), cell: (e) => evLabel(e.action) },
    { label: t("admin.node.change"), cell: (e) => [e.from_state ? stateBadge(e.from_state) : null, e.from_state ? " → " : null,
      stateBadge(e.to_state)] },
    { label: t("admin.node.reason"), cell: (e) => e.reason || none() },
    { label: t("admin.node.by"), cell: (e) => (e.actor_user_id ? idCode(e.actor_user_id) : t("admin.node.system")) },
  ];
  return section("admin-node-events", t("admin.node.events"),
    dataTable({ caption: t("admin.node.events_caption"), columns, rows }));
}

const SEVERITY_CLASS = { ok: "healthy", info: "admin-info", warning: "warning", critical: "critical" };

function healthSection(node, signal) {
  const rows = [...(node.health_events || [])];
  const holder = h("div", {});
  const more = h("button", { type: "button" }, t("admin.load_more"));
  const severity = (s) => {
    const text = s === "info" ? t("admin.node.sev.info") : (s === "ok" ? t("admin.health.ok") : t(`admin.health.${s}`));
    return h("span", { class: `badge ${SEVERITY_CLASS[s] || ""}` }, text.startsWith("admin.") ? s : text);
  };
  const columns = [
    { label: t("admin.node.when"), cell: (e) => dateTime(e.at) },
    { label: t("admin.node.subject"), cell: (e) => (e.gpu_index === null || e.gpu_index === undefined
      ? t("admin.node.whole_node") : `GPU ${e.gpu_index}`) },
    { label: t("admin.node.kind"), cell: (e) => (e.kind === "xid" && e.xid !== null ? t("admin.node.xid", { n: e.xid })
      : (e.kind === "health" ? t("admin.node.health_change") : e.kind)) },
    { label: t("admin.node.severity"), cell: (e) => severity(e.severity) },
    { label: t("admin.node.reason"), cell: (e) => e.reason || none() },
  ];
  let done = rows.length < 20;
  const draw = () => {
    replace(holder, dataTable({ caption: t("admin.node.health_caption"), columns, rows, empty: t("admin.node.health_none") }),
      done ? null : more);
  };
  more.addEventListener("click", () => busy(more, async () => {
    const last = rows[rows.length - 1];
    const next = await get(`/v1/admin/nodes/${encodeURIComponent(node.id)}/health-events?limit=50&cursor=${encodeURIComponent(last.id)}`,
      { signal });
    rows.push(...(next.items || []));
    done = !next.next_cursor;
    draw();
    if (!done) more.focus();
  }));
  draw();
  return section("admin-node-health", t("admin.node.health_events"), holder);
}

function hostKeysSection(node) {
  const columns = [
    { label: t("admin.node.algorithm"), cell: (k) => k.algorithm },
    { label: t("admin.node.fingerprint"), cell: (k) => h("code", { class: "admin-id" }, k.fingerprint) },
    { label: t("admin.node.reported"), cell: (k) => dateTime(k.reported_at) },
  ];
  return section("admin-node-keys", t("admin.node.host_keys"),
    dataTable({ caption: t("admin.node.host_keys_caption"), columns, rows: node.ssh_host_keys || [],
                empty: t("admin.node.host_keys_none") }));
}
