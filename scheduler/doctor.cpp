// The doctor's checks and the request that waits for the agent's figures.
#include "scheduler/doctor.h"

#include "core/error.h"
#include "core/log.h"

#include <algorithm>
#include <thread>

namespace gpurent::scheduler {
namespace {

using nlohmann::json;

constexpr Statement kNodeFacts = {
    "doctor_node_facts",
    "SELECT coalesce(n.driver_version, ''), coalesce(n.telemetry, 'null')::text,"
    " coalesce(i.driver_version, '') FROM nodes n LEFT JOIN images i ON i.id = $2"
    " WHERE n.id = $1"};

bool rental_has(const std::vector<int>& gpus, int index) {
  return std::find(gpus.begin(), gpus.end(), index) != gpus.end();
}

int major_of(const std::string& version) {
  try {
    return std::stoi(version.substr(0, version.find('.')));
  } catch (const std::exception&) {
    return -1;
  }
}

DoctorCheck driver_check(const DoctorFacts& f) {
  if (f.node_driver.empty() || f.image_driver.empty()) {
    return {"driver", "skipped", "the node has not reported its driver yet", ""};
  }
  if (f.node_driver == f.image_driver) {
    return {"driver", "ok", "driver " + f.node_driver + ", as the image expects", ""};
  }
  if (major_of(f.node_driver) != major_of(f.image_driver)) {
    return {"driver", "failed",
            "driver " + f.node_driver + " runs, but the image is built for " + f.image_driver,
            "CUDA programs may refuse to start: terminate and book again with an image made for "
            "this node's driver, or ask support to reimage the node"};
  }
  return {"driver", "warning",
          "driver " + f.node_driver + " runs; the image names " + f.image_driver,
          "the same branch: CUDA works; report it if a library insists on the exact version"};
}

DoctorCheck ecc_check(const DoctorFacts& f) {
  if (!f.telemetry.is_array()) return {"ecc", "skipped", "the node has reported no telemetry", ""};
  std::vector<std::string> failed, warned;
  for (const auto& gpu : f.telemetry) {
    if (!gpu.is_object() || !gpu.contains("index") || !gpu["index"].is_number_integer()) continue;
    int index = gpu["index"].get<int>();
    if (!rental_has(f.gpu_indices, index)) continue;
    auto count = [&](const char* key) {
      return gpu.contains(key) && gpu[key].is_number() ? gpu[key].get<double>() : 0.0;
    };
    auto flag = [&](const char* key) {
      return gpu.contains(key) && gpu[key].is_boolean() && gpu[key].get<bool>();
    };
    std::string name = "gpu" + std::to_string(index);
    if (count("ecc_volatile_dbe") > 0 || flag("remapped_rows_failure")) {
      failed.push_back(name);
    } else if (count("ecc_volatile_sbe") > 0 || flag("remapped_rows_pending") ||
               flag("retired_pages_pending")) {
      warned.push_back(name);
    }
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  if (!failed.empty()) {
    return {"ecc", "failed", "uncorrectable memory errors on " + joined(failed),
            "results computed on these GPUs may be wrong: save your work and terminate; the "
            "platform takes the node out of service and the interruption is credited"};
  }
  if (!warned.empty()) {
    return {"ecc", "warning", "corrected memory errors or a pending row remap on " + joined(warned),
            "the GPU repairs this at its next reset; nothing to do unless it grows"};
  }
  return {"ecc", "ok", "no memory errors on the rental's GPUs", ""};
}

// The rental's GPUs' NVLinks as the driver reports them (nvidia-smi nvlink -s and -e): links
// down against the most any GPU of the node has up, and error counters.
DoctorCheck nvlink_state_check(const DoctorFacts& f) {
  std::vector<burn_in::NvlinkFigure> all = f.figures.nvlink;
  if (all.empty()) return {"nvlink_state", "skipped", "the node reported no NVLink state", ""};
  burn_in::BurnInFigures whole{.tools = {"nvlink"}, .nvlink = all};
  std::string down, errors;
  int mine = 0;
  for (const auto& x : inventory::judge_burn_in(whole, {}, {}).findings) {
    int gpu = std::stoi(x.subject.substr(3));
    if (!rental_has(f.gpu_indices, gpu)) continue;  // another tenant's GPU
    if (x.check == "nvlink") ++mine;
    if (x.check == "nvlink" && x.failed) down += (down.empty() ? "" : "; ") + x.detail;
    if (x.check == "nvlink_errors") errors += (errors.empty() ? "" : "; ") + x.detail;
  }
  if (mine == 0) return {"nvlink_state", "skipped", "your GPUs have no NVLinks", ""};
  if (!down.empty()) {
    return {"nvlink_state", "failed", down,
            "a GPU lost NVLinks: its traffic to the others is slower or goes over PCIe. "
            "Terminate and book again (the node is checked before anyone else gets it)"};
  }
  if (!errors.empty()) {
    return {"nvlink_state", "warning", errors,
            "errors were counted on the links since the driver loaded; if they keep rising "
            "while your job runs, terminate and book again"};
  }
  return {"nvlink_state", "ok", std::to_string(mine) + " GPUs with every NVLink up and no errors",
          ""};
}

}  // namespace

DoctorReport doctor_checks(const DoctorFacts& f) {
  DoctorReport out;
  out.checks.push_back(driver_check(f));
  out.checks.push_back(ecc_check(f));

  // The figures of the rental's GPUs only; the load tests' only when allowed.
  burn_in::BurnInFigures mine{.tools = f.figures.tools, .problems = f.figures.problems};
  for (const auto& l : f.figures.links) {
    if (rental_has(f.gpu_indices, l.a) && rental_has(f.gpu_indices, l.b)) mine.links.push_back(l);
  }
  if (f.allow_busy_gpus) {
    mine.nccl_bus_gbps = f.figures.nccl_bus_gbps;
    mine.nccl_wrong = f.figures.nccl_wrong;
  }
  auto verdict = inventory::judge_burn_in(mine, f.nominal, f.medians);
  std::string slow, fine;
  int links = 0;
  for (const auto& finding : verdict.findings) {
    if (finding.check != "peer_bandwidth") continue;
    ++links;
    if (finding.failed) slow += (slow.empty() ? "" : "; ") + finding.detail;
  }
  if (f.gpu_indices.size() < 2) {
    out.checks.push_back({"nvlink_p2p", "skipped", "one GPU: no links to check", ""});
  } else if (links == 0) {
    out.checks.push_back({"nvlink_p2p", "skipped", "the node measured no peer links", ""});
  } else if (!slow.empty()) {
    out.checks.push_back(
        {"nvlink_p2p", "failed", slow,
         "traffic between these GPUs falls back to PCIe: collectives and tensor parallelism "
         "across them run several times slower. Terminate and book again (the node is checked "
         "before anyone else gets it), or keep the job on GPUs whose links are fine"});
  } else {
    out.checks.push_back({"nvlink_p2p", "ok",
                          std::to_string(links) + " peer links at their expected bandwidth", ""});
  }
  out.checks.push_back(nvlink_state_check(f));
  if (!f.allow_busy_gpus) {
    out.checks.push_back({"nccl", "skipped", "a short NCCL run needs the GPUs for a few seconds",
                          "ask again with allow_busy_gpus when your job can spare them"});
  } else if (!f.figures.nccl_bus_gbps) {
    out.checks.push_back({"nccl", "skipped", "the node ran no NCCL test", ""});
  } else {
    auto it = std::find_if(verdict.findings.begin(), verdict.findings.end(), [](const auto& x) {
      return x.check == "nccl_bus_bandwidth" || x.check == "nccl_correctness";
    });
    bool bad = std::any_of(verdict.findings.begin(), verdict.findings.end(), [](const auto& x) {
      return (x.check == "nccl_bus_bandwidth" || x.check == "nccl_correctness") && x.failed;
    });
    out.checks.push_back({"nccl", bad ? "failed" : "ok",
                          it != verdict.findings.end() ? it->detail : "NCCL ran",
                          bad ? "all-reduce is slow or wrong on this node: terminate and book "
                                "again, the node is checked before its next tenant"
                              : ""});
  }
  if (!f.figures.problems.empty()) {
    out.checks.push_back({"tools", "warning", f.figures.problems.front(),
                          "some of the node's checks could not be read; support has the details"});
  }

  auto rank = [](const std::string& v) {
    return v == "failed" ? 3 : v == "warning" ? 2 : v == "ok" ? 1 : 0;
  };
  out.verdict = "skipped";
  for (const auto& c : out.checks) {
    if (rank(c.verdict) > rank(out.verdict)) out.verdict = c.verdict;
  }
  return out;
}

DoctorReport Doctor::examine(const Caller& caller, const std::string& id, bool allow_busy_gpus) {
  struct Waiting {
    std::atomic<int>& n;
    ~Waiting() { --n; }
  } waiting{waiting_};
  if (++waiting_ > options_.max_waiting) {
    throw Error(ErrorCode::kRateLimited,
                "Other doctors are waiting for their nodes on this server; try again shortly.");
  }
  // Made and committed first: the agent gets it when the commit is announced.
  auto task = pool_.transact("doctor_start", [&](Tx& tx) -> std::optional<AgentTask> {
    auto r = rentals_.get(tx, caller.org_id, id);
    if (!r) throw Error(ErrorCode::kNotFound, "No such rental.");
    if (r->state != RentalState::kActive || !r->node_id) return std::nullopt;
    return tasks_.create(tx, *r->node_id, r->id, TaskKind::kDoctor,
                         {{"gpu_indices", r->gpu_indices}, {"allow_busy_gpus", allow_busy_gpus}});
  });
  if (!task) {
    auto r =
        pool_.read("doctor_state", [&](Tx& tx) { return rentals_.get(tx, caller.org_id, id); });
    std::string state = r ? std::string(to_string(r->state)) : "gone";
    DoctorReport out;
    out.checks.push_back({"state", "skipped",
                          "the rental is " + state + ": nothing runs to examine",
                          "run the doctor while the rental is active"});
    out.verdict = "skipped";
    return out;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.wait;
  for (;;) {
    auto now_task = pool_.read("doctor_wait", [&](Tx& tx) { return tasks_.get(tx, task->id); });
    if (now_task &&
        (now_task->state == TaskState::kSucceeded || now_task->state == TaskState::kFailed)) {
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      pool_.transact("doctor_give_up", [&](Tx& tx) {
        return tasks_.complete(tx, task->id, false, "no answer within the doctor's wait");
      });
      throw Error(ErrorCode::kUnavailable,
                  "The node's agent did not answer the doctor in time; try again shortly.");
    }
    std::this_thread::sleep_for(options_.poll);
  }
  return pool_.read("doctor_judge", [&](Tx& tx) {
    auto r = rentals_.get(tx, caller.org_id, id);
    if (!r || !r->node_id) throw Error(ErrorCode::kNotFound, "No such rental.");
    DoctorFacts facts{.gpu_indices = r->gpu_indices, .allow_busy_gpus = allow_busy_gpus};
    auto node = tx.exec(kNodeFacts, *r->node_id, r->image_id);
    if (!node.empty()) {
      facts.node_driver = node[0][0].as<std::string>();
      facts.telemetry = json::parse(node[0][1].c_str());
      facts.image_driver = node[0][2].as<std::string>();
    }
    auto result = tasks_.result(tx, task->id);
    try {
      if (result) facts.figures = burn_in::figures_from_json(*result);
    } catch (const burn_in::ParseError& e) {
      facts.figures.problems.push_back(e.what());
    }
    auto t = tasks_.get(tx, task->id);
    if (t && t->state == TaskState::kFailed && !result) {
      facts.figures.problems.push_back("the node's checks did not run: " +
                                       t->result_message.value_or(""));
    }
    if (auto basis = burn_ins_.basis(tx, *r->node_id)) {
      facts.nominal = basis->nominal;
      facts.medians = basis->medians;
    }
    return doctor_checks(facts);
  });
}

}  // namespace gpurent::scheduler
