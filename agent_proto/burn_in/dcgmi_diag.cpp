// Parses dcgmi diag's table. Each row is "| NAME | RESULT |" with the name column 27 wide;
// section rows ("|-----  Hardware  ----|") name the category of the rows after them. A row
// with an empty name continues the row above: a per-GPU verdict, or the next 45 characters of
// a wrapped message.
#include "agent_proto/burn_in/dcgmi_diag.h"

#include "agent_proto/burn_in/text_lines.h"

#include <algorithm>

namespace gpurent::burn_in {
namespace {

namespace t = text;

constexpr std::size_t kMaxDiagNameBytes = 64;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

std::optional<DiagVerdict> verdict_word(std::string_view w) {
  auto l = lower(w);
  if (l == "pass" || l == "passed") return DiagVerdict::kPass;
  if (l == "fail" || l == "failed") return DiagVerdict::kFail;
  if (l == "warn" || l == "warning") return DiagVerdict::kWarn;
  if (l == "skip" || l == "skipped") return DiagVerdict::kSkip;
  return std::nullopt;
}

// A GPU id list: "0", "0, 2, 3", "1,2".
std::optional<std::vector<int>> gpu_list(std::string_view s) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    auto item = t::trim(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start));
    auto v = t::to_int(item);
    if (!v || *v < 0 || *v > kMaxDiagGpuIndex || out.size() >= kMaxDiagGpus) return std::nullopt;
    out.push_back(static_cast<int>(*v));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Verdicts {
  DiagVerdict verdict;
  bool all = false;
  std::vector<int> gpus;  // the GPUs the verdict names, if it names any
};

// "Pass", "Fail - All", "Pass - GPUs: 0, 2, 3", "Fail - GPU: 1", "Pass (text)".
std::optional<Verdicts> verdict_cell(std::string_view cell) {
  auto end = cell.find_first_of(" -(");
  auto v = verdict_word(cell.substr(0, end));
  if (!v) return std::nullopt;
  Verdicts out{.verdict = *v, .all = false, .gpus = {}};
  auto rest = t::trim(end == std::string_view::npos ? std::string_view() : cell.substr(end));
  if (!t::starts_with(rest, "-")) return out;
  rest = t::trim(rest.substr(1));
  if (rest == "All") {
    out.all = true;
  } else if (t::starts_with(rest, "GPUs:") || t::starts_with(rest, "GPU:")) {
    auto list = gpu_list(rest.substr(rest.find(':') + 1));
    if (list) out.gpus = std::move(*list);
  }
  return out;
}

// "GPU3: Fail" (DCGM 4.x).
std::optional<DiagGpuVerdict> gpu_verdict_cell(std::string_view cell) {
  if (!t::starts_with(cell, "GPU")) return std::nullopt;
  auto colon = cell.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto id = t::to_int(cell.substr(3, colon - 3));
  auto v = verdict_word(t::trim(cell.substr(colon + 1)));
  if (!id || *id < 0 || *id > kMaxDiagGpuIndex || !v) return std::nullopt;
  return DiagGpuVerdict{static_cast<int>(*id), *v};
}

bool is_rule(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c == '-' || c == '=' || c == '+' || c == '|';
  });
}

// "|-----  Hardware  ----------+-----...|" → "Hardware".
std::optional<std::string> section(std::string_view s) {
  auto inner = s.substr(1);
  auto start = inner.find_first_not_of('-');
  if (start == std::string_view::npos || start < 3) return std::nullopt;
  auto stop = inner.find("--", start);
  if (stop == std::string_view::npos) return std::nullopt;
  auto name = t::trim(inner.substr(start, stop - start));
  bool letter =
      !name.empty() && ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z'));
  if (!letter || name.find('|') != std::string_view::npos) return std::nullopt;
  return t::printable(name, kMaxDiagNameBytes);
}

class Parser {
 public:
  DcgmDiagResult run(std::string_view text) {
    t::LineReader reader(text);
    std::string_view first;
    for (std::string_view raw; reader.next(raw);) {
      index_ = reader.index();
      auto s = t::trim(raw);
      if (first.empty() && !s.empty()) first = s;
      line(s);
    }
    if (result_.tests.empty()) {
      throw ParseError(first.empty()
                           ? "empty output: no diagnostic table"
                           : "no diagnostic table; dcgmi printed: " + t::printable(first, 200));
    }
    return std::move(result_);
  }

 private:
  void line(std::string_view s) {
    if (s.size() < 2 || (s[0] != '|' && s[0] != '+')) return;
    if (s[1] == '-' || s[1] == '=') {
      if (auto name = section(s)) category_ = *name;
      return;
    }
    if (s[0] != '|' || is_rule(s)) return;
    // The name cell runs to the next '|'; the result cell to the last one (the final '|' is
    // missing when a paste was cut).
    auto bar = s.find('|', 1);
    if (bar == std::string_view::npos) return;
    auto name = t::trim(s.substr(1, bar - 1));
    auto cell_raw = s.substr(bar + 1);
    if (!cell_raw.empty() && cell_raw.back() == '|') cell_raw.remove_suffix(1);
    auto cell = t::trim(cell_raw);
    if (name == "Diagnostic" && cell == "Result") return;
    if (name.empty()) return continuation(cell_raw, cell);
    message_ = nullptr;
    if (name == "DCGM Version") {
      result_.dcgm_version = t::printable(cell, kMaxDiagNameBytes);
    } else if (name == "Driver Version Detected") {
      result_.driver_version = t::printable(cell, kMaxDiagNameBytes);
    } else if (name == "GPU Device IDs Detected") {
      for (auto id : t::tokens(cell)) {
        if (!id.empty() && id.back() == ',') id.remove_suffix(1);
        std::size_t start = 0;
        while (start <= id.size() && result_.gpu_device_ids.size() < kMaxDiagGpus) {
          auto comma = id.find(',', start);
          auto one = id.substr(start, comma == std::string_view::npos ? id.npos : comma - start);
          if (!one.empty()) result_.gpu_device_ids.push_back(t::printable(one, 16));
          if (comma == std::string_view::npos) break;
          start = comma + 1;
        }
      }
    } else if (name == "Warning" || name == "Error" || name == "Info") {
      add_message(lower(name == "Warning" ? "warning" : name), cell);
    } else if (auto v = verdict_cell(cell)) {
      add_test(name, *v);
    }
  }

  void add_test(std::string_view name, const Verdicts& v) {
    if (result_.tests.size() >= kMaxDiagTests) {
      throw ParseError(t::at_line(index_) + "more tests than dcgmi diag runs");
    }
    DiagTest test;
    test.name = t::printable(name, kMaxDiagNameBytes);
    test.category = category_;
    test.verdict = v.verdict;
    test.all_gpus = v.all;
    result_.tests.push_back(std::move(test));
    add_gpus(v);
  }

  void add_gpus(const Verdicts& v) {
    auto& test = result_.tests.back();
    for (int gpu : v.gpus) add_gpu({gpu, v.verdict});
    test.verdict = std::max(test.verdict, v.verdict);
  }

  void add_gpu(DiagGpuVerdict g) {
    auto& test = result_.tests.back();
    if (test.gpus.size() >= kMaxDiagGpus) {
      throw ParseError(t::at_line(index_) + "more GPUs in a test than any node has");
    }
    test.gpus.push_back(g);
    test.verdict = std::max(test.verdict, g.verdict);
  }

  void add_message(const std::string& kind, std::string_view text) {
    if (result_.tests.empty()) return;
    auto& messages = result_.tests.back().messages;
    if (messages.size() >= kMaxDiagMessages) {
      message_ = nullptr;
      return;
    }
    messages.push_back({kind, t::printable(text, kMaxDiagMessageBytes)});
    message_ = &messages.back();
  }

  void continuation(std::string_view raw, std::string_view cell) {
    if (result_.tests.empty()) return;
    if (auto g = gpu_verdict_cell(cell)) {
      message_ = nullptr;
      return add_gpu(*g);
    }
    if (!message_) {
      if (auto v = verdict_cell(cell)) add_gpus(*v);
      return;
    }
    // A wrapped message: the cell is one space, then the next piece; a second space is the
    // message's own.
    if (!raw.empty() && raw[0] == ' ') raw.remove_prefix(1);
    while (!raw.empty() && t::is_space(raw.back())) raw.remove_suffix(1);
    auto room = kMaxDiagMessageBytes - std::min(kMaxDiagMessageBytes, message_->text.size());
    message_->text += t::printable(raw, room);
  }

  DcgmDiagResult result_;
  std::string category_;
  DiagMessage* message_ = nullptr;  // the message a continuation row extends
  std::size_t index_ = 0;
};

}  // namespace

std::string_view to_string(DiagVerdict verdict) {
  switch (verdict) {
    case DiagVerdict::kSkip:
      return "skip";
    case DiagVerdict::kPass:
      return "pass";
    case DiagVerdict::kWarn:
      return "warn";
    case DiagVerdict::kFail:
      return "fail";
  }
  return "fail";
}

std::vector<int> DiagTest::failing_gpus() const {
  std::vector<int> out;
  for (const auto& g : gpus) {
    if (g.verdict == DiagVerdict::kFail) out.push_back(g.gpu);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool DcgmDiagResult::passed() const {
  return std::none_of(tests.begin(), tests.end(), [](const DiagTest& t) {
    return t.verdict == DiagVerdict::kFail || t.verdict == DiagVerdict::kWarn;
  });
}

DcgmDiagResult parse_dcgmi_diag(std::string_view text) {
  t::check_size(text, "dcgmi diag");
  return Parser().run(text);
}

}  // namespace gpurent::burn_in
