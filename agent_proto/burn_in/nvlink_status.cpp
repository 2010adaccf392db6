// Parses `nvidia-smi nvlink -s` and `-e` line by line: "GPU N: NAME (UUID: ...)" opens a GPU's
// block, "Link L: ..." lines fill it, and the driver's one-line answers ("... all links are
// inActive") stand in for its links; any other line is a paste's surroundings and is skipped.
#include "agent_proto/burn_in/nvlink_status.h"

#include "agent_proto/burn_in/text_lines.h"

#include <bitset>

namespace gpurent::burn_in {
namespace {

namespace t = text;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// "N:" at the front of s (the colon last or followed by a space), for "GPU N:" and "Link N:":
// the number, with s left after the colon. Nullopt when s does not start so. A number of more
// than 9 digits reads as -1, which every bound refuses.
std::optional<std::int64_t> take_label(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_digit(s[n])) ++n;
  if (n == 0 || n >= s.size() || s[n] != ':') return std::nullopt;
  if (n + 1 < s.size() && !t::is_space(s[n + 1])) return std::nullopt;  // "GPU 00000000:18:00.0"
  auto v = n > 9 ? std::optional<std::int64_t>(-1) : t::to_int(s.substr(0, n));
  s.remove_prefix(n + 1);
  return v;
}

struct Header {
  std::int64_t gpu = 0;
  std::string name;
};

// "GPU N: NAME (UUID: GPU-...)", the UUID optional.
std::optional<Header> header_of(std::string_view s) {
  if (!t::starts_with(s, "GPU ")) return std::nullopt;
  s.remove_prefix(4);
  auto gpu = take_label(s);
  if (!gpu) return std::nullopt;
  if (auto uuid = s.find("(UUID:"); uuid != std::string_view::npos) s = s.substr(0, uuid);
  return Header{.gpu = *gpu, .name = t::printable(t::trim(s), kMaxNvlinkNameBytes)};
}

struct LinkLine {
  std::int64_t link = 0;
  std::string_view rest;  // after "Link L:", trimmed
};

std::optional<LinkLine> link_line_of(std::string_view s) {
  if (!t::starts_with(s, "Link ")) return std::nullopt;
  s.remove_prefix(5);
  auto link = take_label(s);
  if (!link) return std::nullopt;
  return LinkLine{.link = *link, .rest = t::trim(s)};
}

enum class Answer { kNone, kAllInactive, kUnsupported };

// The driver's one-line answers in place of a GPU's links.
Answer answer_of(std::string_view s) {
  std::string lower;
  for (char c : s) lower += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  auto has = [&](std::string_view part) { return lower.find(part) != std::string::npos; };
  if (has("all links are inactive")) return Answer::kAllInactive;
  if (has("does not have or support nvlink") || (has("not supported") && has("mig mode"))) {
    return Answer::kUnsupported;
  }
  return Answer::kNone;
}

// The GPU blocks of either output: numbers in bounds, none printed twice.
template <typename Gpu>
class GpuBlocks {
 public:
  Gpu& open(const Header& h, std::size_t index) {
    if (h.gpu < 0 || h.gpu >= static_cast<std::int64_t>(kMaxNvlinkGpus)) {
      throw ParseError(t::at_line(index) + "a GPU number is above " +
                       std::to_string(kMaxNvlinkGpus - 1) + ", more GPUs than any node has");
    }
    if (seen_[static_cast<std::size_t>(h.gpu)]) {
      throw ParseError(t::at_line(index) + "GPU " + std::to_string(h.gpu) + " is printed twice");
    }
    seen_[static_cast<std::size_t>(h.gpu)] = true;
    Gpu g;
    g.gpu = static_cast<int>(h.gpu);
    g.name = h.name;
    gpus_.push_back(std::move(g));
    return gpus_.back();
  }

  Gpu* current() { return gpus_.empty() ? nullptr : &gpus_.back(); }

  // The link a link line names on the current GPU, in bounds and not seen before.
  Gpu& for_new_link(std::int64_t link, std::size_t index) {
    if (gpus_.empty())
      throw ParseError(t::at_line(index) + "a link line before any 'GPU N:' header");
    auto& g = gpus_.back();
    if (link < 0 || link >= static_cast<std::int64_t>(kMaxNvlinkLinksPerGpu)) {
      throw ParseError(t::at_line(index) + "a link number is above " +
                       std::to_string(kMaxNvlinkLinksPerGpu - 1) + ", more links than a GPU has");
    }
    for (const auto& l : g.links) {
      if (l.link == link) {
        throw ParseError(t::at_line(index) + "link " + std::to_string(link) + " of GPU " +
                         std::to_string(g.gpu) + " is printed twice");
      }
    }
    return g;
  }

  std::vector<Gpu> finish(const char* command) {
    if (gpus_.empty()) {
      throw ParseError(std::string("no 'GPU N:' header: not `") + command + "` output");
    }
    return std::move(gpus_);
  }

 private:
  std::vector<Gpu> gpus_;
  std::bitset<kMaxNvlinkGpus> seen_;
};

// What both parsers do line by line: each trimmed line to the derived parser's line(), the
// line's number kept for its errors, the GPU blocks finished at the end.
template <typename Derived, typename Gpu>
class BlockParser {
 public:
  std::vector<Gpu> run(std::string_view text, const char* command) {
    t::LineReader reader(text);
    for (std::string_view raw; reader.next(raw);) {
      index_ = reader.index();
      static_cast<Derived*>(this)->line(t::trim(raw));
    }
    return blocks_.finish(command);
  }

 protected:
  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError(t::at_line(index_) + what);
  }

  GpuBlocks<Gpu> blocks_;
  std::size_t index_ = 0;
};

class StatusParser : public BlockParser<StatusParser, NvlinkGpuStatus> {
 public:
  void line(std::string_view s) {
    if (auto h = header_of(s)) {
      blocks_.open(*h, index_);
    } else if (auto l = link_line_of(s)) {
      link(*l);
    } else if (auto a = answer_of(s); a != Answer::kNone) {
      one_line_answer(a);
    }
  }

 private:
  void link(const LinkLine& l) {
    auto& g = blocks_.for_new_link(l.link, index_);
    if (g.all_inactive || g.unsupported) {
      fail("GPU " + std::to_string(g.gpu) + " has link lines after a one-line answer instead");
    }
    NvlinkLinkState state{.link = static_cast<int>(l.link), .gbps = std::nullopt};
    if (l.rest != "<inactive>") {
      auto tok = t::tokens(l.rest);
      auto gbps = tok.size() == 2 && tok[1] == "GB/s" ? t::to_double(tok[0]) : std::nullopt;
      if (!gbps) fail("a link's speed is neither 'N GB/s' nor '<inactive>'");
      if (*gbps < 0 || *gbps >= kMaxNvlinkLinkGbps) {
        fail("a link's speed is outside 0 to 10000 GB/s, not one NVLink runs at");
      }
      state.gbps = *gbps;
    }
    g.links.push_back(state);
  }

  void one_line_answer(Answer a) {
    auto* g = blocks_.current();
    if (g == nullptr) return;  // an answer without a GPU to answer for says nothing
    if (!g->links.empty()) {
      fail("GPU " + std::to_string(g->gpu) + " has link lines and a one-line answer instead");
    }
    (a == Answer::kAllInactive ? g->all_inactive : g->unsupported) = true;
  }
};

// "Replay Errors" -> "replay", "Link recovery successful events" ->
// "link_recovery_successful_events", "FEC Errors - 3" -> "fec_errors_3".
std::string counter_key(std::string_view name) {
  std::string key;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || is_digit(c)) {
      key += c;
    } else if (!key.empty() && key.back() != '_') {
      key += '_';
    }
  }
  if (!key.empty() && key.back() == '_') key.pop_back();
  constexpr std::string_view kSuffix = "_errors";
  if (key.size() > kSuffix.size() && key.ends_with(kSuffix))
    key.resize(key.size() - kSuffix.size());
  return key;
}

class ErrorsParser : public BlockParser<ErrorsParser, NvlinkGpuErrors> {
 public:
  // The one-line answers leave a GPU without links and are skipped like other lines.
  void line(std::string_view s) {
    if (auto h = header_of(s)) {
      blocks_.open(*h, index_);
    } else if (auto l = link_line_of(s)) {
      link(*l);
    }
  }

 private:
  void link(const LinkLine& l) {
    auto colon = l.rest.rfind(':');
    if (colon == std::string_view::npos) fail("a link line is not 'Link N: COUNTER: COUNT'");
    auto key = counter_key(l.rest.substr(0, colon));
    if (key.empty() || key.size() > kMaxNvlinkCounterNameBytes) {
      fail("a link line's counter name is empty or longer than 64 bytes");
    }
    auto count = t::to_int(t::trim(l.rest.substr(colon + 1)));
    if (!count || *count < 0) fail("an error count is not a whole number >= 0");

    auto* g = blocks_.current();
    bool same_link = g != nullptr && !g->links.empty() && g->links.back().link == l.link;
    if (!same_link) {
      blocks_.for_new_link(l.link, index_)
          .links.push_back({.link = static_cast<int>(l.link), .counters = {}});
      g = blocks_.current();
    }
    auto& link = g->links.back();
    if (link.counters.size() >= kMaxNvlinkCountersPerLink) {
      fail("a link has more than " + std::to_string(kMaxNvlinkCountersPerLink) +
           " error counters, more than the driver prints");
    }
    if (!link.counters.emplace(key, *count).second) {
      fail("link " + std::to_string(link.link) + " of GPU " + std::to_string(g->gpu) + " has its " +
           key + " counter twice");
    }
  }
};

}  // namespace

std::vector<NvlinkGpuStatus> parse_nvlink_status(std::string_view text) {
  t::check_size(text, "nvidia-smi nvlink -s");
  return StatusParser().run(text, "nvidia-smi nvlink -s");
}

std::vector<NvlinkGpuErrors> parse_nvlink_errors(std::string_view text) {
  t::check_size(text, "nvidia-smi nvlink -e");
  return ErrorsParser().run(text, "nvidia-smi nvlink -e");
}

}  // namespace gpurent::burn_in
