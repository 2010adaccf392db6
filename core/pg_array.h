// PostgreSQL array literals for statement parameters: `$1::text[]` or `$1::int[]` takes one
// string, and libpqxx 6 has no conversion from a container, so every element is quoted and
// escaped here, whatever it holds.
#pragma once

#include <string>
#include <type_traits>

namespace gpurent {

// {"a","b \"c\"","d\\e","7"}: every element double-quoted (so commas, braces, spaces, the
// word NULL and the empty string stay text), with backslash and double quote escaped, by
// the input rules of PostgreSQL's "Array Value Input". Numbers are written as text, which
// `::int[]` and `::bigint[]` accept.
template <typename Range>
std::string pg_array_literal(const Range& values) {
  std::string out = "{";
  for (const auto& v : values) {
    if (out.size() > 1) out += ',';
    out += '"';
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(v)>>) {
      out += std::to_string(v);
    } else {
      for (char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace gpurent
