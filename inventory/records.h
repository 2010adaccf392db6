// What the inventory stores hand out: plain values, read from PostgreSQL, printed by api/.
// Times are Timestamps; the API edge formats them (format_rfc3339).
#pragma once

#include "agent_proto/topology.h"
#include "core/clock.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

// One row of the GPU model catalog (reference gpus.md).
struct GpuModelRecord {
  std::string name;  // the catalog key, "H100-SXM5-80GB"
  std::string vendor;
  std::string architecture;        // "Hopper"
  std::string compute_capability;  // "9.0"
  int vram_gb = 0;
  std::string memory_type;
  std::optional<int> memory_bandwidth_gbps;  // GB/s; absent when unverified
  std::string nvlink_connection;             // nvswitch | bridge | mesh | none
  std::optional<int> nvlink_generation;
  std::optional<int> nvlink_bandwidth_gbps;       // per GPU, GB/s
  std::optional<std::string> nvswitch_link_kind;  // "NV18" on an HGX board
  std::optional<std::string> bridge_link_kind;    // "NV4" between bridged PCIe GPUs
  bool bf16 = false;
  bool fp8 = false;
  int tdp_w = 0;
};

struct SiteRecord {
  std::string id;  // "sit_…"
  std::string name;
  std::string region;
  std::string timezone;  // IANA
  Timestamp created_at;
};

struct GpuRecord {
  int index = 0;
  std::optional<std::string> uuid;
  std::optional<std::string> pci_bus_id;
  std::string health;  // unknown | ok | warning | critical
};

struct NodeEvent {
  Timestamp at;
  std::string action;
  std::optional<std::string> from_state;
  std::string to_state;
  std::string reason;
  std::optional<std::string> actor_user_id;
};

struct NodeRecord {
  std::string id;  // "nod_…"
  std::string site_id;
  std::string hostname;
  std::string gpu_model;
  int gpu_count = 0;
  std::string interconnect;  // nvswitch | nvlink-pairs | pcie
  std::optional<std::string> cpu_model;
  std::optional<int> cpu_cores;
  std::optional<int> ram_gb;
  std::optional<int> disk_gb;
  nlohmann::json labels = nlohmann::json::object();  // string -> string
  int ssh_port = 22;  // where the node's sshd listens for engineers (1 to 65535)
  // The agent's own probe key, "ssh-ed25519 BASE64", as its latest hello reported it.
  std::optional<std::string> ssh_probe_key;
  std::string state;
  Timestamp state_changed_at;
  std::string health;
  std::optional<std::string> driver_version;
  std::optional<std::string> agent_version;
  std::optional<Timestamp> last_heartbeat_at;
  std::string topology_source;  // declared | admin | agent
  Timestamp created_at;
};

// A node with its GPUs, link matrix and latest state changes (newest first).
struct NodeDetail {
  NodeRecord node;
  std::vector<GpuRecord> gpus;
  topology::Matrix topology;
  std::vector<NodeEvent> events;
};

struct ImageRecord {
  std::string id;  // "img_…"
  std::string name;
  std::string os;
  std::string driver_version;
  std::string cuda_version;
  std::vector<std::string> frameworks;
  std::string status;  // active | deprecated
  Timestamp created_at;
  std::optional<Timestamp> deprecated_at;
};

// One price-list row: a rental shape and its price per day.
struct PriceRecord {
  long long id = 0;  // the row a rental priced now would keep
  std::string gpu_model;
  int gpu_count = 0;
  long long amount_minor = 0;
  std::string currency;
  Timestamp valid_from;
};

}  // namespace gpurent::inventory
