// Line and number helpers the burn-in parsers share: tool output is read line by line, and
// every number is read strictly (the whole token, finite), never with a locale.
#pragma once

#include "agent_proto/burn_in/parse_error.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::burn_in::text {

// Refuses text over kMaxToolOutputBytes, naming the tool.
inline void check_size(std::string_view text, const char* tool) {
  if (text.size() > kMaxToolOutputBytes) {
    throw ParseError(std::string(tool) + " output is larger than 16 MiB; not a tool's output");
  }
}

// Reads text line by line without copying it: lines end at '\n' or '\r' (gpu_burn repaints its
// progress line with '\r') and keep no line-end characters; a final empty line is not one.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}

  // The next line no longer than kMaxToolLineBytes (longer ones are skipped), or false at the
  // end. index() is then the line's number, from 0.
  bool next(std::string_view& line) {
    do {
      if (!next_any(line)) return false;
    } while (line.size() > kMaxToolLineBytes);
    return true;
  }
  std::size_t index() const { return count_ - 1; }

 private:
  bool next_any(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    auto end = text_.find_first_of("\r\n", pos_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(pos_, end - pos_);
    // "\r\n" ends one line (a capture saved on Windows), a lone '\r' ends one too.
    pos_ = end + (text_.substr(end, 2) == "\r\n" ? 2 : 1);
    ++count_;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t count_ = 0;
};

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// White-space separated tokens.
inline std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// The whole token as an integer.
inline std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The whole token as a finite number ("12", "0.24", "1e+03"; not "nan", "inf" or "1.2x").
inline std::optional<double> to_double(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// The last "(...)" of a matrix title, its unit: "… bandwidth (GB/s)" -> "GB/s"; empty without one.
inline std::string_view last_parenthesised(std::string_view title) {
  auto close = title.rfind(')');
  auto open = close == std::string_view::npos ? close : title.rfind('(', close);
  if (open == std::string_view::npos) return {};
  return title.substr(open + 1, close - open - 1);
}

// Printable ASCII for JSON and terminals: control characters become spaces, other bytes '?';
// cut to max_bytes.
inline std::string printable(std::string_view s, std::size_t max_bytes) {
  std::string out;
  for (char ch : s.substr(0, max_bytes)) {
    auto c = static_cast<unsigned char>(ch);
    out += c < 0x20 || c == 0x7f ? ' ' : (c < 0x80 ? ch : '?');
  }
  return out;
}

// "line N: " for messages; lines count from 1.
inline std::string at_line(std::size_t index) {
  return "line " + std::to_string(index + 1) + ": ";
}

}  // namespace gpurent::burn_in::text
