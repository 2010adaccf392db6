// Opaque prefixed identifiers (`org_…`, `rnt_…`): random, URL-safe, typed by prefix.
#pragma once

#include <string>
#include <string_view>

namespace gpurent {

// The prefixes of the contract (API.md "Conventions") and internal ones.
namespace id_prefix {
inline constexpr std::string_view kOrg = "org";
inline constexpr std::string_view kUser = "usr";
inline constexpr std::string_view kRental = "rnt";
inline constexpr std::string_view kNode = "nod";
inline constexpr std::string_view kImage = "img";
inline constexpr std::string_view kSshKey = "key";
inline constexpr std::string_view kToken = "tok";
inline constexpr std::string_view kInvoice = "inv";
inline constexpr std::string_view kSite = "sit";
inline constexpr std::string_view kRequest = "req";
inline constexpr std::string_view kTask = "tsk";         // agent tasks
inline constexpr std::string_view kMaintenance = "mnt";  // maintenance windows
inline constexpr std::string_view kNotice = "ntc";       // rental notices
inline constexpr std::string_view kHandover = "hnd";     // a running rental handed over again
}  // namespace id_prefix

// A new id: prefix, '_', then 22 base62 characters (128 random bits).
std::string new_id(std::string_view prefix);

// True when `id` has the given prefix followed by a well-formed random part.
bool is_valid_id(std::string_view prefix, std::string_view id);

// A request id for logs and X-Request-Id: cheap (no syscall), unique enough to trace.
std::string new_request_id();

// Accepts a client-supplied request id only if short and made of safe characters.
bool is_acceptable_request_id(std::string_view id);

}  // namespace gpurent
