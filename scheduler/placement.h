// Placement: which node, and which of its GPUs, take a rental. A pure function over plain
// values (no database, no clock), so every rule is table-tested and benchmarked directly;
// the booking use case loads the candidates, calls place(), and tries the choices in order
// inside its transaction (the exclusion constraint settles races with other bookings).
#pragma once

#include "agent_proto/topology.h"
#include "core/clock.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

// A half-open interval [start, end), as rental periods and allocations are.
struct Period {
  Timestamp start;
  Timestamp end;

  bool overlaps(const Period& other) const { return start < other.end && other.start < end; }
  bool operator==(const Period&) const = default;
};

// Whether the GPUs of a multi-GPU rental must be pairwise NVLink-connected (the default for
// more than one GPU) or may be any GPUs of one node.
enum class LinkNeed { kNvlink, kAny };

struct PlacementRequest {
  std::string gpu_model;  // a catalog name; constraints are resolved to names before this
  int gpu_count = 1;
  LinkNeed link_need = LinkNeed::kNvlink;
  // What the rental occupies: its period plus the cleaning window after it. Allocations are
  // stored with the same extension, so the database enforces the window too.
  Period occupies;
};

struct CandidateGpu {
  int index = 0;
  bool healthy = true;  // health `ok`; an unhealthy GPU is never placed
  // Its allocations that overlap the window the booking looked at, each already extended
  // by the cleaning window; in any order.
  std::vector<Period> busy;
};

// A node that may take the rental: loaded for the request's GPU model, `available` with
// health `ok` (the loader filters; place() trusts it).
struct NodeCandidate {
  std::string node_id;
  std::string gpu_model;
  topology::Matrix links;  // gpus x gpus, as `nvidia-smi topo -m` kinds
  std::vector<CandidateGpu> gpus;
  int recent_failures = 0;  // failed or interrupted rentals on the node lately
  // Where the node is and how it was declared: placement ignores them; the catalog's views
  // group their offers and calendars by them.
  std::string site_id;
  std::string site_name;
  std::string interconnect;  // nvswitch | nvlink-pairs | pcie
};

// One way to place the rental: a node and the GPU indices it would get.
struct Placement {
  std::string node_id;
  std::vector<int> gpu_indices;  // ascending
};

struct PlacementOptions {
  // At most this many choices are returned: the booking tries them in order and gives up
  // after the last (a bounded number of exclusion-violation retries).
  int max_choices = 8;
};

// Every node that fits, best first, each with its best GPU set:
//  1. fit: the GPUs are free (no busy period overlaps `occupies`) and healthy; for
//     LinkNeed::kNvlink with more than one GPU, every pair of the set is NVLink-connected
//     (NVSwitch: any subset; bridged pairs: only a bridged pair; a DGX-1 style hybrid cube
//     mesh: only some 4-GPU sets);
//  2. tightest: the fewest free GPUs left on the node over the period (whole nodes stay
//     whole for whole-node requests);
//  3. calendar adjacency: the fewest idle gaps the rental leaves on its GPUs;
//  4. fewest recent failures; then node id, so the order is deterministic.
std::vector<Placement> place(const PlacementRequest& request,
                             const std::vector<NodeCandidate>& candidates,
                             const PlacementOptions& options = {});
// The same over records held elsewhere (the capacity copy's shared nodes, which a booking
// chooses from without copying them).
std::vector<Placement> place_held(const PlacementRequest& request,
                                  const std::vector<const NodeCandidate*>& candidates,
                                  const PlacementOptions& options = {});

// Whether place() would find any choice among `candidates`: the same fit, without ranking
// (the first node that fits answers), over records held elsewhere (the catalog's views ask
// it of the capacity copy's shared nodes, for each start they try).
bool fits_any(const PlacementRequest& request, const std::vector<const NodeCandidate*>& candidates);

// Within one node: the best set of `count` GPUs among `free` (indices into `links`), or
// none when no set satisfies `need`. Sets score by the links between their members, NVLink
// with more bonded links first, then PCIe paths by distance (PIX, PXB, PHB, NODE, SYS);
// among equal sets, the one that leaves the remaining free GPUs best connected.
std::optional<std::vector<int>> choose_gpu_set(const topology::Matrix& links,
                                               const std::vector<int>& free, int count,
                                               LinkNeed need);

}  // namespace gpurent::scheduler
