// Parses p2pBandwidthLatencyTest's output line by line: "Device: N, NAME, pciBusID: X, ..." lists a
// device, "P2P Connectivity Matrix" opens the 1/0 matrix, and a "... P2P=... Matrix (UNIT)" title
// opens a matrix whose next line holds the column labels; a latency matrix's CPU block ("CPU 0 1
// ...", after a blank line) continues it. Every other line is skipped.
#include "agent_proto/burn_in/p2p_bandwidth.h"

#include "agent_proto/burn_in/text_lines.h"

namespace gpurent::burn_in {
namespace {

namespace t = text;

std::string short_text(std::string_view s) {
  return t::printable(t::trim(s), kMaxP2pTextBytes);
}

// The last "(...)" of a title: its unit.
std::string unit_of(std::string_view title) {
  return short_text(t::last_parenthesised(title));
}

// "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "P2P=Enabled Latency (P2P Writes) Matrix
// (us)"; not "P2P Connectivity Matrix", which has no unit.
bool is_title(std::string_view s) {
  return s.find("P2P=") != std::string_view::npos &&
         s.find(" Matrix (") != std::string_view::npos && s.back() == ')';
}

bool is_hex(std::string_view s) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s) {
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f') && !(c >= 'A' && c <= 'F')) return false;
  }
  return true;
}

// A line starting like a row: a label and a first cell.
bool looks_like_row(const std::vector<std::string_view>& tok) {
  return tok.size() > 1 && t::to_int(tok[0]) && (tok[1] == "N/A" || t::to_double(tok[1]));
}

class Parser {
 public:
  P2pBandwidthResult run(std::string_view text) {
    t::LineReader reader(text);
    for (std::string_view raw; reader.next(raw);) {
      index_ = reader.index();
      line(t::trim(raw));
    }
    finish();
    check_devices();
    if (result_.matrices.empty()) {
      throw ParseError(
          "no matrix: not p2pBandwidthLatencyTest output, or the run stopped before its first "
          "matrix");
    }
    return std::move(result_);
  }

 private:
  enum class State { kText, kConnectivityHeader, kConnectivityRows, kHeader, kRows, kGap };

  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError(t::at_line(index_) + what);
  }

  void line(std::string_view s) {
    switch (state_) {
      case State::kConnectivityHeader:
        return connectivity_header(s);
      case State::kHeader:
        return matrix_header(s);
      case State::kConnectivityRows:
        if (connectivity_row(s)) return;
        close_connectivity();
        break;
      case State::kRows:
        if (matrix_row(s)) return;
        if (s.empty()) {
          state_ = State::kGap;  // a latency matrix's CPU block may follow
          return;
        }
        if (cpu_header(s)) return;
        close_matrix();
        break;
      case State::kGap:
        if (s.empty() || cpu_header(s)) return;
        close_matrix();
        break;
      case State::kText:
        break;
    }
    text_line(s);
  }

  void text_line(std::string_view s) {
    if (t::starts_with(s, "Device: ")) {
      device(s.substr(8));
    } else if (t::starts_with(s, "P2P Connectivity Matrix")) {
      connectivity_ = {};
      state_ = State::kConnectivityHeader;
    } else if (is_title(s)) {
      open_matrix(s);
    }
  }

  void finish() {
    switch (state_) {
      case State::kConnectivityHeader:
      case State::kHeader:
        fail("the output ends after a matrix title, before its column header");
      case State::kConnectivityRows:
        return close_connectivity();
      case State::kRows:
      case State::kGap:
        return close_matrix();
      case State::kText:
        return;
    }
  }

  // "0, NVIDIA H100 80GB HBM3, pciBusID: 18, pciDeviceID: 0, pciDomainID:0". A line that does not
  // start with an index is not the tool's and is skipped.
  void device(std::string_view s) {
    auto comma = s.find(',');
    if (comma == std::string_view::npos) return;
    auto index = t::to_int(t::trim(s.substr(0, comma)));
    if (!index) return;
    if (*index < 0 || *index >= static_cast<std::int64_t>(kMaxP2pGpus)) {
      fail("a device index is outside 0 to " + std::to_string(kMaxP2pGpus - 1));
    }
    auto rest = s.substr(comma + 1);
    auto bus_at = rest.find(", pciBusID:");
    auto name = t::trim(rest.substr(0, bus_at));
    if (name.empty()) fail("a device line has no name");
    if (name.size() > kMaxP2pTextBytes) fail("a device name is longer than 160 bytes");
    P2pDevice d{.index = static_cast<int>(*index), .name = short_text(name), .pci_bus_id = {}};
    if (bus_at != std::string_view::npos) {
      auto bus = rest.substr(bus_at + 11);
      bus = t::trim(bus.substr(0, bus.find(',')));
      if (!is_hex(bus)) fail("a device's pciBusID is not a hex number");
      d.pci_bus_id = std::string(bus);
    }
    auto& devices = result_.devices;
    if (d.index < static_cast<int>(devices.size())) {
      // A second run pasted after the first lists its devices again.
      if (devices[d.index] != d) {
        fail("device " + std::to_string(d.index) + " is listed twice, differently");
      }
      return;
    }
    if (d.index > static_cast<int>(devices.size())) {
      fail("device " + std::to_string(d.index) + " is listed before device " +
           std::to_string(devices.size()));
    }
    devices.push_back(std::move(d));
  }

  // "D\D 0 1 ... N-1" (or "GPU 0 1 ...") under a title: the column labels.
  std::vector<std::string> header(std::string_view s) const {
    auto tok = t::tokens(s);
    if (tok.size() < 2 || t::to_int(tok[0])) {
      fail("a matrix title is not followed by its column header");
    }
    if (tok.size() - 1 > kMaxP2pGpus) {
      fail("a matrix has more than " + std::to_string(kMaxP2pGpus) + " columns");
    }
    std::vector<std::string> labels;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      if (tok[i] != std::to_string(i - 1)) fail("a matrix header's columns are not 0 to N-1");
      labels.emplace_back(tok[i]);
    }
    if (!result_.devices.empty() && labels.size() != result_.devices.size()) {
      fail("a matrix has " + std::to_string(labels.size()) + " columns for " +
           std::to_string(result_.devices.size()) + " devices listed");
    }
    return labels;
  }

  void connectivity_header(std::string_view s) {
    connectivity_columns_ = header(s).size();
    state_ = State::kConnectivityRows;
  }

  bool connectivity_row(std::string_view s) {
    auto tok = t::tokens(s);
    if (tok.size() < 2 || !t::to_int(tok[0]) || !t::to_int(tok[1])) return false;
    if (tok.size() != connectivity_columns_ + 1) {
      fail("a connectivity row has " + std::to_string(tok.size() - 1) + " cells for " +
           std::to_string(connectivity_columns_) + " columns");
    }
    if (tok[0] != std::to_string(connectivity_.size())) {
      fail("a connectivity row is labelled " + short_text(tok[0]) + " where row " +
           std::to_string(connectivity_.size()) + " was due");
    }
    std::vector<int> row;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      if (tok[i] != "0" && tok[i] != "1") fail("a connectivity value is not 0 or 1");
      row.push_back(tok[i] == "1" ? 1 : 0);
    }
    connectivity_.push_back(std::move(row));
    return true;
  }

  void close_connectivity() {
    state_ = State::kText;
    if (connectivity_.size() != connectivity_columns_) {
      fail("the connectivity matrix has " + std::to_string(connectivity_.size()) + " rows for " +
           std::to_string(connectivity_columns_) + " columns; the run did not finish");
    }
    if (result_.connectivity.empty()) {
      result_.connectivity = std::move(connectivity_);
    } else if (result_.connectivity != connectivity_) {
      fail("a second connectivity matrix differs from the first; runs of two machines?");
    }
  }

  void open_matrix(std::string_view title) {
    if (title.size() > kMaxP2pTextBytes) fail("a matrix title is longer than 160 bytes");
    if (result_.matrices.size() >= kMaxP2pMatrices) {
      fail("more than " + std::to_string(kMaxP2pMatrices) + " matrices, more than two runs print");
    }
    P2pMatrix m;
    m.title = short_text(title);
    m.unit = unit_of(title);
    result_.matrices.push_back(std::move(m));
    state_ = State::kHeader;
    cpu_block_ = false;
    block_rows_ = 0;
  }

  void matrix_header(std::string_view s) {
    result_.matrices.back().columns = header(s);
    state_ = State::kRows;
  }

  // A latency matrix's second block, timed on the CPU: "CPU 0 1 ..." with the same columns.
  bool cpu_header(std::string_view s) {
    auto tok = t::tokens(s);
    if (tok.empty() || tok[0] != "CPU") return false;
    auto& m = result_.matrices.back();
    if (cpu_block_) fail("a matrix has a second CPU block");
    if (tok.size() != m.columns.size() + 1) fail("a CPU block's columns are not its matrix's");
    for (std::size_t i = 1; i < tok.size(); ++i) {
      if (tok[i] != m.columns[i - 1]) fail("a CPU block's columns are not its matrix's");
    }
    finish_block();
    cpu_block_ = true;
    block_rows_ = 0;
    state_ = State::kRows;
    return true;
  }

  // A row: its label and one cell per column. False when the line is not a row at all.
  bool matrix_row(std::string_view s) {
    auto tok = t::tokens(s);
    if (!looks_like_row(tok)) return false;
    auto& m = result_.matrices.back();
    if (tok.size() != m.columns.size() + 1) {
      fail("a matrix row has " + std::to_string(tok.size() - 1) + " cells for " +
           std::to_string(m.columns.size()) + " columns");
    }
    if (block_rows_ >= m.columns.size()) fail("a matrix has more rows than columns");
    if (tok[0] != m.columns[block_rows_]) {
      fail("a matrix row is labelled " + short_text(tok[0]) + " where row " +
           m.columns[block_rows_] + " was due");
    }
    std::vector<std::optional<double>> cells;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      if (tok[i] == "N/A") {
        cells.emplace_back();
        continue;
      }
      auto v = t::to_double(tok[i]);
      if (!v) fail("a matrix cell is neither a number nor N/A");
      if (*v < 0 || *v >= kMaxP2pValue) {
        fail("a matrix value is outside 0 to 1e7, not one a GPU measures");
      }
      cells.push_back(*v);
    }
    m.rows.push_back(cpu_block_ ? "CPU " + m.columns[block_rows_] : m.columns[block_rows_]);
    m.cells.push_back(std::move(cells));
    ++block_rows_;
    return true;
  }

  // A block has one row per column: fewer means the run (or the paste) stopped inside it.
  void finish_block() const {
    const auto& m = result_.matrices.back();
    if (block_rows_ != m.columns.size()) {
      fail("'" + m.title + "'" + (cpu_block_ ? " (CPU block)" : "") + " has " +
           std::to_string(block_rows_) + " rows for " + std::to_string(m.columns.size()) +
           " columns; the run did not finish");
    }
  }

  void close_matrix() {
    finish_block();
    state_ = State::kText;
  }

  // Devices listed after a matrix (a second run's list, grown) must still match it.
  void check_devices() const {
    auto n = result_.devices.size();
    if (n == 0) return;
    if (!result_.connectivity.empty() && result_.connectivity.size() != n) {
      throw ParseError("the connectivity matrix has " +
                       std::to_string(result_.connectivity.size()) + " columns for " +
                       std::to_string(n) + " devices listed");
    }
    for (const auto& m : result_.matrices) {
      if (m.columns.size() != n) {
        throw ParseError("'" + m.title + "' has " + std::to_string(m.columns.size()) +
                         " columns for " + std::to_string(n) + " devices listed");
      }
    }
  }

  P2pBandwidthResult result_;
  State state_ = State::kText;
  std::vector<std::vector<int>> connectivity_;  // the one being read
  std::size_t connectivity_columns_ = 0;
  bool cpu_block_ = false;      // the current matrix's rows are its CPU block's
  std::size_t block_rows_ = 0;  // rows read in the current block
  std::size_t index_ = 0;
};

}  // namespace

const P2pMatrix* P2pBandwidthResult::find(std::string_view prefix) const {
  for (const auto& m : matrices) {
    if (t::starts_with(m.title, prefix)) return &m;
  }
  return nullptr;
}

P2pBandwidthResult parse_p2p_bandwidth(std::string_view text) {
  t::check_size(text, "p2pBandwidthLatencyTest");
  return Parser().run(text);
}

}  // namespace gpurent::burn_in
