// Parses nccl-tests' perf table. The table's columns have changed over the years: redop was
// added, then root, and the error column went from a fraction to a count; rows are read by
// their number of columns.
#include "agent_proto/burn_in/nccl_tests.h"

#include "agent_proto/burn_in/text_lines.h"

namespace gpurent::burn_in {
namespace {

namespace t = text;

// mpirun --tag-output: "[1,0]<stdout>:" or "[1,0]<stderr>:". Returns the rest and whether the
// line came from stderr.
std::string_view strip_mpi_tag(std::string_view line, bool& is_stderr) {
  is_stderr = false;
  if (line.empty() || line[0] != '[') return line;
  auto close = line.find("]<");
  if (close == std::string_view::npos || close > 24) return line;
  auto rest = line.substr(close + 1);
  for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
    if (t::starts_with(rest, tag)) {
      is_stderr = tag == "<stderr>:";
      return rest.substr(tag.size());
    }
  }
  return line;
}

std::string bounded(std::string_view s) {
  return t::printable(s, kMaxNcclNameBytes);
}

std::optional<int> small_int(std::string_view s) {
  auto v = t::to_int(s);
  if (!v || *v < -1 || *v > 1'000'000) return std::nullopt;
  return static_cast<int>(*v);
}

// The tokens after '#': Rank N [Group N] Pid N on HOST device N [BUS] MODEL...
std::optional<NcclDevice> device_line(std::string_view line) {
  auto tok = t::tokens(line.substr(1));
  std::size_t i = 0;
  auto word = [&](std::string_view w) {
    return i < tok.size() && tok[i] == w ? (++i, true) : false;
  };
  auto value = [&]() -> std::optional<std::string_view> {
    if (i >= tok.size()) return std::nullopt;
    return tok[i++];
  };
  NcclDevice d;
  if (!word("Rank")) return std::nullopt;
  auto number = [&]() -> std::optional<int> {
    auto v = value();
    auto n = v ? small_int(*v) : std::nullopt;
    if (!n || *n < 0) return std::nullopt;
    return n;
  };
  auto rank = number();
  if (!rank) return std::nullopt;
  d.rank = *rank;
  if (word("Group")) {
    d.group = number();
    if (!d.group) return std::nullopt;
  }
  if (!word("Pid")) return std::nullopt;
  auto pid = value();
  if (!pid || !t::to_int(*pid) || *t::to_int(*pid) < 0) return std::nullopt;
  d.pid = *t::to_int(*pid);
  if (!word("on")) return std::nullopt;
  auto host = value();
  if (!host) return std::nullopt;
  d.host = bounded(*host);
  if (!word("device")) return std::nullopt;
  auto device = number();
  if (!device) return std::nullopt;
  d.device = *device;
  auto bus = value();
  if (!bus || bus->size() < 2 || bus->front() != '[' || bus->back() != ']') return std::nullopt;
  d.bus_id = bounded(bus->substr(1, bus->size() - 2));
  // The model is the rest of the line as printed, spaces included.
  if (i < tok.size()) {
    auto at = static_cast<std::size_t>(tok[i].data() - line.data());
    d.model = bounded(t::trim(line.substr(at)));
  }
  return d;
}

bool is_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// time algbw busbw wrong, from tok[at..at+3].
NcclMeasurement measurement(const std::vector<std::string_view>& tok, std::size_t at,
                            std::size_t index) {
  NcclMeasurement m;
  auto time = t::to_double(tok[at]);
  auto alg = t::to_double(tok[at + 1]);
  auto bus = t::to_double(tok[at + 2]);
  if (!time || !alg || !bus || *time < 0 || *alg < 0 || *bus < 0) {
    throw ParseError(t::at_line(index) + "a row's time or bandwidth is not a number");
  }
  m.time_us = *time;
  m.algbw_gbps = *alg;
  m.busbw_gbps = *bus;
  auto wrong = tok[at + 3];
  if (auto count = t::to_int(wrong)) {
    if (*count < 0) throw ParseError(t::at_line(index) + "a row's #wrong count is negative");
    m.wrong = *count;
  } else if (wrong != "N/A" && !t::to_double(wrong)) {
    throw ParseError(t::at_line(index) + "a row's #wrong column is not a count");
  }
  return m;
}

// A table row: SIZE COUNT TYPE [REDOP [ROOT]] then time algbw busbw wrong twice (11, 12 or 13
// columns). nullopt for lines that are not rows at all.
std::optional<NcclRow> row_line(std::string_view line, std::size_t index) {
  auto tok = t::tokens(line);
  if (tok.size() < 11 || tok.size() > 13) return std::nullopt;
  auto size = t::to_int(tok[0]);
  auto count = t::to_int(tok[1]);
  if (!size || !count || !is_word(tok[2])) return std::nullopt;
  if (*size < 0 || *count < 0) throw ParseError(t::at_line(index) + "a row's size is negative");
  NcclRow row;
  row.size_bytes = *size;
  row.count = *count;
  row.type = bounded(tok[2]);
  std::size_t at = 3;
  if (tok.size() >= 12) {
    if (!is_word(tok[3])) return std::nullopt;
    row.redop = bounded(tok[3]);
    at = 4;
  }
  if (tok.size() == 13) {
    row.root = small_int(tok[4]);
    if (!row.root) throw ParseError(t::at_line(index) + "a row's root is not a rank");
    at = 5;
  }
  row.out_of_place = measurement(tok, at, index);
  row.in_place = measurement(tok, at + 4, index);
  return row;
}

// "# Avg bus bandwidth    : 448.212" with an optional OK/FAILED after the number.
std::optional<double> avg_line(std::string_view body, std::size_t index) {
  auto colon = body.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto tok = t::tokens(body.substr(colon + 1));
  if (tok.empty()) throw ParseError(t::at_line(index) + "the average bus bandwidth is missing");
  auto v = t::to_double(tok[0]);
  if (!v || *v < 0) {
    throw ParseError(t::at_line(index) + "the average bus bandwidth is not a number");
  }
  return v;
}

}  // namespace

std::int64_t NcclPerfResult::wrong_total() const {
  std::int64_t total = 0;
  for (const auto& row : rows) {
    total += row.out_of_place.wrong.value_or(0) + row.in_place.wrong.value_or(0);
  }
  return total;
}

NcclPerfResult parse_nccl_perf(std::string_view text) {
  t::check_size(text, "all_reduce_perf");
  NcclPerfResult result;
  std::optional<double> avg;
  t::LineReader reader(text);
  for (std::string_view raw; reader.next(raw);) {
    auto index = reader.index();
    bool is_stderr = false;
    auto line = t::trim(strip_mpi_tag(raw, is_stderr));
    if (is_stderr || line.empty()) continue;
    if (line[0] == '#') {
      auto body = t::trim(line.substr(1));
      if (t::starts_with(body, "Rank ")) {
        if (auto device = device_line(line)) {
          if (result.devices.size() >= kMaxNcclRanks) {
            throw ParseError(t::at_line(index) + "more ranks than any real run");
          }
          result.devices.push_back(std::move(*device));
        }
      } else if (t::starts_with(body, "Avg bus bandwidth")) {
        avg = avg_line(body, index);
      } else if (t::starts_with(body, "Out of bounds values")) {
        auto colon = body.find(':');
        auto tok = t::tokens(colon == std::string_view::npos ? "" : body.substr(colon + 1));
        auto n = tok.empty() ? std::nullopt : t::to_int(tok[0]);
        if (!n || *n < 0) {
          throw ParseError(t::at_line(index) + "the out-of-bounds count is not a count");
        }
        result.out_of_bounds_values = *n;
      }
      continue;
    }
    if (auto row = row_line(line, index)) {
      if (result.rows.size() >= kMaxNcclRows) {
        throw ParseError(t::at_line(index) + "more rows than any real run");
      }
      result.rows.push_back(std::move(*row));
    }
  }
  if (result.rows.empty()) {
    throw ParseError("no result rows: not an nccl-tests run, or it failed before measuring");
  }
  if (!avg) throw ParseError("no '# Avg bus bandwidth' line: the run did not finish");
  result.avg_bus_bandwidth_gbps = *avg;
  return result;
}

}  // namespace gpurent::burn_in
