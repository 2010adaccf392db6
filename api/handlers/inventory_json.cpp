// Inventory records as JSON; times print as RFC 3339 in UTC, to the second.
#include "api/handlers/inventory_json.h"

#include "api/handlers/json_values.h"
#include "inventory/node_state.h"

namespace gpurent::http {

nlohmann::json gpu_model_json(const inventory::GpuModelRecord& m) {
  nlohmann::json nvlink = nullptr;
  if (m.nvlink_connection != "none") {
    nvlink = {{"connection", m.nvlink_connection},
              {"generation", optional_json(m.nvlink_generation)},
              {"bandwidth_gbps", optional_json(m.nvlink_bandwidth_gbps)}};
  }
  return {{"name", m.name},
          {"vendor", m.vendor},
          {"architecture", m.architecture},
          {"compute_capability", m.compute_capability},
          {"vram_gb", m.vram_gb},
          {"memory_type", m.memory_type},
          {"memory_bandwidth_gbps", optional_json(m.memory_bandwidth_gbps)},
          {"bf16", m.bf16},
          {"fp8", m.fp8},
          {"nvlink", nvlink},
          {"tdp_w", m.tdp_w}};
}

nlohmann::json image_json(const inventory::ImageRecord& i,
                          const std::vector<std::string>& compatible_gpu_models) {
  return {{"id", i.id},
          {"name", i.name},
          {"os", i.os},
          {"driver_version", i.driver_version},
          {"cuda_version", i.cuda_version},
          {"frameworks", i.frameworks},
          {"status", i.status},
          {"compatible_gpu_models", compatible_gpu_models},
          {"created_at", time_json(i.created_at)},
          {"deprecated_at", optional_json(i.deprecated_at)}};
}

nlohmann::json site_json(const inventory::SiteRecord& s) {
  return {{"id", s.id},
          {"name", s.name},
          {"region", s.region},
          {"timezone", s.timezone},
          {"created_at", time_json(s.created_at)}};
}

// The admin actions the node state machine takes from the node's state, by name.
nlohmann::json node_actions_json(const std::string& state) {
  nlohmann::json out = nlohmann::json::array();
  if (auto s = inventory::parse_node_state(state)) {
    for (auto a : inventory::allowed_admin_actions(*s)) out.push_back(inventory::to_string(a));
  }
  return out;
}

nlohmann::json node_json(const inventory::NodeRecord& n) {
  return {{"id", n.id},
          {"site_id", n.site_id},
          {"hostname", n.hostname},
          {"gpu_model", n.gpu_model},
          {"gpu_count", n.gpu_count},
          {"interconnect", n.interconnect},
          {"cpu_model", optional_json(n.cpu_model)},
          {"cpu_cores", optional_json(n.cpu_cores)},
          {"ram_gb", optional_json(n.ram_gb)},
          {"disk_gb", optional_json(n.disk_gb)},
          {"labels", n.labels},
          {"ssh_port", n.ssh_port},
          {"ssh_probe_key", optional_json(n.ssh_probe_key)},
          {"state", n.state},
          {"allowed_actions", node_actions_json(n.state)},
          {"state_changed_at", time_json(n.state_changed_at)},
          {"health", n.health},
          {"driver_version", optional_json(n.driver_version)},
          {"agent_version", optional_json(n.agent_version)},
          {"last_heartbeat_at", optional_json(n.last_heartbeat_at)},
          {"topology_source", n.topology_source},
          {"created_at", time_json(n.created_at)}};
}

nlohmann::json node_detail_json(const inventory::NodeDetail& d) {
  nlohmann::json out = node_json(d.node);
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : d.gpus) {
    gpus.push_back({{"index", g.index},
                    {"uuid", optional_json(g.uuid)},
                    {"pci_bus_id", optional_json(g.pci_bus_id)},
                    {"health", g.health}});
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : d.events) {
    events.push_back({{"at", time_json(e.at)},
                      {"action", e.action},
                      {"from_state", optional_json(e.from_state)},
                      {"to_state", e.to_state},
                      {"reason", e.reason},
                      {"actor_user_id", optional_json(e.actor_user_id)}});
  }
  out["gpus"] = std::move(gpus);
  out["topology"] = topology::to_json(d.topology);
  // The admin routes add the rentals, burn-ins, host keys, latest telemetry and health events.
  out["telemetry"] = nullptr;
  out["rentals"] = nlohmann::json::array();
  out["burn_ins"] = nlohmann::json::array();
  out["ssh_host_keys"] = nlohmann::json::array();
  out["health_events"] = nlohmann::json::array();
  out["events"] = std::move(events);
  return out;
}

nlohmann::json price_json(const inventory::PriceRecord& p) {
  return {{"gpu_model", p.gpu_model},
          {"gpu_count", p.gpu_count},
          {"price_per_day", {{"amount_minor", p.amount_minor}, {"currency", p.currency}}},
          {"valid_from", time_json(p.valid_from)}};
}

}  // namespace gpurent::http
