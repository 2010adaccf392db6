// Tables and money for people.
#include "cli/output.h"

#include <algorithm>

namespace gpurent::cli {
namespace {

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

// Currencies without minor units; every other ISO currency the platform bills in has two.
int minor_digits(const std::string& currency) {
  static const char* none[] = {"JPY", "KRW", "VND", "CLP", "ISK"};
  for (const char* c : none) {
    if (currency == c) return 0;
  }
  return 2;
}

}  // namespace

std::string format_money(const nlohmann::json& money) {
  if (!money.is_object() || !money.contains("amount_minor")) return "-";
  long long amount = money["amount_minor"].get<long long>();
  std::string currency = money.value("currency", "");
  int digits = minor_digits(currency);
  bool negative = amount < 0;
  unsigned long long magnitude = negative ? 0ull - static_cast<unsigned long long>(amount)
                                          : static_cast<unsigned long long>(amount);
  unsigned long long scale = digits == 2 ? 100 : 1;
  std::string whole = std::to_string(magnitude / scale);
  std::string grouped;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  std::string out = (negative ? "-" : "") + grouped;
  if (digits == 2) {
    unsigned long long cents = magnitude % 100;
    out += "." + std::string(cents < 10 ? "0" : "") + std::to_string(cents);
  }
  return currency.empty() ? out : out + " " + currency;
}

std::string format_duration(long long seconds) {
  if (seconds != 0 && seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  if (seconds != 0 && seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

std::string cell(const nlohmann::json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_object() && value.contains("amount_minor")) return format_money(value);
  return value.dump();
}

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - display_width(row[i]) + 2, ' ');
    }
    out << line << "\n";
  }
}

void print_fields(std::ostream& out,
                  const std::vector<std::pair<std::string, std::string>>& fields) {
  std::size_t width = 0;
  for (const auto& [k, v] : fields) width = std::max(width, display_width(k));
  for (const auto& [k, v] : fields) {
    out << k << ":" << std::string(width - display_width(k) + 1, ' ') << v << "\n";
  }
}

}  // namespace gpurent::cli
