// CapacityIndex: copies per model, brought up to date node by node.
#include "scheduler/capacity_index.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace gpurent::scheduler {
namespace {

using std::chrono::hours;

// A calendar starts at the midnight of a date at its site, which can be a day and a half
// before now (a UTC date at a site fourteen hours ahead of UTC); the copy starts before it.
constexpr hours kLookBehind{48};

bool covers(const Period& outer, const Period& inner) {
  return outer.start <= inner.start && inner.end <= outer.end;
}

// The loaded candidates (sorted by id) as shared nodes, those of `model` only.
std::vector<CapacityIndex::Node> shared_nodes(std::vector<NodeCandidate> loaded,
                                              const std::string& model) {
  std::vector<CapacityIndex::Node> out;
  out.reserve(loaded.size());
  for (auto& c : loaded) {
    if (c.gpu_model == model) out.push_back(std::make_shared<const NodeCandidate>(std::move(c)));
  }
  return out;
}

}  // namespace

CapacityIndex::CapacityIndex(const Clock& clock, CandidateStore& store,
                             std::function<bool()> listening, Options options)
    : clock_(clock), store_(store), listening_(std::move(listening)), options_(options) {}

CapacityIndex::Candidates CapacityIndex::load_directly(Tx& tx, const std::string& model,
                                                       const Period& window) {
  store_.keep_statistics(tx);
  auto nodes =
      std::make_shared<const CandidateList>(shared_nodes(store_.load(tx, model, window), model));
  std::lock_guard lock(mutex_);
  ++stats_.direct_loads;
  return nodes;
}

const CapacityIndex::Copy* CapacityIndex::usable_copy(const std::string& model, Timestamp now,
                                                      const Period& window) const {
  auto it = models_.find(model);
  if (it == models_.end() || !it->second.copy) return nullptr;
  const Copy& copy = *it->second.copy;
  return now - copy.loaded_at < options_.max_age && covers(copy.window, window) ? &copy : nullptr;
}

CapacityIndex::Candidates CapacityIndex::candidates(Tx& tx, const std::string& model,
                                                    const Period& window) {
  // Without announcements a copy could miss any change: nothing is kept meanwhile.
  if (!listening_()) return load_directly(tx, model, window);

  const Timestamp now = clock_.now();
  std::unique_lock refresh(refresh_, std::try_to_lock);
  if (!refresh.owns_lock()) {
    // Another read is bringing the copies up to date: a usable copy is answered as it stands
    // rather than waited on (the changes announced since are another read's to load). Without
    // this every booking of a replica waited its turn for a database round trip.
    {
      std::lock_guard lock(mutex_);
      if (const Copy* copy = usable_copy(model, now, window)) {
        ++stats_.served_while_reloading;
        return copy->nodes;
      }
    }
    refresh.lock();
  }
  const Period fresh_window{now - kLookBehind, now + options_.reach};
  std::vector<std::string> announced;
  Candidates base;
  Period copy_window;
  std::uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    generation = generation_;
    auto it = models_.find(model);
    if (usable_copy(model, now, window)) {
      auto& m = it->second;
      // Taken before the reload's statement starts: whatever it announced committed before
      // that statement's snapshot, and what commits later is announced again.
      announced.assign(m.pending.begin(), m.pending.end());
      m.pending.clear();
      base = m.copy->nodes;
      copy_window = m.copy->window;
      if (announced.empty()) {
        ++stats_.served;
        return base;
      }
    } else if (!covers(fresh_window, window)) {
      base = nullptr;  // a window no copy would cover: read it, keep nothing
    } else {
      // A new copy: announcements from now on apply to it, earlier ones are in its load.
      auto& m = models_[model];
      m.copy.reset();
      m.pending.clear();
    }
  }
  if (!base && !covers(fresh_window, window)) return load_directly(tx, model, window);

  if (!base) {
    store_.keep_statistics(tx);
    auto nodes = std::make_shared<const CandidateList>(
        shared_nodes(store_.load(tx, model, fresh_window), model));
    std::lock_guard lock(mutex_);
    if (generation == generation_) {
      models_[model].copy = Copy{fresh_window, now, nodes};
      ++stats_.copies_loaded;
    } else {
      ++stats_.direct_loads;
    }
    return nodes;
  }

  std::vector<Node> reloaded;
  try {
    // A node that is no longer a candidate does not come back, and stays out.
    reloaded = shared_nodes(store_.load_nodes(tx, announced, copy_window), model);
  } catch (...) {
    // The announcements taken are gone with this read: the copy cannot be trusted any more.
    std::lock_guard lock(mutex_);
    if (auto it = models_.find(model); it != models_.end()) it->second.copy.reset();
    throw;
  }
  // `announced` came from a set: ascending, as replaced() wants; so is `reloaded`.
  std::size_t rebuilt = 0;
  Candidates result =
      std::make_shared<const CandidateList>(base->replaced(announced, reloaded, &rebuilt));
  std::lock_guard lock(mutex_);
  ++stats_.reloads;
  stats_.nodes_reloaded += announced.size();
  stats_.chunks_rebuilt += rebuilt;
  if (generation == generation_) {
    if (auto it = models_.find(model); it != models_.end() && it->second.copy) {
      it->second.copy->nodes = result;
    }
  }
  return result;
}

void CapacityIndex::node_changed(const std::string& node_id) {
  std::lock_guard lock(mutex_);
  for (auto& [model, m] : models_) m.pending.insert(node_id);
}

void CapacityIndex::everything_changed() {
  std::lock_guard lock(mutex_);
  ++generation_;
  models_.clear();
}

CapacityIndex::Stats CapacityIndex::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace gpurent::scheduler
