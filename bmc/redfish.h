// The Redfish shapes a power action needs (DMTF ComputerSystem, its collection, ActionInfo and
// the error body), read strictly from a BMC's untrusted JSON. Pure: no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::bmc {

inline constexpr std::size_t kMaxRedfishBodyBytes = 1024 * 1024;
inline constexpr std::size_t kMaxRedfishStringBytes = 256;
inline constexpr std::size_t kMaxRedfishListItems = 64;
// Deeper JSON than this is refused before it is parsed (the parser recurses per level).
inline constexpr std::size_t kMaxRedfishNesting = 64;

// A body that is not the Redfish shape asked for; what() names the JSON path
// (`Actions["#ComputerSystem.Reset"].target`) and is printable ASCII.
class RedfishError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ComputerSystem.ResetType (Resource.ResetType in the DMTF schema).
enum class ResetType {
  kOn,
  kForceOff,
  kGracefulShutdown,
  kGracefulRestart,
  kForceRestart,
  kNmi,
  kForceOn,
  kPushPowerButton,
  kPowerCycle,
};
inline constexpr ResetType kAllResetTypes[] = {
    ResetType::kOn,
    ResetType::kForceOff,
    ResetType::kGracefulShutdown,
    ResetType::kGracefulRestart,
    ResetType::kForceRestart,
    ResetType::kNmi,
    ResetType::kForceOn,
    ResetType::kPushPowerButton,
    ResetType::kPowerCycle,
};

// "On", "ForceOff", …: the DMTF strings, exactly (case-sensitive, as services compare them).
std::string_view to_string(ResetType type);
std::optional<ResetType> reset_type_from_string(std::string_view text);

enum class PowerState { kOn, kOff, kPoweringOn, kPoweringOff, kPaused };
std::string_view to_string(PowerState state);
std::optional<PowerState> power_state_from_string(std::string_view text);

// Actions."#ComputerSystem.Reset" of a system.
struct ResetAction {
  std::string target;  // a path on the BMC ("/redfish/v1/Systems/1/Actions/ComputerSystem.Reset")
  // ResetType@Redfish.AllowableValues; absent when the resource does not list them (bmcweb
  // lists them in the ActionInfo resource instead).
  std::optional<std::vector<ResetType>> allowable;
  // Values the service listed that are not ResetTypes this client knows ("Suspend",
  // "FullPowerCycle").
  std::vector<std::string> other_allowable;
  std::optional<std::string> action_info;  // @Redfish.ActionInfo: a path to ActionInfo

  bool operator==(const ResetAction&) const = default;
};

struct ComputerSystem {
  std::string id;
  std::optional<PowerState> power_state;  // absent when the service does not report it
  std::optional<ResetAction> reset;       // absent when the system has no reset action

  bool operator==(const ComputerSystem&) const = default;
};

// GET /redfish/v1/Systems/{id}. Throws RedfishError on anything malformed.
ComputerSystem parse_computer_system(std::string_view body);

// GET /redfish/v1/Systems: each member's "@odata.id" (a path), in order.
std::vector<std::string> parse_system_collection(std::string_view body);

// GET of an @Redfish.ActionInfo path: the AllowableValues of its "ResetType" parameter (known
// types only; unknown strings are skipped), or nullopt when the parameter lists none.
std::optional<std::vector<ResetType>> parse_reset_action_info(std::string_view body);

// A Redfish error body ({"error": {"code", "message", "@Message.ExtendedInfo": [...]}}) as one
// sentence: the message, its code, and each extended message that says something more.
// Printable ASCII. Throws RedfishError when the body is not that shape.
std::string redfish_error_sentence(std::string_view body);

// True for a system id that may stand in a path segment as is (letters, digits, "._-~").
bool is_valid_system_id(std::string_view id);

}  // namespace gpurent::bmc
