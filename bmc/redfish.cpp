// Strict readers of the Redfish bodies a power action needs. A BMC is a device on the site's
// management network running vendor firmware: its JSON is read as untrusted input, every
// field checked for type and size, and anything else is a RedfishError naming where.
#include "bmc/redfish.h"

#include <nlohmann/json.hpp>

#include <array>
#include <utility>

namespace gpurent::bmc {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<ResetType, std::string_view>, 9> kResetTypeNames{{
    {ResetType::kOn, "On"},
    {ResetType::kForceOff, "ForceOff"},
    {ResetType::kGracefulShutdown, "GracefulShutdown"},
    {ResetType::kGracefulRestart, "GracefulRestart"},
    {ResetType::kForceRestart, "ForceRestart"},
    {ResetType::kNmi, "Nmi"},
    {ResetType::kForceOn, "ForceOn"},
    {ResetType::kPushPowerButton, "PushPowerButton"},
    {ResetType::kPowerCycle, "PowerCycle"},
}};

constexpr std::array<std::pair<PowerState, std::string_view>, 5> kPowerStateNames{{
    {PowerState::kOn, "On"},
    {PowerState::kOff, "Off"},
    {PowerState::kPoweringOn, "PoweringOn"},
    {PowerState::kPoweringOff, "PoweringOff"},
    {PowerState::kPaused, "Paused"},
}};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw RedfishError(path + ": " + what);
}

// Counts nesting outside strings; the parser below recurses once per level, so a body of a
// million '[' must be refused before it is parsed.
void check_nesting(std::string_view body) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxRedfishNesting) {
        fail("$", "nested deeper than " + std::to_string(kMaxRedfishNesting) + " levels");
      }
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
}

json parse_body(std::string_view body) {
  if (body.size() > kMaxRedfishBodyBytes) {
    fail("$", "body of " + std::to_string(body.size()) + " bytes, over the " +
                  std::to_string(kMaxRedfishBodyBytes) + " allowed");
  }
  check_nesting(body);
  json value = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) fail("$", "not JSON");
  if (!value.is_object()) fail("$", "not a JSON object");
  return value;
}

// A key as it appears in a path: plain names as `.Name`, others as `["#Name"]`.
std::string key_path(const std::string& parent, std::string_view key) {
  bool plain = !key.empty();
  for (char c : key) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      plain = false;
    }
  }
  if (plain) return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  return (parent.empty() ? "$" : parent) + "[\"" + std::string(key) + "\"]";
}

std::string index_path(const std::string& parent, std::size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::string string_at(const json& value, const std::string& path) {
  if (!value.is_string()) fail(path, "not a string");
  const auto& s = value.get_ref<const std::string&>();
  if (s.size() > kMaxRedfishStringBytes) {
    fail(path, "a string of " + std::to_string(s.size()) + " bytes, over the " +
                   std::to_string(kMaxRedfishStringBytes) + " allowed");
  }
  if (!printable(s)) fail(path, "a string with control characters");
  return s;
}

const json* member(const json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& array_at(const json& value, const std::string& path) {
  if (!value.is_array()) fail(path, "not an array");
  if (value.size() > kMaxRedfishListItems) {
    fail(path, std::to_string(value.size()) + " items, over the " +
                   std::to_string(kMaxRedfishListItems) + " allowed");
  }
  return value;
}

const json& object_at(const json& value, const std::string& path) {
  if (!value.is_object()) fail(path, "not an object");
  return value;
}

// A path on the BMC: "/" and then URI path characters. A scheme, a host ("//host"), spaces or
// fragments would let a body send the client's credentials somewhere else.
std::string bmc_path_at(const json& value, const std::string& path) {
  auto s = string_at(value, path);
  if (s.size() < 2 || s[0] != '/' || s[1] == '/')
    fail(path, "not a path on the BMC (\"/redfish/...\")");
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              std::string_view("-._~/!$&'()*+,;=:@%").find(c) != std::string_view::npos;
    if (!ok) fail(path, "a path with a character a path may not hold");
  }
  return s;
}

// Known reset types and the other strings, from an array of strings.
void read_reset_types(const json& values, const std::string& path, std::vector<ResetType>& known,
                      std::vector<std::string>* other) {
  const auto& list = array_at(values, path);
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto text = string_at(list[i], index_path(path, i));
    if (auto type = reset_type_from_string(text)) {
      known.push_back(*type);
    } else if (other) {
      other->push_back(text);
    }
  }
}

std::string sanitized(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  return out;
}

}  // namespace

std::string_view to_string(ResetType type) {
  for (const auto& [t, name] : kResetTypeNames) {
    if (t == type) return name;
  }
  return "?";
}

std::optional<ResetType> reset_type_from_string(std::string_view text) {
  for (const auto& [t, name] : kResetTypeNames) {
    if (name == text) return t;
  }
  return std::nullopt;
}

std::string_view to_string(PowerState state) {
  for (const auto& [s, name] : kPowerStateNames) {
    if (s == state) return name;
  }
  return "?";
}

std::optional<PowerState> power_state_from_string(std::string_view text) {
  for (const auto& [s, name] : kPowerStateNames) {
    if (name == text) return s;
  }
  return std::nullopt;
}

bool is_valid_system_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxRedfishStringBytes || id == "." || id == "..") return false;
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '~';
    if (!ok) return false;
  }
  return true;
}

ComputerSystem parse_computer_system(std::string_view body) {
  json root = parse_body(body);
  ComputerSystem out;
  const json* id = member(root, "Id");
  if (!id) fail("Id", "missing");
  out.id = string_at(*id, "Id");
  if (const json* state = member(root, "PowerState")) {
    auto text = string_at(*state, "PowerState");
    out.power_state = power_state_from_string(text);
    if (!out.power_state)
      fail("PowerState", "\"" + sanitized(text) + "\" is not a Redfish power state");
  }
  const json* actions = member(root, "Actions");
  if (!actions) return out;
  object_at(*actions, "Actions");
  const std::string action_path = key_path("Actions", "#ComputerSystem.Reset");
  const json* reset = member(*actions, "#ComputerSystem.Reset");
  if (!reset) return out;
  object_at(*reset, action_path);
  ResetAction action;
  const json* target = member(*reset, "target");
  if (!target) fail(key_path(action_path, "target"), "missing");
  action.target = bmc_path_at(*target, key_path(action_path, "target"));
  if (const json* values = member(*reset, "ResetType@Redfish.AllowableValues")) {
    action.allowable.emplace();
    read_reset_types(*values, key_path(action_path, "ResetType@Redfish.AllowableValues"),
                     *action.allowable, &action.other_allowable);
  }
  if (const json* info = member(*reset, "@Redfish.ActionInfo")) {
    action.action_info = bmc_path_at(*info, key_path(action_path, "@Redfish.ActionInfo"));
  }
  out.reset = std::move(action);
  return out;
}

std::vector<std::string> parse_system_collection(std::string_view body) {
  json root = parse_body(body);
  const json* members = member(root, "Members");
  if (!members) fail("Members", "missing");
  const auto& list = array_at(*members, "Members");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto path = index_path("Members", i);
    object_at(list[i], path);
    const json* link = member(list[i], "@odata.id");
    if (!link) fail(key_path(path, "@odata.id"), "missing");
    out.push_back(bmc_path_at(*link, key_path(path, "@odata.id")));
  }
  return out;
}

std::optional<std::vector<ResetType>> parse_reset_action_info(std::string_view body) {
  json root = parse_body(body);
  const json* parameters = member(root, "Parameters");
  if (!parameters) fail("Parameters", "missing");
  const auto& list = array_at(*parameters, "Parameters");
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto path = index_path("Parameters", i);
    object_at(list[i], path);
    const json* name = member(list[i], "Name");
    if (!name) fail(key_path(path, "Name"), "missing");
    if (string_at(*name, key_path(path, "Name")) != "ResetType") continue;
    const json* values = member(list[i], "AllowableValues");
    if (!values) return std::nullopt;
    std::vector<ResetType> known;
    read_reset_types(*values, key_path(path, "AllowableValues"), known, nullptr);
    return known;
  }
  fail("Parameters", "no parameter named ResetType");
}

std::string redfish_error_sentence(std::string_view body) {
  json root = parse_body(body);
  const json* error = member(root, "error");
  if (!error) fail("error", "missing");
  object_at(*error, "error");
  const json* code = member(*error, "code");
  if (!code) fail("error.code", "missing");
  const json* message = member(*error, "message");
  if (!message) fail("error.message", "missing");
  std::string code_text = string_at(*code, "error.code");
  std::string message_text = string_at(*message, "error.message");
  std::string sentence = sanitized(message_text) + " (" + sanitized(code_text) + ")";
  const std::string info_path = key_path("error", "@Message.ExtendedInfo");
  if (const json* infos = member(*error, "@Message.ExtendedInfo")) {
    const auto& list = array_at(*infos, info_path);
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto path = index_path(info_path, i);
      object_at(list[i], path);
      std::string id_text;
      std::string text;
      if (const json* id = member(list[i], "MessageId"))
        id_text = string_at(*id, key_path(path, "MessageId"));
      if (const json* m = member(list[i], "Message"))
        text = string_at(*m, key_path(path, "Message"));
      // The usual body repeats its one message as the first extended one: say it once.
      if (text.empty() || (text == message_text && (id_text.empty() || id_text == code_text))) {
        continue;
      }
      sentence += "; " + sanitized(text);
      if (!id_text.empty()) sentence += " (" + sanitized(id_text) + ")";
    }
  }
  return sentence;
}

}  // namespace gpurent::bmc
