// Parses gpu_burn's output. A progress line is
//   "35.0%  proc'd: 8420 (6951 Gflop/s) - 7992 (6853 Gflop/s)   errors: 0 - 0   temps: 59 C - 79 C"
// (one " - "-separated entry per GPU, errors annotated "(WARNING!)" or "(DIED!)"); the summary
// is "Tested N GPUs:" followed by "GPU i: OK" or "GPU i: FAULTY".
#include "agent_proto/burn_in/gpu_burn.h"

#include "agent_proto/burn_in/text_lines.h"

namespace gpurent::burn_in {
namespace {

namespace t = text;

class Parser {
 public:
  GpuBurnResult run(std::string_view text) {
    t::LineReader reader(text);
    for (std::string_view raw; reader.next(raw);) {
      index_ = reader.index();
      line(t::trim(raw));
    }
    if (!seen_progress_ && !result_.finished) {
      throw ParseError("no progress line and no verdict: not gpu_burn output, or it did not start");
    }
    return std::move(result_);
  }

 private:
  BurnGpu& gpu(std::size_t i) {
    if (i >= kMaxBurnGpus) throw ParseError(t::at_line(index_) + "more GPUs than any node has");
    while (result_.gpus.size() <= i) {
      BurnGpu g;
      g.index = static_cast<int>(result_.gpus.size());
      result_.gpus.push_back(std::move(g));
    }
    return result_.gpus[i];
  }

  void line(std::string_view s) {
    if (s.find("proc'd:") != std::string_view::npos) return progress(s);
    if (t::starts_with(s, "Tested ") && s.find("GPUs:") != std::string_view::npos) {
      result_.finished = true;
      return;
    }
    if (t::starts_with(s, "GPU ")) gpu_line(s);
  }

  // "GPU 0: OK", "GPU 1: FAULTY" (after the summary) or "GPU 0: NAME (UUID: ...)".
  void gpu_line(std::string_view s) {
    auto colon = s.find(':');
    if (colon == std::string_view::npos) return;
    auto index = t::to_int(s.substr(4, colon - 4));
    if (!index || *index < 0) return;
    auto rest = t::trim(s.substr(colon + 1));
    if (result_.finished && (rest == "OK" || rest == "FAULTY")) {
      gpu(static_cast<std::size_t>(*index)).verdict =
          rest == "OK" ? BurnVerdict::kOk : BurnVerdict::kFaulty;
      return;
    }
    auto uuid = rest.find(" (UUID:");
    if (uuid == std::string_view::npos || uuid == 0) return;
    gpu(static_cast<std::size_t>(*index)).name =
        t::printable(rest.substr(0, uuid), kMaxBurnNameBytes);
  }

  void progress(std::string_view s) {
    auto procd = s.find("proc'd:");
    auto errors_at = s.find("errors:", procd);
    auto temps_at = errors_at == std::string_view::npos ? errors_at : s.find("temps:", errors_at);
    if (auto pct = t::tokens(s.substr(0, procd)); pct.size() == 1 && pct[0].back() == '%') {
      auto v = t::to_double(pct[0].substr(0, pct[0].size() - 1));
      if (v && *v >= 0 && *v <= 100) result_.progress_percent = *v;
    }
    // proc'd: N (G Gflop/s) - N (G Gflop/s) ...
    auto procd_part =
        s.substr(procd + 7, errors_at == std::string_view::npos ? std::string_view::npos
                                                                : errors_at - procd - 7);
    std::size_t i = 0;
    for (std::size_t open = procd_part.find('('); open != std::string_view::npos;
         open = procd_part.find('(', open + 1), ++i) {
      auto close = procd_part.find("Gflop/s)", open);
      if (close == std::string_view::npos) {
        throw ParseError(t::at_line(index_) + "a progress entry has no Gflop/s");
      }
      auto v = t::to_double(t::trim(procd_part.substr(open + 1, close - open - 1)));
      if (!v || *v < 0) throw ParseError(t::at_line(index_) + "a Gflop/s value is not a number");
      gpu(i).gflops = *v;
    }
    seen_progress_ = seen_progress_ || i > 0;
    if (errors_at != std::string_view::npos) {
      auto part =
          s.substr(errors_at + 7, temps_at == std::string_view::npos ? std::string_view::npos
                                                                     : temps_at - errors_at - 7);
      std::size_t k = 0;
      for (auto tok : t::tokens(part)) {
        if (auto n = t::to_int(tok)) {
          gpu(k++).errors = *n;
        } else if (t::starts_with(tok, "(DIED!)") && k > 0) {
          gpu(k - 1).died = true;
        }
      }
    }
    if (temps_at != std::string_view::npos) {
      std::size_t k = 0;
      for (auto tok : t::tokens(s.substr(temps_at + 6))) {
        auto n = t::to_int(tok);
        if (n && *n > -300 && *n < 1000) gpu(k++).temperature_c = static_cast<int>(*n);
      }
    }
  }

  GpuBurnResult result_;
  bool seen_progress_ = false;
  std::size_t index_ = 0;
};

}  // namespace

std::string_view to_string(BurnVerdict verdict) {
  return verdict == BurnVerdict::kOk ? "OK" : "FAULTY";
}

GpuBurnResult parse_gpu_burn(std::string_view text) {
  t::check_size(text, "gpu_burn");
  return Parser().run(text);
}

}  // namespace gpurent::burn_in
