// The subset of JSON Schema (2020-12, as OpenAPI 3.1 uses it) the document's schemas use.
#include "tests/support/contract_check.h"

#include <cmath>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gpurent::testing {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 1;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool is_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return false;
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

bool rfc3339(const std::string& s) {
  static const std::regex re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$)");
  return std::regex_match(s, re);
}

bool date(const std::string& s) {
  static const std::regex re(R"(^\d{4}-\d{2}-\d{2}$)");
  return std::regex_match(s, re);
}

}  // namespace

ContractCheck::ContractCheck(json document) : doc_(std::move(document)) {}

const json& ContractCheck::resolve(const json& schema) const {
  const json* s = &schema;
  for (int hops = 0; s->is_object() && s->contains("$ref"); ++hops) {
    if (hops > 16) throw std::runtime_error("$ref loop at " + (*s)["$ref"].dump());
    const std::string ref = (*s)["$ref"].get<std::string>();
    if (ref.rfind("#/", 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
    s = &doc_.at(json::json_pointer(ref.substr(1)));
  }
  return *s;
}

const std::regex& ContractCheck::pattern(const std::string& text) const {
  // std::map never moves its elements: the reference outlives the lock.
  std::lock_guard lock(patterns_mutex_);
  auto it = patterns_.find(text);
  if (it == patterns_.end()) it = patterns_.emplace(text, std::regex(text)).first;
  return it->second;
}

const json* ContractCheck::operation(const std::string& method, const std::string& path) const {
  const auto parts = split_path(path);
  for (const auto& [pattern, ops] : doc_["paths"].items()) {
    const auto want = split_path(pattern);
    if (want.size() != parts.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < want.size() && same; ++i) {
      const bool param = !want[i].empty() && want[i].front() == '{';
      same = param ? !parts[i].empty() : want[i] == parts[i];
    }
    if (!same) continue;
    auto it = ops.find(method);
    if (it != ops.end()) return &*it;
  }
  return nullptr;
}

std::vector<std::string> ContractCheck::response(const std::string& method,
                                                 const std::string& target, int status,
                                                 const std::string& content_type,
                                                 const std::string& body) const {
  std::string m = method;
  for (auto& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string path = target.substr(0, target.find('?'));
  const json* op = operation(m, path);
  if (!op) return {};
  const std::string name = method + " " + target + " → " + std::to_string(status);
  const auto& responses = (*op)["responses"];
  const std::string code = std::to_string(status);
  const std::string range = code.substr(0, 1) + "XX";
  const json* chosen = nullptr;
  for (const auto& key : {code, range, std::string("default")}) {
    if (responses.contains(key)) {
      chosen = &responses[key];
      break;
    }
  }
  if (!chosen) return {name + ": the document lists no such response"};
  const auto& r = resolve(*chosen);
  if (!r.contains("content")) {
    if (!body.empty() && status != 304)
      return {name + ": the document says no body, got " + shown(body)};
    return {};
  }
  const std::string media = content_type.substr(0, content_type.find(';'));
  auto it = r["content"].find(media);
  if (it == r["content"].end()) {
    return {name + ": content type " + media + " is not one the document lists (" +
            r["content"].dump() + ")"};
  }
  if (media != "application/json" || !it->contains("schema")) return {};
  json parsed;
  try {
    parsed = json::parse(body);
  } catch (const json::parse_error&) {
    return {name + ": the body is not JSON"};
  }
  auto problems = value((*it)["schema"], parsed);
  for (auto& p : problems) p = name + ": " + p;
  return problems;
}

std::vector<std::string> ContractCheck::value(const json& schema, const json& v,
                                              const std::string& where) const {
  std::vector<std::string> out;
  check(schema, v, where, out, 0);
  return out;
}

void ContractCheck::check(const json& raw, const json& v, const std::string& where,
                          std::vector<std::string>& out, int depth, bool open) const {
  if (depth > kMaxDepth) {
    out.push_back(where + ": nested too deep");
    return;
  }
  if (raw.is_boolean()) {
    if (!raw.get<bool>()) out.push_back(where + ": no value is allowed here");
    return;
  }
  const json& s = resolve(raw);
  if (!s.is_object()) return;
  if (s.contains("type")) {
    const auto& t = s["type"];
    bool ok = false;
    if (t.is_string()) {
      ok = is_type(v, t.get<std::string>());
    } else {
      for (const auto& one : t) ok = ok || is_type(v, one.get<std::string>());
    }
    if (!ok) {
      out.push_back(where + ": expected " + t.dump() + ", got " + shown(v));
      return;
    }
  }
  if (s.contains("const") && v != s["const"]) {
    out.push_back(where + ": expected " + s["const"].dump() + ", got " + shown(v));
  }
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) out.push_back(where + ": " + shown(v) + " is not one of " + s["enum"].dump());
  }
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    int matched = 0;
    std::vector<std::string> first;
    const bool all = std::string(key) == "allOf";
    for (const auto& sub : s[key]) {
      std::vector<std::string> sub_out;
      check(sub, v, where, sub_out, depth + 1, all);
      if (sub_out.empty()) ++matched;
      if (std::string(key) == "allOf") out.insert(out.end(), sub_out.begin(), sub_out.end());
      if (first.empty()) first = sub_out;
    }
    if (std::string(key) == "anyOf" && matched == 0) {
      out.push_back(
          where + ": matches none of anyOf (first: " + (first.empty() ? "" : first.front()) + ")");
    }
    if (std::string(key) == "oneOf" && matched != 1) {
      out.push_back(where + ": matches " + std::to_string(matched) + " of oneOf, not exactly one" +
                    (first.empty() ? "" : " (first: " + first.front() + ")"));
    }
  }
  if (v.is_string()) {
    const auto text = v.get<std::string>();
    if (s.contains("minLength") && text.size() < s["minLength"].get<std::size_t>()) {
      out.push_back(where + ": shorter than " + s["minLength"].dump());
    }
    if (s.contains("maxLength") && text.size() > s["maxLength"].get<std::size_t>()) {
      out.push_back(where + ": longer than " + s["maxLength"].dump());
    }
    if (s.contains("pattern") && !std::regex_search(text, pattern(s["pattern"]))) {
      out.push_back(where + ": " + shown(v) + " does not match " + s["pattern"].dump());
    }
    const std::string format = s.value("format", "");
    if (format == "date-time" && !rfc3339(text)) {
      out.push_back(where + ": " + shown(v) + " is not an RFC 3339 time");
    }
    if (format == "date" && !date(text)) out.push_back(where + ": " + shown(v) + " is not a date");
  }
  if (v.is_number()) {
    if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>()) {
      out.push_back(where + ": " + shown(v) + " is below " + s["minimum"].dump());
    }
    if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>()) {
      out.push_back(where + ": " + shown(v) + " is above " + s["maximum"].dump());
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) {
      out.push_back(where + ": fewer items than " + s["minItems"].dump());
    }
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) {
      out.push_back(where + ": more items than " + s["maxItems"].dump());
    }
    if (s.contains("items")) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        check(s["items"], v[i], where + "[" + std::to_string(i) + "]", out, depth + 1);
      }
    }
  }
  if (v.is_object()) {
    if (s.contains("required")) {
      for (const auto& name : s["required"]) {
        if (!v.contains(name.get<std::string>())) {
          out.push_back(where + ": required property " + name.get<std::string>() + " is missing");
        }
      }
    }
    // The properties this schema and its allOf branches list between them.
    bool listed = s.contains("properties");
    bool extra = s.contains("additionalProperties");
    std::set<std::string> names;
    if (listed) {
      for (const auto& [name, unused] : s["properties"].items()) names.insert(name);
    }
    if (s.contains("allOf")) {
      for (const auto& sub : s["allOf"]) {
        const json& branch = resolve(sub);
        if (!branch.is_object()) continue;
        if (branch.contains("properties")) {
          listed = true;
          for (const auto& [name, unused] : branch["properties"].items()) names.insert(name);
        }
        extra = extra || branch.contains("additionalProperties");
      }
    }
    for (const auto& [key, item] : v.items()) {
      const std::string at = where + "." + key;
      if (s.contains("properties") && s["properties"].contains(key)) {
        check(s["properties"][key], item, at, out, depth + 1);
      } else if (s.contains("additionalProperties") && !open) {
        check(s["additionalProperties"], item, at, out, depth + 1);
      } else if (listed && !extra && !open && !names.count(key)) {
        out.push_back(at + ": a property the document does not list");
      }
    }
  }
}

}  // namespace gpurent::testing
