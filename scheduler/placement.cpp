// Placement rules: which GPUs of a node a rental gets (by how they are linked) and the order
// in which the nodes that can take it are tried (tightness, calendar adjacency, failures, id).
#include "scheduler/placement.h"

#include "scheduler/candidate_prefetch.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace gpurent::scheduler {
namespace {

// One bit per GPU index: every set, free list and adjacency row of a node fits one word.
using Mask = std::uint64_t;
static_assert(topology::kMaxGpus <= 64, "GPU sets are 64-bit masks");

Mask bit(int i) {
  return Mask{1} << i;
}

// Positions 0..n-1.
Mask low_bits(int n) {
  return n >= 64 ? ~Mask{0} : bit(n) - 1;
}

// How much a pair of GPUs is worth inside one set. A bonded NVLink outweighs every PCIe pair
// of the largest node together (C(64,2) = 2016 pairs x 5 < 2^16), so comparing sums compares
// the NVLink totals first and PCIe distance only between equal NVLink totals: the idea of the
// link scores of NVIDIA's device-plugin allocator, as an exact order rather than weights.
constexpr std::int64_t kNvlinkWeight = std::int64_t{1} << 16;

// Shorter PCIe paths are worth more: PIX (one switch) over PXB (several switches) over PHB
// (through the host bridge) over NODE (between host bridges of a socket) over SYS/SOC (across
// sockets). "X" off the diagonal or an unknown kind earns nothing rather than failing the node.
std::int64_t pair_value(std::string_view kind) {
  if (kind.size() > 2 && kind[0] == 'N' && kind[1] == 'V') {
    return topology::nvlink_count(kind) * kNvlinkWeight;
  }
  if (kind == "PIX") return 5;
  if (kind == "PXB") return 4;
  if (kind == "PHB") return 3;
  if (kind == "NODE") return 2;
  if (kind == "SYS" || kind == "SOC") return 1;
  return 0;
}

// The loader and the agent protocol validate matrices; a ragged one would still make the
// search read out of bounds, so it disqualifies the node instead. Only the outer shape is
// checked here: each row is checked when the chooser reads it, because touching every row of
// every node in a decision costs a cache miss per node for nothing.
bool usable_shape(const topology::Matrix& links) {
  return links.gpus >= 0 && links.gpus <= topology::kMaxGpus &&
         static_cast<int>(links.links.size()) == links.gpus;
}

// The exact search gives up after visiting this many partial sets and grows sets greedily
// instead. 2^14 covers every set of every size on up to 14 free GPUs, so ordinary nodes (8
// GPUs: at most C(8,4) = 70 sets of one size) are always searched exhaustively; with kNvlink
// a set only grows by GPUs NVLinked to all its members, so sparse NVLink graphs (bridged
// pairs, hybrid cube meshes) stay exact on much larger nodes too. What overflows it is a
// dense, non-uniform graph of more than 14 free GPUs, where C(n, k) explodes: C(64, 32) is
// about 1.8e18. Uniform nodes (NVSwitch, all-PHB) never search: every set ties there.
constexpr std::int64_t kMaxSearchSteps = std::int64_t{1} << 14;

// A complete set in the chooser's local positions (0..n-1 over the free GPUs, ascending).
struct ScoredSet {
  Mask set = 0;
  std::int64_t score = 0;     // pair values inside the set
  std::int64_t leftover = 0;  // pair values among the free GPUs left outside it
};

// Whether `a` is the better choice than `b` (sets of the same size): a better-linked set;
// among equals the one that leaves the rest best linked, so the next request still finds a
// good set (take a GPU from an already broken pair, not from an intact one); then the lowest
// indices, so the choice is deterministic.
bool better(const ScoredSet& a, const ScoredSet& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.leftover != b.leftover) return a.leftover > b.leftover;
  // Ascending index lists compare at their first difference: the lowest GPU in exactly one
  // of the sets decides.
  Mask diff = a.set ^ b.set;
  return (a.set & diff & (~diff + 1)) != 0;
}

// Chooses sets on one node at a time; place() reuses one instance, so its buffers are
// allocated once per decision rather than once per node.
class GpuSetChooser {
 public:
  // The best set of `count` GPUs among `free` (indices below links.gpus of a matrix with
  // usable_shape), as a mask of GPU indices, or nullopt when none satisfies `need` or a row
  // the choice depends on is ragged.
  std::optional<Mask> choose(const topology::Matrix& links, Mask free, int count, LinkNeed need) {
    if (count < 1 || std::popcount(free) < count) return std::nullopt;
    count_ = count;
    nvlink_only_ = need == LinkNeed::kNvlink && count > 1;
    auto loaded = load(links, free);
    if (loaded == Links::kRagged) return std::nullopt;
    if (loaded == Links::kUniform) {
      // Every set scores the same and leaves the same behind: the lowest indices win, unless
      // the one kind there is not NVLink and NVLink is required.
      if (nvlink_only_ && n_ > 1 && value(0, 1) < kNvlinkWeight) return std::nullopt;
      return to_indices(low_bits(count));
    }
    best_.reset();
    steps_ = 0;
    exhausted_ = false;
    search(0, 0, 0, 0, all_);
    if (exhausted_) {
      if (auto grown = greedy(); grown && (!best_ || better(*grown, *best_))) best_ = grown;
    }
    if (!best_) return std::nullopt;
    return to_indices(best_->set);
  }

 private:
  enum class Links { kUniform, kMixed, kRagged };

  // Reads the links among the free GPUs once into a dense table.
  Links load(const topology::Matrix& links, Mask free) {
    n_ = 0;
    for (Mask m = free; m != 0; m &= m - 1) index_[n_++] = std::countr_zero(m);
    all_ = low_bits(n_);
    values_.assign(static_cast<std::size_t>(n_) * n_, 0);
    std::fill_n(nvlinked_.begin(), n_, 0);
    std::fill_n(degree_.begin(), n_, 0);
    total_ = 0;
    bool uniform = true;
    std::int64_t first = 0;
    for (int a = 0; a < n_; ++a) {
      const auto& row = links.links[index_[a]];
      if (static_cast<int>(row.size()) != links.gpus) return Links::kRagged;
      for (int b = a + 1; b < n_; ++b) {
        std::int64_t v = pair_value(row[index_[b]]);
        values_[a * n_ + b] = v;
        values_[b * n_ + a] = v;
        degree_[a] += v;
        degree_[b] += v;
        total_ += v;
        if (v >= kNvlinkWeight) {
          nvlinked_[a] |= bit(b);
          nvlinked_[b] |= bit(a);
        }
        if (a == 0 && b == 1) first = v;
        uniform = uniform && v == first;
      }
    }
    return uniform ? Links::kUniform : Links::kMixed;
  }

  std::int64_t value(int a, int b) const { return values_[a * n_ + b]; }

  // leftover = links among the rest = total - links touching the set + links inside it (the
  // degree sum counts those twice).
  ScoredSet scored(Mask set, std::int64_t score, std::int64_t degrees) const {
    return {set, score, total_ - degrees + score};
  }

  // Depth-first over sets in ascending index order, extending `set` by GPUs of `allowed`
  // (all higher than its members; with kNvlink only those NVLinked to every member). Only a
  // strictly better set replaces the best, so among equals the first (lowest) one stays.
  void search(Mask set, int size, std::int64_t score, std::int64_t degrees, Mask allowed) {
    if (size == count_) {
      auto candidate = scored(set, score, degrees);
      if (!best_ || better(candidate, *best_)) best_ = candidate;
      return;
    }
    for (Mask rest = allowed; rest != 0;) {
      if (std::popcount(rest) < count_ - size) return;
      if (++steps_ > kMaxSearchSteps) {
        exhausted_ = true;
        return;
      }
      int i = std::countr_zero(rest);
      rest &= rest - 1;
      std::int64_t gain = 0;
      for (Mask m = set; m != 0; m &= m - 1) gain += value(i, std::countr_zero(m));
      search(set | bit(i), size + 1, score + gain, degrees + degree_[i],
             nvlink_only_ ? rest & nvlinked_[i] : rest);
      if (exhausted_) return;
    }
  }

  // The fallback for searches too large to finish: from every free GPU as a seed, add the
  // GPU that adds the most link value (with kNvlink: among those NVLinked to every member);
  // among equals the one with the best link to any free GPU (so a GPU whose bridge partner
  // is still free comes before one whose partner is gone, and the pair can be completed next),
  // then the one whose links to the rest are worth least (the rest stays best linked), then
  // the lowest. The best set over all seeds wins, by the same order as the exact search.
  // O(n^2 * count) pair reads: about 1.3e5 for 32 of 64 GPUs. It can miss the best set: on
  // dense irregular NVLink graphs even a fully connected one that exists, and then the node
  // is not offered for that request.
  std::optional<ScoredSet> greedy() const {
    std::array<std::int64_t, topology::kMaxGpus> best_link{};
    for (int j = 0; j < n_; ++j) {
      for (int k = 0; k < n_; ++k) {
        if (k != j) best_link[j] = std::max(best_link[j], value(j, k));
      }
    }
    std::optional<ScoredSet> best;
    std::array<std::int64_t, topology::kMaxGpus> gain{};
    for (int seed = 0; seed < n_; ++seed) {
      Mask set = bit(seed);
      Mask allowed = (nvlink_only_ ? nvlinked_[seed] : all_) & ~set;
      for (int j = 0; j < n_; ++j) gain[j] = value(j, seed);
      std::int64_t score = 0;
      std::int64_t degrees = degree_[seed];
      int size = 1;
      while (size < count_ && allowed != 0) {
        int pick = -1;
        for (Mask m = allowed; m != 0; m &= m - 1) {
          int j = std::countr_zero(m);
          if (pick < 0 || std::tuple(gain[j], best_link[j], -degree_[j]) >
                              std::tuple(gain[pick], best_link[pick], -degree_[pick])) {
            pick = j;
          }
        }
        score += gain[pick];
        degrees += degree_[pick];
        set |= bit(pick);
        ++size;
        allowed &= ~bit(pick);
        if (nvlink_only_) allowed &= nvlinked_[pick];
        for (int j = 0; j < n_; ++j) gain[j] += value(j, pick);
      }
      if (size < count_) continue;
      auto candidate = scored(set, score, degrees);
      if (!best || better(candidate, *best)) best = candidate;
    }
    return best;
  }

  Mask to_indices(Mask local) const {
    Mask out = 0;
    for (Mask m = local; m != 0; m &= m - 1) out |= bit(index_[std::countr_zero(m)]);
    return out;
  }

  int n_ = 0;
  int count_ = 0;
  bool nvlink_only_ = false;
  Mask all_ = 0;
  std::array<int, topology::kMaxGpus> index_{};  // local position -> GPU index
  std::vector<std::int64_t> values_;             // n x n pair values
  std::array<Mask, topology::kMaxGpus> nvlinked_{};
  std::array<std::int64_t, topology::kMaxGpus> degree_{};  // pair values to every other free GPU
  std::int64_t total_ = 0;                                 // pair values among all free GPUs
  std::int64_t steps_ = 0;
  bool exhausted_ = false;
  std::optional<ScoredSet> best_;
};

std::vector<int> index_list(Mask set) {
  std::vector<int> out;
  out.reserve(std::popcount(set));
  for (Mask m = set; m != 0; m &= m - 1) out.push_back(std::countr_zero(m));
  return out;
}

// GPUs of the node that are healthy and have no busy period overlapping `occupies`, or none
// once fewer than `count` can be: for a large request most nodes of a busy fleet are out
// after a GPU or two, and reading calendars is most of a decision. A GPU the matrix does not cover
// cannot be placed (nothing says how it is linked); should the loader list an index twice, it is
// free only when every entry is.
Mask free_gpus(const NodeCandidate& node, const Period& occupies, int count) {
  int possible = static_cast<int>(node.gpus.size());
  if (possible < count || node.links.gpus < count) return 0;
  Mask listed = 0;
  Mask blocked = 0;
  for (const auto& gpu : node.gpus) {
    bool usable = gpu.index >= 0 && gpu.index < node.links.gpus && gpu.index < topology::kMaxGpus &&
                  gpu.healthy;
    for (std::size_t p = 0; usable && p < gpu.busy.size(); ++p) {
      usable = !gpu.busy[p].overlaps(occupies);
    }
    if (usable) {
      listed |= bit(gpu.index);
    } else {
      if (gpu.index >= 0 && gpu.index < topology::kMaxGpus) blocked |= bit(gpu.index);
      if (--possible < count) return 0;
    }
  }
  return listed & ~blocked;
}

// Idle gaps the rental leaves on its GPUs. On each side of `occupies`, a GPU's nearest
// allocation either touches the rental (ends exactly at occupies.start, or starts exactly at
// occupies.end: half-open periods, so back to back) or leaves an idle stretch between the two,
// a hole that may be too short to sell. One gap per GPU and side where the nearest allocation
// exists and does not touch. A side with no allocation in the window the booking looked at
// counts none: the idle time there is open-ended, not a hole between two bookings. (Should
// the loader list a GPU twice, its first entry's periods count.)
int idle_gaps(const NodeCandidate& node, Mask set, const Period& occupies) {
  int gaps = 0;
  Mask seen = 0;
  for (const auto& gpu : node.gpus) {
    if (gpu.index < 0 || gpu.index >= topology::kMaxGpus) continue;
    const Mask b = bit(gpu.index);
    if ((set & b) == 0 || (seen & b) != 0) continue;
    seen |= b;
    bool before = false;  // some allocation ends at or before the start
    bool after = false;   // some allocation starts at or after the end
    Timestamp last_end;
    Timestamp first_start;
    for (const auto& period : gpu.busy) {
      if (period.end <= occupies.start) {
        if (!before || period.end > last_end) last_end = period.end;
        before = true;
      } else if (period.start >= occupies.end) {
        if (!after || period.start < first_start) first_start = period.start;
        after = true;
      }
    }
    if (before && last_end < occupies.start) ++gaps;
    if (after && first_start > occupies.end) ++gaps;
  }
  return gaps;
}

}  // namespace

std::optional<std::vector<int>> choose_gpu_set(const topology::Matrix& links,
                                               const std::vector<int>& free, int count,
                                               LinkNeed need) {
  if (!usable_shape(links)) return std::nullopt;
  // Indices outside the matrix are ignored: nothing says how they are linked.
  Mask mask = 0;
  for (int i : free) {
    if (i >= 0 && i < links.gpus) mask |= bit(i);
  }
  GpuSetChooser chooser;
  auto set = chooser.choose(links, mask, count, need);
  if (!set) return std::nullopt;
  return index_list(*set);
}

bool fits_any(const PlacementRequest& request,
              const std::vector<const NodeCandidate*>& candidates) {
  const int count = request.gpu_count;
  if (count < 1 || count > topology::kMaxGpus) return false;
  GpuSetChooser chooser;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i + kListsAhead < candidates.size()) prefetch_gpu_list(*candidates[i + kListsAhead]);
    if (i + kBlocksAhead < candidates.size()) {
      prefetch_gpu_blocks(*candidates[i + kBlocksAhead], ~Mask{0}, false);
    }
    const auto& node = *candidates[i];
    if (node.gpu_model != request.gpu_model) continue;
    Mask free = free_gpus(node, request.occupies, count);
    if (std::popcount(free) < count || !usable_shape(node.links)) continue;
    if (chooser.choose(node.links, free, count, request.link_need)) return true;
  }
  return false;
}

namespace {

// The candidates as a list of records or of pointers to records held elsewhere (the capacity
// copy's shared nodes): place() reads them the same way either way.
const NodeCandidate& record(const NodeCandidate& c) {
  return c;
}
const NodeCandidate& record(const NodeCandidate* c) {
  return *c;
}

template <class List>
std::vector<Placement> place_among(const PlacementRequest& request, const List& list,
                                   const PlacementOptions& options) {
  auto candidates = [&list](std::size_t i) -> const NodeCandidate& { return record(list[i]); };
  std::vector<Placement> out;
  const int count = request.gpu_count;
  if (count < 1 || count > topology::kMaxGpus || options.max_choices < 1) return out;

  // Pass 1, over every candidate: the free GPUs, and how many would stay free ("spare"), the
  // first key of the order. Cheap: no link is read here.
  struct Fit {
    std::size_t node;
    Mask free;
    int spare;
  };
  std::vector<Fit> fits;
  fits.reserve(list.size());
  std::array<std::size_t, topology::kMaxGpus + 2> bucket_start{};
  // Whether the nodes that fit come in node-id order (a capacity copy's always do): then pass
  // 2 may stop early, below.
  bool in_id_order = true;
  const NodeCandidate* previous_fit = nullptr;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i + kListsAhead < list.size()) prefetch_gpu_list(candidates(i + kListsAhead));
    if (i + kBlocksAhead < list.size()) {
      prefetch_gpu_blocks(candidates(i + kBlocksAhead), ~Mask{0}, false);
    }
    const auto& node = candidates(i);
    if (node.gpu_model != request.gpu_model) continue;
    Mask free = free_gpus(node, request.occupies, count);
    int spare = std::popcount(free) - count;
    if (spare < 0) continue;
    fits.push_back({i, free, spare});
    ++bucket_start[spare + 1];
    if (previous_fit && in_id_order) in_id_order = previous_fit->node_id <= node.node_id;
    previous_fit = &node;
  }
  // Counting sort by spare GPUs, keeping candidate order within a bucket.
  for (std::size_t s = 1; s < bucket_start.size(); ++s) bucket_start[s] += bucket_start[s - 1];
  std::vector<const Fit*> by_spare(fits.size());
  {
    auto next = bucket_start;
    for (const auto& fit : fits) by_spare[next[fit.spare]++] = &fit;
  }

  // Pass 2, tightest first: choose each node's set and count its gaps. Every node of a
  // bucket ranks before every node of a looser one, so once the buckets seen hold
  // max_choices nodes that fit, the looser ones cannot enter the answer and are never read.
  struct Ranked {
    int spare;
    int gaps;
    int failures;
    std::size_t node;
    Mask set;
  };
  std::vector<Ranked> ranked;
  const auto wanted = static_cast<std::size_t>(options.max_choices);
  GpuSetChooser chooser;
  // How many nodes ranked so far no node still to come can rank before: those of tighter
  // buckets, and in node-id order those of this bucket with no gaps and no failures (the
  // least the keys can be; a later node of the bucket ties them at best, and loses on its
  // id). Once `wanted` are settled the answer is known: on an empty fleet of 10,000 nodes a
  // one-GPU request reads 16 nodes' links instead of every node's.
  std::size_t settled = 0;
  for (int spare = 0; spare <= topology::kMaxGpus && ranked.size() < wanted; ++spare) {
    const std::size_t last = bucket_start[spare + 1];
    settled = ranked.size();
    for (std::size_t k = bucket_start[spare]; k < last && settled < wanted; ++k) {
      if (k + kListsAhead < last) {
        const auto& ahead = candidates(by_spare[k + kListsAhead]->node);
        prefetch_gpu_list(ahead);
        prefetch_bytes(ahead.links.links.data(),
                       ahead.links.links.size() * sizeof(std::vector<std::string>));
      }
      if (k + kBlocksAhead < last) {
        const Fit& ahead = *by_spare[k + kBlocksAhead];
        prefetch_gpu_blocks(candidates(ahead.node), ahead.free, true);
      }
      const Fit& fit = *by_spare[k];
      const auto& node = candidates(fit.node);
      if (!usable_shape(node.links)) continue;
      auto set = chooser.choose(node.links, fit.free, count, request.link_need);
      if (!set) continue;
      int gaps = idle_gaps(node, *set, request.occupies);
      ranked.push_back({spare, gaps, node.recent_failures, fit.node, *set});
      if (in_id_order && gaps == 0 && node.recent_failures == 0) ++settled;
    }
  }

  // The candidate's position last: equal ids (which the loader never sends) still sort the
  // same way every time.
  auto key = [&](const Ranked& r) {
    return std::tie(r.spare, r.gaps, r.failures, candidates(r.node).node_id, r.node);
  };
  const std::size_t n = std::min(ranked.size(), wanted);
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end(),
                    [&](const Ranked& a, const Ranked& b) { return key(a) < key(b); });
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back({candidates(ranked[i].node).node_id, index_list(ranked[i].set)});
  }
  return out;
}

}  // namespace

std::vector<Placement> place(const PlacementRequest& request,
                             const std::vector<NodeCandidate>& candidates,
                             const PlacementOptions& options) {
  return place_among(request, candidates, options);
}

std::vector<Placement> place_held(const PlacementRequest& request,
                                  const std::vector<const NodeCandidate*>& candidates,
                                  const PlacementOptions& options) {
  return place_among(request, candidates, options);
}

}  // namespace gpurent::scheduler
