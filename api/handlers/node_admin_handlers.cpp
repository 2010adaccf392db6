// Site and node admin routes: read and check the request, then one store call each, in a
// transaction of its own (or, for reads, on a connection of its own).
#include "api/handlers/node_admin_handlers.h"

#include "api/handlers/inventory_json.h"
#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/json_body.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"

#include <cctype>

namespace gpurent::http {
namespace {

constexpr std::size_t kMaxLabels = 32;

Error no_such_node() {
  return Error(ErrorCode::kNotFound, "No such node.");
}

std::string node_id_param(const Request& req) {
  return path_id(req, "id", id_prefix::kNode, no_such_node().what());
}

// A DNS name: letters, digits, '-' and '.', each label 1..63 and not starting with '-'.
std::string hostname(const std::string& value) {
  auto bad = [] {
    return Error::invalid_field("hostname",
                                "must be a host name of letters, digits, '-' and '.' (1 to 253)");
  };
  if (value.empty() || value.size() > 253) throw bad();
  std::size_t label = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '.') {
      if (label == 0) throw bad();
      label = 0;
      continue;
    }
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || (c == '-' && label > 0);
    if (!ok || ++label > 63) throw bad();
  }
  if (label == 0) throw bad();
  return value;
}

// Labels: an object of at most 32 keys (lower-case letters, digits, '.', '_', '/', '-';
// 1..63) with printable string values up to 200 bytes.
nlohmann::json labels(const nlohmann::json& value) {
  if (!value.is_object()) throw Error::invalid_field("labels", "must be an object of strings");
  if (value.size() > kMaxLabels) {
    throw Error::invalid_field("labels", "must have at most 32 labels");
  }
  for (const auto& [key, v] : value.items()) {
    bool key_ok = !key.empty() && key.size() <= 63;
    for (char c : key) {
      key_ok = key_ok && (std::islower(static_cast<unsigned char>(c)) ||
                          std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                          c == '/' || c == '-');
    }
    if (!key_ok) {
      throw Error::invalid_field("labels",
                                 "keys are 1 to 63 lower-case letters, digits, '.', '_', '/', '-'");
    }
    // The port is a field of its own now; a label of that name would be silently ignored.
    if (key == "ssh_port") {
      throw Error::invalid_field("labels.ssh_port",
                                 "the SSH port is the node's ssh_port field, not a label");
    }
    if (!v.is_string()) throw Error::invalid_field("labels." + key, "must be a string");
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > 200 || has_control_characters(s)) {
      throw Error::invalid_field("labels." + key, "must be at most 200 printable characters");
    }
  }
  return value;
}

// A fact a PATCH may set or clear: changed when the body names the field at all (null
// clears), with the value read from it.
template <typename T>
inventory::FactChange<T> fact_change(const nlohmann::json& body, const char* field,
                                     std::optional<T> value) {
  return {body.contains(field), std::move(value)};
}

std::optional<int> optional_small_int(JsonObjectReader& in, const char* field, int max) {
  auto v = in.optional_int(field, 1, max);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

inventory::NewNode read_new_node(const nlohmann::json& body) {
  JsonObjectReader in(body);
  inventory::NewNode n;
  n.site_id = in.required_string("site_id", 64);
  n.hostname = hostname(in.required_string("hostname", 253));
  n.gpu_model = in.required_string("gpu_model", 64);
  n.gpu_count = static_cast<int>(in.required_int("gpu_count", 1, 64));
  n.interconnect = in.optional_string("interconnect", 32);
  if (auto cpu = in.optional_string("cpu_model", 200))
    n.cpu_model = printable_text("cpu_model", *cpu, 200);
  n.cpu_cores = optional_small_int(in, "cpu_cores", 4096);
  n.ram_gb = optional_small_int(in, "ram_gb", 1 << 20);
  n.disk_gb = optional_small_int(in, "disk_gb", 1 << 24);
  if (const auto* l = in.optional_value("labels")) n.labels = labels(*l);
  if (auto port = in.optional_int("ssh_port", 1, 65535)) n.ssh_port = static_cast<int>(*port);
  in.finish();
  return n;
}

inventory::NodeChange read_node_change(const nlohmann::json& body) {
  JsonObjectReader in(body);
  inventory::NodeChange c;
  // A node always has a hostname, a label set and an SSH port: null is refused rather than
  // ignored.
  for (const char* field : {"hostname", "labels", "ssh_port"}) {
    if (body.is_object() && body.contains(field) && body[field].is_null()) {
      throw Error::invalid_field(field, std::string_view(field) == "labels"
                                            ? "cannot be null (send {} to clear labels)"
                                            : "cannot be null");
    }
  }
  if (auto h = in.optional_string("hostname", 253)) c.hostname = hostname(*h);
  std::optional<std::string> cpu;
  if (auto v = in.optional_string("cpu_model", 200)) cpu = printable_text("cpu_model", *v, 200);
  c.cpu_model = fact_change(body, "cpu_model", cpu);
  c.cpu_cores = fact_change(body, "cpu_cores", optional_small_int(in, "cpu_cores", 4096));
  c.ram_gb = fact_change(body, "ram_gb", optional_small_int(in, "ram_gb", 1 << 20));
  c.disk_gb = fact_change(body, "disk_gb", optional_small_int(in, "disk_gb", 1 << 24));
  if (const auto* l = in.optional_value("labels")) c.labels = labels(*l);
  if (auto port = in.optional_int("ssh_port", 1, 65535)) c.ssh_port = static_cast<int>(*port);
  in.finish();
  return c;
}

std::string read_reason(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  std::string reason = printable_text("reason", in.required_string("reason", 1000), 1000);
  in.finish();
  return reason;
}

// PUT …/topology takes the text exactly as `nvidia-smi topo -m` printed it.
topology::Matrix read_topology_text(const Request& req) {
  if (!has_media_type(req, "text/plain")) {
    throw Error::invalid_field("Content-Type", "must be text/plain: the nvidia-smi topo -m output");
  }
  try {
    return topology::parse_topo_m(req.body);
  } catch (const topology::ParseError& e) {
    throw Error::invalid_field("topology", e.what());
  }
}

constexpr int kHealthEventsShown = 20;

nlohmann::json health_event_json(const inventory::HealthEvent& e) {
  return {{"id", std::to_string(e.id)},
          {"at", time_json(e.at)},
          {"gpu_index", optional_json(e.gpu_index)},
          {"kind", e.kind},
          {"severity", e.severity},
          {"xid", optional_json(e.xid)},
          {"reason", e.reason}};
}

// A node of the list, with its latest telemetry's time and hottest GPU.
nlohmann::json node_list_item_json(const inventory::NodeListItem& n) {
  auto item = node_json(n.node);
  const auto& t = n.telemetry;
  item["telemetry_at"] = t ? time_json(t->at) : nlohmann::json(nullptr);
  item["hottest_gpu_temperature_c"] = t && t->hottest_gpu_temperature_c
                                          ? nlohmann::json(*t->hottest_gpu_temperature_c)
                                          : nlohmann::json(nullptr);
  return item;
}

nlohmann::json telemetry_point_json(const inventory::TelemetryPoint& p) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : p.gpus) {
    gpus.push_back({{"index", g.index},
                    {"temperature_c", optional_json(g.temperature_c)},
                    {"power_w", optional_json(g.power_w)},
                    {"utilization_pct", optional_json(g.utilization_pct)},
                    {"memory_used_mib", optional_json(g.memory_used_mib)},
                    {"sm_clock_mhz", optional_json(g.sm_clock_mhz)}});
  }
  return {{"at", time_json(p.at)}, {"gpus", std::move(gpus)}};
}

// The node as every route answers it, read in the caller's use case: the detail, and what
// other modules and tables add to it (its latest rentals, its sshd host keys as its agent
// last reported them, which engineers check the host by).
nlohmann::json full_node_json(const NodeAdminRoutesState& state, Tx& tx,
                              const inventory::NodeDetail& node) {
  auto out = node_detail_json(node);
  if (state.work) {
    out["rentals"] = state.work->node_rentals(tx, node.node.id);
    out["burn_ins"] = state.work->node_burn_ins(tx, node.node.id);
  }
  nlohmann::json host_keys = nlohmann::json::array();
  if (state.host_keys) {
    for (const auto& k : state.host_keys->list(tx, node.node.id)) {
      host_keys.push_back({{"algorithm", k.algorithm},
                           {"fingerprint", k.fingerprint},
                           {"public_key", k.public_key},
                           {"reported_at", time_json(k.reported_at)}});
    }
  }
  out["ssh_host_keys"] = std::move(host_keys);
  nlohmann::json health_events = nlohmann::json::array();
  if (state.health_log) {
    if (auto latest = state.health_log->latest(tx, node.node.id)) {
      out["telemetry"] = {{"at", time_json(latest->at)}, {"gpus", latest->gpus}};
    }
    for (const auto& e : state.health_log->events(tx, node.node.id, kHealthEventsShown)) {
      health_events.push_back(health_event_json(e));
    }
  }
  out["health_events"] = std::move(health_events);
  return out;
}

void add_transition_route(Router& router, NodeAdminRoutesState& state, const char* verb,
                          inventory::NodeAction action, const char* summary) {
  router.add({.method = Method::kPost,
              .pattern = std::string("/v1/admin/nodes/{id}/") + verb,
              .handler =
                  [&state, action](const Request& req, const Principal& p) {
                    std::string id = node_id_param(req);
                    std::string reason = read_reason(req);
                    auto node = state.pool->transact(
                        "node_transition", [&](Tx& tx) -> std::optional<nlohmann::json> {
                          auto moved =
                              state.nodes->transition(tx, id, action, reason, actor_of(req, p));
                          if (!moved) return std::nullopt;
                          if (state.work) state.work->check_node_transition(tx, id, action);
                          return full_node_json(state, tx, *moved);
                        });
                    if (!node) throw no_such_node();
                    return json_response(200, *node);
                  },
              .platform_admin = true,
              .summary = summary,
              .tag = "admin"});
}

// An admin's burn-in of a whole node: queued for its agent, judged when it reports; the node
// view's `burn_ins` shows the verdict.
void add_burn_in_route(Router& router, NodeAdminRoutesState& state) {
  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/admin/nodes/{id}/burn-in",
       .handler =
           [&state](const Request& req, const Principal&) {
             std::string id = node_id_param(req);
             if (!state.work) throw no_such_node();
             auto task = state.pool->transact("node_burn_in", [&](Tx& tx) {
               auto node = state.nodes->get(tx, id);
               if (!node) throw no_such_node();
               return state.work->request_burn_in(tx, id, node->node.gpu_count);
             });
             return json_response(202, {{"node_id", id}, {"task_id", task}, {"phase", "admin"}});
           },
       .platform_admin = true,
       .summary = "Have the node's agent run its burn-in now; a failure drains the node "
                  "(its verdict shows in the node view's burn_ins).",
       .tag = "admin"});
}

void add_site_routes(Router& router, NodeAdminRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/sites",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.pool->read("site_list", [&](Tx& tx) {
                      return state.sites->list(tx, query.limit(), query.cursor());
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& s : page.items) items.push_back(site_json(s));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .platform_admin = true,
              .summary = "Sites, oldest first (platform admins).",
              .tag = "admin"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/admin/sites",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    auto name = printable_text("name", in.required_string("name", 100), 100);
                    auto region = printable_text("region", in.required_string("region", 100), 100);
                    auto timezone = in.required_string("timezone", 64);
                    in.finish();
                    auto site = state.pool->transact("site_create", [&](Tx& tx) {
                      return state.sites->create(tx, name, region, timezone, actor_of(req, p));
                    });
                    return json_response(201, site_json(site));
                  },
              .platform_admin = true,
              .summary = "Add a site: {name, region, timezone} (an IANA zone; rental days "
                         "follow it) (platform admins).",
              .tag = "admin"});
}

}  // namespace

// The agent's reports over time: the telemetry history for charts and the health history.
void add_health_routes(Router& router, NodeAdminRoutesState& state) {
  router.add(
      {.method = Method::kGet,
       .pattern = "/v1/admin/nodes/{id}/telemetry",
       .handler =
           [&state](const Request& req, const Principal&) {
             std::string id = node_id_param(req);
             QueryParams query(req, {"from", "to"});
             auto w = state.reports->telemetry(id, query.timestamp("from"), query.timestamp("to"));
             nlohmann::json items = nlohmann::json::array();
             for (const auto& p : w.points) items.push_back(telemetry_point_json(p));
             return json_response(200, {{"node_id", id},
                                        {"from", time_json(w.from)},
                                        {"to", time_json(w.to)},
                                        {"items", std::move(items)}});
           },
       .platform_admin = true,
       .summary = "The node's GPU telemetry history in [from, to) (default: the last 24 hours; "
                  "at most 7 days): temperature, power, utilisation and memory per GPU, one "
                  "sample per agent_telemetry_interval, oldest first (platform admins).",
       .tag = "admin"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/nodes/{id}/health-events",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    std::string id = node_id_param(req);
                    QueryParams query(req, {"limit", "cursor"});
                    auto page = state.reports->health_events(id, query.limit(), query.cursor());
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& e : page.items) items.push_back(health_event_json(e));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .platform_admin = true,
              .summary = "The node's health history, newest first: each XID event its agent "
                         "reported, with the health rules' severity, and each change of the "
                         "node's or a GPU's health, with why (platform admins).",
              .tag = "admin"});
}

void add_node_admin_routes(Router& router, NodeAdminRoutesState& state) {
  add_site_routes(router, state);

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/nodes",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    QueryParams query(req, {"site_id", "state", "gpu_model", "limit", "cursor"});
                    inventory::NodeFilter filter{.site_id = query.id("site_id", id_prefix::kSite),
                                                 .state = query.text("state"),
                                                 .gpu_model = query.text("gpu_model")};
                    auto page = state.reports->nodes(filter, query.limit(), query.cursor());
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& n : page.items) items.push_back(node_list_item_json(n));
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .platform_admin = true,
              .summary =
                  "Nodes, oldest first, each with its latest telemetry's time and hottest GPU; "
                  "filters site_id, state, gpu_model (platform admins).",
              .tag = "admin"});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/admin/nodes",
       .handler =
           [&state](const Request& req, const Principal& p) {
             auto node = read_new_node(parse_json_body(req));
             auto created = state.pool->transact("node_create", [&](Tx& tx) {
               return state.nodes->create(tx, node, actor_of(req, p));
             });
             return json_response(
                 201, {{"node", node_detail_json(created.node)},
                       {"enrollment_token", created.enrollment_token},
                       {"enrollment_token_expires_at", time_json(created.enrollment_expires_at)}});
           },
       .platform_admin = true,
       .summary = "Add a node in state enrolling: {site_id, hostname, gpu_model, gpu_count, "
                  "interconnect?, cpu_model?, cpu_cores?, ram_gb?, disk_gb?, labels?} → {node, "
                  "enrollment_token} (single use, shown once) (platform admins).",
       .tag = "admin"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/admin/nodes/{id}",
              .handler =
                  [&state](const Request& req, const Principal&) {
                    std::string id = node_id_param(req);
                    // One connection, no transaction: the node's four reads need no common
                    // snapshot (a transaction at READ COMMITTED would not give one either); a
                    // change landing between them shows in part now and whole on the next GET.
                    auto node =
                        state.pool->read("node_get", [&](Tx& tx) -> std::optional<nlohmann::json> {
                          auto n = state.nodes->get(tx, id);
                          if (!n) return std::nullopt;
                          return full_node_json(state, tx, *n);
                        });
                    if (!node) throw no_such_node();
                    return json_response(200, *node);
                  },
              .platform_admin = true,
              .summary = "A node with its GPUs, link matrix, health, state history, rentals "
                         "and sshd host keys (platform admins).",
              .tag = "admin"});

  if (state.health_log) add_health_routes(router, state);

  router.add(
      {.method = Method::kPatch,
       .pattern = "/v1/admin/nodes/{id}",
       .handler =
           [&state](const Request& req, const Principal& p) {
             std::string id = node_id_param(req);
             auto body = parse_json_body(req);
             auto change = read_node_change(body);
             auto full = [&](Tx& tx, const std::optional<inventory::NodeDetail>& n)
                 -> std::optional<nlohmann::json> {
               if (!n) return std::nullopt;
               return full_node_json(state, tx, *n);
             };
             auto node =
                 change.empty()
                     ? state.pool->read("node_get",
                                        [&](Tx& tx) { return full(tx, state.nodes->get(tx, id)); })
                     : state.pool->transact("node_update", [&](Tx& tx) {
                         return full(tx, state.nodes->update(tx, id, change, actor_of(req, p)));
                       });
             if (!node) throw no_such_node();
             return json_response(200, *node);
           },
       .platform_admin = true,
       .summary = "Change a node's hostname, hardware facts or labels; null clears an "
                  "optional fact (platform admins).",
       .tag = "admin"});

  router.add({.method = Method::kPut,
              .pattern = "/v1/admin/nodes/{id}/topology",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = node_id_param(req);
                    auto matrix = read_topology_text(req);
                    auto node = state.pool->transact(
                        "node_set_topology", [&](Tx& tx) -> std::optional<nlohmann::json> {
                          auto set =
                              state.nodes->set_topology(tx, id, matrix, "admin", actor_of(req, p));
                          if (!set) return std::nullopt;
                          return full_node_json(state, tx, *set);
                        });
                    if (!node) throw no_such_node();
                    return json_response(200, *node);
                  },
              .platform_admin = true,
              .summary = "Set a node's GPU link matrix from its `nvidia-smi topo -m` output "
                         "(text/plain body) (platform admins).",
              .tag = "admin"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/admin/nodes/{id}/enrollment-token",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = node_id_param(req);
                    auto token = state.pool->transact("node_enrollment_token", [&](Tx& tx) {
                      return state.nodes->issue_enrollment_token(tx, id, actor_of(req, p));
                    });
                    if (!token) throw no_such_node();
                    return json_response(201, {{"node_id", id},
                                               {"enrollment_token", token->enrollment_token},
                                               {"enrollment_token_expires_at",
                                                time_json(token->enrollment_expires_at)}});
                  },
              .platform_admin = true,
              .summary = "A fresh single-use enrolment token for a node whose agent is "
                         "reinstalled or whose first token expired; its next enrolment "
                         "revokes the agent's current certificate (platform admins).",
              .tag = "admin"});

  using inventory::NodeAction;
  add_transition_route(router, state, "maintenance", NodeAction::kMaintenance,
                       "Take a node out of service for maintenance: {reason} (platform admins).");
  add_transition_route(router, state, "drain", NodeAction::kDrain,
                       "Stop new allocations on a node; it goes to maintenance when its rentals "
                       "end: {reason} (platform admins).");
  add_transition_route(router, state, "activate", NodeAction::kActivate,
                       "Return a node from maintenance to service: {reason} (platform admins).");
  add_transition_route(router, state, "retire", NodeAction::kRetire,
                       "Retire a node for good: {reason} (platform admins).");
  add_burn_in_route(router, state);
}

}  // namespace gpurent::http
