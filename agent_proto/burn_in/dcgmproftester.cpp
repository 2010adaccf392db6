// Parses dcgmproftester's output: every line ending in "(<N> gflops)" is one sample of one
// worker, named by the "Worker G:I[T]:" prefix when the layout has one; everything else (the
// "Skipping ..." lines, "Message:" lines, CU_DEVICE_ATTRIBUTE blocks) is skipped.
#include "agent_proto/burn_in/dcgmproftester.h"

#include "agent_proto/burn_in/text_lines.h"

#include <map>
#include <utility>

namespace gpurent::burn_in {
namespace {

namespace t = text;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_metric(std::string_view s) {
  if (s.empty() || s.size() > kMaxProftesterMetricBytes) return false;
  for (char c : s) {
    if (!is_digit(c) && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && c != '_') {
      return false;
    }
  }
  return true;
}

// The decimal number at the front of s, consumed; nullopt when there is none or it is above
// kMaxProftesterNumber.
std::optional<int> take_number(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_digit(s[n])) ++n;
  if (n == 0 || n > 5) return std::nullopt;
  auto v = t::to_int(s.substr(0, n));
  s.remove_prefix(n);
  if (!v || *v > kMaxProftesterNumber) return std::nullopt;
  return static_cast<int>(*v);
}

void skip_spaces(std::string_view& s) {
  while (!s.empty() && t::is_space(s.front())) s.remove_prefix(1);
}

std::string optional_text(const std::optional<int>& v) {
  return v ? std::to_string(*v) : std::string("none");
}

class Parser {
 public:
  ProftesterResult run(std::string_view text) {
    t::LineReader reader(text);
    for (std::string_view raw; reader.next(raw);) {
      index_ = reader.index();
      line(t::trim(raw));
    }
    if (result_.workers.empty()) {
      throw ParseError(
          "no sample with a gflops figure: not dcgmproftester output, or a test that reports "
          "none");
    }
    return std::move(result_);
  }

 private:
  struct Prefix {
    int gpu = 0;
    std::optional<int> instance;
    std::optional<int> test_id;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError(t::at_line(index_) + what);
  }

  void line(std::string_view s) {
    auto end = s.rfind("gflops)");
    if (end == std::string_view::npos) return;
    auto open = s.rfind('(', end);
    if (open == std::string_view::npos) fail("a gflops figure has no opening parenthesis");
    auto figure = t::to_double(t::trim(s.substr(open + 1, end - open - 1)));
    if (!figure) fail("a gflops figure is not a number");
    if (*figure < 0 || *figure >= kMaxProftesterGflops) {
      fail("a gflops figure is outside 0 to 1e8, not one a GPU measures");
    }

    auto rest = s.substr(0, open);
    Prefix prefix;
    bool prefixed = t::starts_with(rest, "Worker ");
    if (prefixed) rest = take_prefix(rest.substr(7), prefix);
    auto colon = rest.find(':');
    auto metric =
        colon == std::string_view::npos ? std::string_view() : t::trim(rest.substr(0, colon));
    if (!is_metric(metric)) fail("a gflops sample has no metric name before its figure");
    check_same_test(prefixed, prefix, metric);
    worker(prefix).gflops.push_back(*figure);
  }

  // "G:I[T]:" after "Worker " (instance and test optional, spaces before '[' allowed): what
  // follows the colon.
  std::string_view take_prefix(std::string_view s, Prefix& prefix) const {
    skip_spaces(s);
    auto gpu = take_number(s);
    if (!gpu) fail("a sample's worker prefix is not 'Worker GPU:INSTANCE[TEST]:'");
    prefix.gpu = *gpu;
    if (s.size() > 1 && s[0] == ':' && is_digit(s[1])) {
      s.remove_prefix(1);
      prefix.instance = take_number(s);
      if (!prefix.instance) fail("a sample's worker instance is not a number DCGM prints");
    }
    skip_spaces(s);
    if (!s.empty() && s[0] == '[') {
      s.remove_prefix(1);
      prefix.test_id = take_number(s);
      if (!prefix.test_id || s.empty() || s[0] != ']') {
        fail("a sample's test number is not '[N]'");
      }
      s.remove_prefix(1);
    }
    skip_spaces(s);
    if (s.empty() || s[0] != ':') {
      fail("a sample's worker prefix is not 'Worker GPU:INSTANCE[TEST]:'");
    }
    return s.substr(1);
  }

  // One output is one run of one test: the first sample fixes the layout, test and metric.
  void check_same_test(bool prefixed, const Prefix& prefix, std::string_view metric) {
    if (!seen_sample_) {
      seen_sample_ = true;
      prefixed_ = prefixed;
      result_.test_id = prefix.test_id;
      result_.metric = std::string(metric);
      return;
    }
    if (prefixed != prefixed_) {
      fail(prefixed ? "a sample with a worker prefix among samples without one"
                    : "a sample without a worker prefix among samples with one");
    }
    if (prefix.test_id != result_.test_id) {
      fail("a sample of test " + optional_text(prefix.test_id) + " after samples of test " +
           optional_text(result_.test_id) + "; one output is one test");
    }
    if (metric != result_.metric) {
      fail("a sample of " + std::string(metric) + " after samples of " + result_.metric +
           "; one output is one test");
    }
  }

  ProftesterWorker& worker(const Prefix& prefix) {
    auto key = std::make_pair(prefix.gpu, prefix.instance.value_or(-1));
    auto [it, added] = by_key_.try_emplace(key, result_.workers.size());
    if (added) {
      if (result_.workers.size() >= kMaxProftesterWorkers) {
        fail("more than " + std::to_string(kMaxProftesterWorkers) +
             " workers, more GPUs than any node has");
      }
      result_.workers.push_back({.gpu = prefix.gpu, .instance = prefix.instance, .gflops = {}});
    }
    auto& w = result_.workers[it->second];
    if (w.gflops.size() >= kMaxProftesterSamples) {
      fail("a worker has more than " + std::to_string(kMaxProftesterSamples) +
           " samples, longer than any burn-in runs");
    }
    return w;
  }

  ProftesterResult result_;
  std::map<std::pair<int, int>, std::size_t> by_key_;  // (gpu, instance or -1) -> workers index
  bool seen_sample_ = false;
  bool prefixed_ = false;
  std::size_t index_ = 0;
};

}  // namespace

ProftesterResult parse_dcgmproftester(std::string_view text) {
  t::check_size(text, "dcgmproftester");
  return Parser().run(text);
}

}  // namespace gpurent::burn_in
