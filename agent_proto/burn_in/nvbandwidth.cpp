// Parses nvbandwidth's output line by line: "Running NAME." opens a test case, a title line
// with "(row)" and "(column)" opens a matrix whose next line holds the column labels, and
// "SUM NAME VALUE" closes a matrix and, when the name is the test case's, gives its sum.
#include "agent_proto/burn_in/nvbandwidth.h"

#include "agent_proto/burn_in/text_lines.h"

namespace gpurent::burn_in {
namespace {

namespace t = text;

std::string short_text(std::string_view s) {
  return t::printable(t::trim(s), kMaxNvbandwidthTextBytes);
}

// The last "(...)" of a title: its unit.
std::string unit_of(std::string_view title) {
  return short_text(t::last_parenthesised(title));
}

class Parser {
 public:
  NvbandwidthResult run(std::string_view text) {
    t::LineReader reader(text);
    for (std::string_view raw; reader.next(raw);) {
      index_ = reader.index();
      line(t::trim(raw));
    }
    close_matrix();
    std::erase_if(result_.test_cases,
                  [](const NvbandwidthTestCase& c) { return c.matrices.empty() && !c.sum; });
    if (result_.test_cases.empty()) {
      throw ParseError("no test case with a result: not nvbandwidth output, or every test failed");
    }
    return std::move(result_);
  }

 private:
  enum class State { kText, kHeader, kRows };

  void line(std::string_view s) {
    if (state_ == State::kHeader) return header(s);
    if (state_ == State::kRows) {
      if (!s.empty() && row(s)) return;
      state_ = State::kText;  // a blank or other line ends the rows
    }
    if (s.empty()) return;
    if (t::starts_with(s, "nvbandwidth Version:")) {
      result_.version = short_text(s.substr(20));
    } else if (t::starts_with(s, "Driver Version:")) {
      result_.driver_version = short_text(s.substr(15));
    } else if (t::starts_with(s, "Running ")) {
      auto name = s.substr(8);
      if (!name.empty() && name.back() == '.') name.remove_suffix(1);
      open_case(name);
    } else if (t::starts_with(s, "SUM ")) {
      sum(s);
    } else if (s.find("(column)") != std::string_view::npos && s.back() == ')') {
      // "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", and device_local_copy's one-row
      // "memcpy local GPU(column) bandwidth (GB/s)".
      open_matrix(s);
    }
  }

  NvbandwidthTestCase& current_case() {
    if (result_.test_cases.empty()) open_case("");
    return result_.test_cases.back();
  }

  void open_case(std::string_view name) {
    if (result_.test_cases.size() >= kMaxNvbandwidthTestCases) {
      throw ParseError(t::at_line(index_) + "more test cases than nvbandwidth has");
    }
    result_.test_cases.push_back({.name = short_text(name), .matrices = {}, .sum = {}});
  }

  void open_matrix(std::string_view title) {
    auto& c = current_case();
    if (c.matrices.size() >= kMaxNvbandwidthMatricesPerCase) {
      throw ParseError(t::at_line(index_) +
                       "more matrices in one test case than nvbandwidth prints");
    }
    NvbandwidthMatrix m;
    m.title = short_text(title);
    m.unit = unit_of(title);
    c.matrices.push_back(std::move(m));
    state_ = State::kHeader;
  }

  void header(std::string_view s) {
    auto labels = t::tokens(s);
    if (labels.empty() || labels.size() > kMaxNvbandwidthMatrixSide) {
      throw ParseError(t::at_line(index_) + "a matrix has no column labels");
    }
    auto& m = current_case().matrices.back();
    for (auto label : labels) m.columns.push_back(short_text(label));
    state_ = State::kRows;
  }

  // A row: a label and one cell per column. False when the line is not a row of this matrix.
  bool row(std::string_view s) {
    auto& m = current_case().matrices.back();
    auto tok = t::tokens(s);
    if (tok.size() != m.columns.size() + 1) {
      // A line starting like a row but with the wrong number of cells is a broken matrix.
      if (tok.size() > 1 && t::to_int(tok[0]) && (tok[1] == "N/A" || t::to_double(tok[1]))) {
        throw ParseError(t::at_line(index_) + "a matrix row has " + std::to_string(tok.size() - 1) +
                         " cells for " + std::to_string(m.columns.size()) + " columns");
      }
      return false;
    }
    std::vector<std::optional<double>> cells;
    for (std::size_t i = 1; i < tok.size(); ++i) {
      if (tok[i] == "N/A") {
        cells.emplace_back();
        continue;
      }
      auto v = t::to_double(tok[i]);
      if (!v) {
        if (i == 1) return false;
        throw ParseError(t::at_line(index_) + "a matrix cell is neither a number nor N/A");
      }
      cells.push_back(*v);
    }
    if (m.rows.size() >= kMaxNvbandwidthMatrixSide) {
      throw ParseError(t::at_line(index_) + "a matrix has more rows than any node has devices");
    }
    m.rows.push_back(short_text(tok[0]));
    m.cells.push_back(std::move(cells));
    return true;
  }

  void close_matrix() { state_ = State::kText; }

  void sum(std::string_view s) {
    auto tok = t::tokens(s);
    if (tok.size() != 3)
      throw ParseError(t::at_line(index_) + "a SUM line is not 'SUM NAME VALUE'");
    auto v = t::to_double(tok[2]);
    if (!v) throw ParseError(t::at_line(index_) + "a SUM value is not a number");
    auto& c = current_case();
    auto name = short_text(tok[1]);
    if (c.name.empty()) c.name = name;
    if (!c.matrices.empty() && !c.matrices.back().sum) {
      c.matrices.back().sum_name = name;
      c.matrices.back().sum = *v;
    }
    if (name == c.name || (name == c.name + "_total" && !c.sum)) c.sum = *v;
  }

  NvbandwidthResult result_;
  State state_ = State::kText;
  std::size_t index_ = 0;
};

}  // namespace

NvbandwidthResult parse_nvbandwidth(std::string_view text) {
  t::check_size(text, "nvbandwidth");
  return Parser().run(text);
}

}  // namespace gpurent::burn_in
