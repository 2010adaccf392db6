// parse_fault_schedule: a small grammar read by hand, every part checked.
#include "agent/fault_schedule.h"

#include <charconv>

namespace gpurent::agent {
namespace {

[[noreturn]] void bad(std::string_view fault, const std::string& why) {
  throw std::invalid_argument("fault \"" + std::string(fault) + "\": " + why);
}

// A whole non-negative number filling `text`, or -1.
long long whole(std::string_view text) {
  long long v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() && v >= 0 ? v : -1;
}

std::chrono::milliseconds duration(std::string_view fault, std::string_view text) {
  struct Unit {
    std::string_view suffix;
    long long ms;
  };
  // "ms" before "s", so that 500ms is not read as 500m and a stray s.
  for (Unit u : {Unit{"ms", 1}, Unit{"s", 1000}, Unit{"m", 60'000}, Unit{"h", 3'600'000}}) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      long long n = whole(text.substr(0, text.size() - u.suffix.size()));
      if (n < 0 || n > 1'000'000'000 / u.ms) break;
      return std::chrono::milliseconds(n * u.ms);
    }
  }
  bad(fault, "the time must be like 500ms, 30s, 2m or 1h");
}

}  // namespace

std::vector<SimulatedFault> parse_fault_schedule(std::string_view text) {
  std::vector<SimulatedFault> out;
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view fault = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (fault.empty() || (comma != std::string_view::npos && text.empty())) {
      bad(fault, "an empty fault between commas");
    }

    auto at = fault.find('@');
    if (at == std::string_view::npos) bad(fault, "needs @ and a time");
    std::string_view kind = fault.substr(0, at);
    std::string_view rest = fault.substr(at + 1);
    auto colon = rest.find(':');
    SimulatedFault f;
    f.at = duration(fault, rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      std::string_view gpu = rest.substr(colon + 1);
      long long index = gpu.starts_with("gpu") ? whole(gpu.substr(3)) : -1;
      if (index < 0 || index > 63) bad(fault, "the GPU must be gpu0 to gpu63");
      f.gpu = static_cast<int>(index);
    }

    if (kind == "dbe") {
      f.kind = SimulatedFault::Kind::kDoubleBitEcc;
    } else if (kind == "thermal") {
      f.kind = SimulatedFault::Kind::kThermalSlowdown;
    } else if (kind == "slow-gpu") {
      f.kind = SimulatedFault::Kind::kSlowGpu;
    } else if (kind == "nvlink-down") {
      f.kind = SimulatedFault::Kind::kNvlinkDown;
    } else if (kind == "hang") {
      f.kind = SimulatedFault::Kind::kHang;
      if (colon != std::string_view::npos) bad(fault, "a hang is the whole node's");
    } else if (kind.starts_with("xid")) {
      long long code = whole(kind.substr(3));
      if (code < 1 || code > 999) bad(fault, "the XID must be 1 to 999");
      f.kind = SimulatedFault::Kind::kXid;
      f.xid = static_cast<int>(code);
    } else {
      bad(fault, "the kind must be xid<N>, dbe, thermal, hang, slow-gpu or nvlink-down");
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace gpurent::agent
