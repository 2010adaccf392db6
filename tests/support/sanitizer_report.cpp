// find_sanitizer_report: a line scanner over the runtimes' fixed report formats.
#include "tests/support/sanitizer_report.h"

#include <cctype>
#include <vector>

namespace gpurent::testing {
namespace {

constexpr std::size_t kMaxReportLines = 80;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// "==1234==ERROR: AddressSanitizer: …" or "==1234==ERROR: LeakSanitizer: …".
bool is_error_header(std::string_view line) {
  if (!starts_with(line, "==")) return false;
  std::size_t i = 2;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == 2 || !starts_with(line.substr(i), "==ERROR: ")) return false;
  return line.find("Sanitizer", i) != std::string_view::npos;
}

bool is_summary(std::string_view line) {
  return starts_with(line, "SUMMARY: ") && line.find("Sanitizer") != std::string_view::npos;
}

// "path/file.cpp:12:34: runtime error: …" (UBSan); the location has no spaces.
bool is_ubsan_error(std::string_view line) {
  auto at = line.find(": runtime error: ");
  if (at == std::string_view::npos || at == 0) return false;
  std::string_view where = line.substr(0, at);
  if (where.find(' ') != std::string_view::npos || where.front() == '{') return false;
  return where.find(':') != std::string_view::npos;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

}  // namespace

std::string find_sanitizer_report(std::string_view output) {
  auto lines = lines_of(output);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!is_error_header(lines[i]) && !is_summary(lines[i]) && !is_ubsan_error(lines[i])) {
      continue;
    }
    std::string report;
    for (std::size_t j = i; j < lines.size() && j < i + kMaxReportLines; ++j) {
      // The server's own JSON lines resume after a one-line UBSan report.
      if (j > i && starts_with(lines[j], "{")) break;
      report.append(lines[j]).push_back('\n');
      if (is_summary(lines[j])) break;
    }
    return report;
  }
  return {};
}

}  // namespace gpurent::testing
