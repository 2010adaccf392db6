// Parses `nvidia-smi topo -m` text (as agents report it) and builds declared-shape matrices.
#include "agent_proto/topology.h"

#include <array>
#include <charconv>
#include <string>
#include <unordered_set>

namespace gpurent::topology {
namespace {

constexpr std::string_view kSeparators = " \t\r\v\f";
constexpr std::array<std::string_view, 6> kPcieKinds{"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"};
// Quotes of the input in error messages are cut to this; they end up in a 400 and in logs.
constexpr std::size_t kMaxLineQuote = 120;
constexpr std::size_t kMaxCellQuote = 40;

[[noreturn]] void fail(std::string message) {
  throw ParseError(std::move(message));
}

// ---- Text helpers ----

// The input as printable ASCII for an error message: control characters dropped, other bytes
// (UTF-8 or not) shown as '?' so the message is always valid UTF-8 for the JSON body.
std::string quote(std::string_view s, std::size_t max_chars) {
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) continue;
    out += c < 0x80 ? ch : '?';
  }
  auto first = out.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  out.erase(0, first);
  out.erase(out.find_last_not_of(' ') + 1);
  if (out.size() > max_chars) out = out.substr(0, max_chars) + "...";
  return out;
}

// Removes ANSI escape sequences: nvidia-smi underlines the header when writing to a terminal
// (ESC[4m ... ESC[0m), and captures keep those bytes.
std::string strip_ansi(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\x1b') {
      out += in[i];
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '[') {
      // CSI: parameter and intermediate bytes (0x20-0x3f), then one final byte (0x40-0x7e).
      std::size_t j = i + 2;
      while (j < in.size() && in[j] >= 0x20 && in[j] <= 0x3f) ++j;
      if (j < in.size() && in[j] >= 0x40 && in[j] <= 0x7e) ++j;
      i = j - 1;
    } else {
      ++i;  // a two-byte escape (ESC + one character); a lone ESC at the end just goes
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

// Columns are separated by tabs or runs of spaces (which version prints which varies), so
// empty cells (e.g. an unknown NUMA affinity) vanish; only leading columns are used anyway.
std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t pos = 0;
  while (pos < line.size()) {
    auto start = line.find_first_not_of(kSeparators, pos);
    if (start == std::string_view::npos) break;
    auto end = line.find_first_of(kSeparators, start);
    if (end == std::string_view::npos) end = line.size();
    cells.push_back(line.substr(start, end - start));
    pos = end;
  }
  return cells;
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(kSeparators) == std::string_view::npos;
}

// The number after `prefix` when `token` is prefix + a decimal number without leading zeros
// and at most `max_digits` digits ("GPU3", "NV18").
std::optional<int> numbered(std::string_view token, std::string_view prefix, int max_digits) {
  if (!token.starts_with(prefix)) return std::nullopt;
  auto digits = token.substr(prefix.size());
  if (digits.empty() || static_cast<int>(digits.size()) > max_digits) return std::nullopt;
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;
  int n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

// Enough digits for any index we accept (kMaxGpus) and to reject absurd ones cleanly.
std::optional<int> gpu_index(std::string_view token) {
  return numbered(token, "GPU", 4);
}

std::string gpu_name(int index) {
  return "GPU" + std::to_string(index);
}

// "1 GPU", "4 GPUs".
std::string count_of(int n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

// ---- Matrix checks shared by the parser and matrix_from_json ----

// Every cell a link kind, "X" exactly on the diagonal, and symmetric. Dimensions are checked
// by the callers, which know how to name what is missing.
void validate_cells(const Matrix& m) {
  for (int i = 0; i < m.gpus; ++i) {
    for (int j = 0; j < m.gpus; ++j) {
      const auto& cell = m.links[i][j];
      auto where = "row " + gpu_name(i) + ", column " + gpu_name(j) + ": ";
      if (!is_link_kind(cell)) {
        fail(where + "'" + quote(cell, kMaxCellQuote) + "' is not a link kind");
      }
      if (i == j && cell != "X") fail(where + "the diagonal must be 'X', not '" + cell + "'");
      if (i != j && cell == "X") fail(where + "'X' (self) may only appear on the diagonal");
    }
  }
  for (int i = 0; i < m.gpus; ++i) {
    for (int j = i + 1; j < m.gpus; ++j) {
      if (m.links[i][j] != m.links[j][i]) {
        fail("the matrix is not symmetric: row " + gpu_name(i) + ", column " + gpu_name(j) +
             " is '" + m.links[i][j] + "' but row " + gpu_name(j) + ", column " + gpu_name(i) +
             " is '" + m.links[j][i] + "'");
      }
    }
  }
}

// ---- The `topo -m` table ----

struct Header {
  int gpus = 0;
  std::unordered_set<std::string_view> other_devices;  // NIC0, mlx5_0, ...: rows to skip
};

// The words the affinity columns ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") start with;
// the device columns are everything before the first of them.
bool starts_affinity_columns(std::string_view cell) {
  return cell == "CPU" || cell == "NUMA" || cell == "GPU";
}

// A header line starts with a device column: GPU<n>, or NIC<n> on a node with only NICs.
bool looks_like_header(const std::vector<std::string_view>& cells) {
  return !cells.empty() && (gpu_index(cells[0]) || numbered(cells[0], "NIC", 4));
}

Header parse_header(const std::vector<std::string_view>& cells) {
  Header header;
  for (auto cell : cells) {
    if (starts_affinity_columns(cell)) break;
    auto index = gpu_index(cell);
    if (!index) {
      header.other_devices.insert(cell);
      continue;
    }
    if (!header.other_devices.empty()) {
      fail("header column " + std::string(cell) + " comes after the NIC columns");
    }
    if (*index != header.gpus) {
      fail("header column " + std::to_string(header.gpus + 1) + " is " + std::string(cell) +
           " but " + gpu_name(header.gpus) + " was expected");
    }
    if (++header.gpus > kMaxGpus) {
      fail("the header lists more than " + std::to_string(kMaxGpus) + " GPUs");
    }
  }
  if (header.gpus == 0) fail("the header lists no GPU columns");
  return header;
}

// Reads the GPU rows after the header up to the first blank line or the legend; NIC rows
// are skipped, and only the GPU columns of each GPU row are kept.
Matrix parse_rows(const Header& header, const std::vector<std::string_view>& lines,
                  std::size_t first) {
  Matrix m;
  m.gpus = header.gpus;
  bool past_gpu_rows = false;
  for (std::size_t i = first; i < lines.size(); ++i) {
    if (is_blank(lines[i])) break;
    auto cells = split_cells(lines[i]);
    if (cells[0].starts_with("Legend:")) break;
    auto index = gpu_index(cells[0]);
    if (!index) {
      if (!header.other_devices.contains(cells[0])) {
        fail("row '" + quote(cells[0], kMaxCellQuote) + "' is neither a GPU nor a header column");
      }
      past_gpu_rows = true;
      continue;
    }
    auto row = static_cast<int>(m.links.size());
    auto name = gpu_name(*index);
    if (past_gpu_rows) fail("row " + name + " comes after the NIC rows");
    if (*index < row) fail("row " + name + " appears twice");
    if (*index >= m.gpus) {
      fail("row " + name + " has no header column; the header lists " + count_of(m.gpus, "GPU"));
    }
    if (*index != row) fail("row " + gpu_name(row) + " is missing (found " + name + " instead)");
    if (static_cast<int>(cells.size()) - 1 < m.gpus) {
      fail("row " + name + " ends after " + std::to_string(cells.size() - 1) + " of its " +
           std::to_string(m.gpus) + " GPU cells");
    }
    m.links.emplace_back(cells.begin() + 1, cells.begin() + 1 + m.gpus);
  }
  if (static_cast<int>(m.links.size()) < m.gpus) {
    fail("row " + gpu_name(static_cast<int>(m.links.size())) + " is missing; the header lists " +
         count_of(m.gpus, "GPU"));
  }
  return m;
}

void require_nvlink_kind(std::string_view kind) {
  if (!is_nvlink(kind)) {
    throw std::invalid_argument("nvlink kind must be NV<n> (n 1..99), got '" +
                                quote(kind, kMaxCellQuote) + "'");
  }
}

}  // namespace

bool is_link_kind(std::string_view kind) {
  if (kind == "X" || is_nvlink(kind)) return true;
  for (auto pcie : kPcieKinds) {
    if (kind == pcie) return true;
  }
  return false;
}

bool is_nvlink(std::string_view kind) {
  return nvlink_count(kind) > 0;
}

int nvlink_count(std::string_view kind) {
  auto n = numbered(kind, "NV", 2);
  return n && *n >= 1 ? *n : 0;
}

bool Matrix::all_nvlink(const std::vector<int>& subset) const {
  for (std::size_t a = 0; a < subset.size(); ++a) {
    int i = subset[a];
    if (i < 0 || i >= gpus) return false;
    for (std::size_t b = a + 1; b < subset.size(); ++b) {
      int j = subset[b];
      if (j < 0 || j >= gpus) return false;
      if (i != j && !is_nvlink(links[i][j])) return false;
    }
  }
  return true;
}

Matrix parse_topo_m(std::string_view text) {
  if (text.size() > kMaxTopoTextBytes) {
    fail("the topology text is " + std::to_string(text.size()) + " bytes; at most " +
         std::to_string(kMaxTopoTextBytes) + " are accepted");
  }
  if (text.find('\0') != std::string_view::npos) {
    fail("the topology text contains NUL bytes; it is not nvidia-smi output");
  }
  auto clean = strip_ansi(text);
  auto lines = split_lines(clean);
  // The header is the first line that starts with a device column; anything before it (a
  // warning, or an error printed instead of the table) is not part of the matrix.
  std::optional<std::string_view> first_line;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_blank(lines[i])) continue;
    if (!first_line) first_line = lines[i];
    auto cells = split_cells(lines[i]);
    if (cells[0].starts_with("Legend:")) break;
    if (looks_like_header(cells)) {
      auto matrix = parse_rows(parse_header(cells), lines, i + 1);
      validate_cells(matrix);
      return matrix;
    }
  }
  if (!first_line) fail("the topology text is empty");
  fail("nvidia-smi printed no topology matrix: \"" + quote(*first_line, kMaxLineQuote) + "\"");
}

std::string_view to_string(Interconnect shape) {
  switch (shape) {
    case Interconnect::kNvswitch:
      return "nvswitch";
    case Interconnect::kNvlinkPairs:
      return "nvlink-pairs";
    case Interconnect::kPcie:
      return "pcie";
  }
  return "unknown";
}

std::optional<Interconnect> parse_interconnect(std::string_view name) {
  for (auto shape : {Interconnect::kNvswitch, Interconnect::kNvlinkPairs, Interconnect::kPcie}) {
    if (name == to_string(shape)) return shape;
  }
  return std::nullopt;
}

Matrix declared_matrix(Interconnect shape, int gpu_count, std::string_view nvlink_kind) {
  if (gpu_count < 1 || gpu_count > kMaxGpus) {
    throw std::invalid_argument("gpu count must be 1.." + std::to_string(kMaxGpus) + ", got " +
                                std::to_string(gpu_count));
  }
  if (shape == Interconnect::kNvlinkPairs && gpu_count % 2 != 0) {
    throw std::invalid_argument("nvlink-pairs needs an even gpu count, got " +
                                std::to_string(gpu_count));
  }
  if (shape != Interconnect::kPcie) require_nvlink_kind(nvlink_kind);

  // Two sockets, half the GPUs on each: the usual layout of 4- and 8-GPU servers. With one
  // or two GPUs we assume a single socket. Every cell copies one of four strings built
  // here (GCC 12 at -O3 warns falsely about building strings inside the loops).
  const int half = gpu_count / 2;
  const std::string self = "X", node = "NODE", sys = "SYS";
  std::string nvlink;
  nvlink.append(nvlink_kind.data(), nvlink_kind.size());
  auto kind = [&](int i, int j) -> const std::string& {
    if (i == j) return self;
    if (shape == Interconnect::kNvswitch ||
        (shape == Interconnect::kNvlinkPairs && i / 2 == j / 2)) {
      return nvlink;
    }
    return gpu_count <= 2 || (i < half) == (j < half) ? node : sys;
  };
  Matrix m;
  m.gpus = gpu_count;
  m.links.reserve(gpu_count);
  for (int i = 0; i < gpu_count; ++i) {
    std::vector<std::string> row;
    row.reserve(gpu_count);
    for (int j = 0; j < gpu_count; ++j) row.push_back(kind(i, j));
    m.links.push_back(std::move(row));
  }
  return m;
}

nlohmann::json to_json(const Matrix& matrix) {
  return {{"gpus", matrix.gpus}, {"links", matrix.links}};
}

Matrix matrix_from_json(const nlohmann::json& json) {
  if (!json.is_object()) fail("a topology must be a JSON object with \"gpus\" and \"links\"");
  auto gpus = json.find("gpus");
  auto links = json.find("links");
  if (gpus == json.end() || links == json.end()) {
    fail("a topology needs both \"gpus\" and \"links\"");
  }
  // A huge unsigned value converts to a negative one and is refused with the rest.
  if (!gpus->is_number_integer() || gpus->get<long long>() < 1 ||
      gpus->get<long long>() > kMaxGpus) {
    fail("\"gpus\" must be an integer from 1 to " + std::to_string(kMaxGpus));
  }
  Matrix m;
  m.gpus = gpus->get<int>();
  auto size = static_cast<std::size_t>(m.gpus);
  if (!links->is_array() || links->size() != size) {
    fail("\"links\" must be an array of " + count_of(m.gpus, "row"));
  }
  for (std::size_t i = 0; i < size; ++i) {
    const auto& row = (*links)[i];
    if (!row.is_array() || row.size() != size) {
      fail("\"links\" row " + gpu_name(static_cast<int>(i)) + " must be an array of " +
           count_of(m.gpus, "string"));
    }
    auto& out = m.links.emplace_back();
    for (std::size_t j = 0; j < size; ++j) {
      if (!row[j].is_string()) {
        fail("row " + gpu_name(static_cast<int>(i)) + ", column " + gpu_name(static_cast<int>(j)) +
             ": a link kind must be a string");
      }
      out.push_back(row[j].get<std::string>());
    }
  }
  validate_cells(m);
  return m;
}

}  // namespace gpurent::topology
