// Request headers from a map, for tests that build a Request by hand; names match without
// regard to case, as HTTP's do.
#pragma once

#include "api/http_types.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>

namespace gpurent::http {

class MapHeaders final : public HeaderSource {
 public:
  explicit MapHeaders(std::map<std::string, std::string> h) : h_(std::move(h)) {}
  std::string_view get(std::string_view name) const override {
    for (const auto& [k, v] : h_) {
      if (k.size() == name.size() &&
          std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
          })) {
        return v;
      }
    }
    return {};
  }

 private:
  std::map<std::string, std::string> h_;
};

}  // namespace gpurent::http
