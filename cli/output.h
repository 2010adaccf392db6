// Human-readable output: aligned tables and money as people read it. Scripts use --json.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace gpurent::cli {

// {"amount_minor": 12345000, "currency": "RUB"} → "123,450.00 RUB"; "-" for null.
std::string format_money(const nlohmann::json& money);

// Seconds as the CLI's duration options take them: 600 → "10m", 7200 → "2h", 90 → "90s".
std::string format_duration(long long seconds);

// A JSON value as a cell: strings bare, null as "-", booleans yes/no, numbers as written.
std::string cell(const nlohmann::json& value);

// Columns padded to their widest cell (counting UTF-8 characters), two spaces apart.
class Table {
 public:
  explicit Table(std::vector<std::string> headings) : rows_{std::move(headings)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.size() == 1; }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "key: value" lines, keys aligned.
void print_fields(std::ostream& out,
                  const std::vector<std::pair<std::string, std::string>>& fields);

}  // namespace gpurent::cli
