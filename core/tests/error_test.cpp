// Tests gpurent::Error: wire names of codes, the JSON form and invalid_field.
#include "core/error.h"

#include <gtest/gtest.h>

#include <set>

namespace gpurent {
namespace error_test {

constexpr ErrorCode kAllCodes[] = {
    ErrorCode::kInvalidRequest,
    ErrorCode::kInvalidJson,
    ErrorCode::kUnauthenticated,
    ErrorCode::kInsufficientFunds,
    ErrorCode::kForbidden,
    ErrorCode::kNotFound,
    ErrorCode::kMethodNotAllowed,
    ErrorCode::kInsufficientCapacity,
    ErrorCode::kInvalidState,
    ErrorCode::kConflict,
    ErrorCode::kPayloadTooLarge,
    ErrorCode::kIncompatibleImage,
    ErrorCode::kIdempotencyKeyReused,
    ErrorCode::kQuotaExceeded,
    ErrorCode::kRateLimited,
    ErrorCode::kUnavailable,
    ErrorCode::kInternal,
};

TEST(ErrorCodeName, ContractNames) {
  EXPECT_EQ(error_code_name(ErrorCode::kInvalidRequest), "invalid_request");
  EXPECT_EQ(error_code_name(ErrorCode::kInvalidJson), "invalid_json");
  EXPECT_EQ(error_code_name(ErrorCode::kUnauthenticated), "unauthenticated");
  EXPECT_EQ(error_code_name(ErrorCode::kInsufficientFunds), "insufficient_funds");
  EXPECT_EQ(error_code_name(ErrorCode::kForbidden), "forbidden");
  EXPECT_EQ(error_code_name(ErrorCode::kNotFound), "not_found");
  EXPECT_EQ(error_code_name(ErrorCode::kMethodNotAllowed), "method_not_allowed");
  EXPECT_EQ(error_code_name(ErrorCode::kInsufficientCapacity), "insufficient_capacity");
  EXPECT_EQ(error_code_name(ErrorCode::kInvalidState), "invalid_state");
  EXPECT_EQ(error_code_name(ErrorCode::kConflict), "conflict");
  EXPECT_EQ(error_code_name(ErrorCode::kPayloadTooLarge), "payload_too_large");
  EXPECT_EQ(error_code_name(ErrorCode::kIncompatibleImage), "incompatible_image");
  EXPECT_EQ(error_code_name(ErrorCode::kIdempotencyKeyReused), "idempotency_key_reused");
  EXPECT_EQ(error_code_name(ErrorCode::kQuotaExceeded), "quota_exceeded");
  EXPECT_EQ(error_code_name(ErrorCode::kRateLimited), "rate_limited");
  EXPECT_EQ(error_code_name(ErrorCode::kUnavailable), "unavailable");
  EXPECT_EQ(error_code_name(ErrorCode::kInternal), "internal");
}

TEST(ErrorCodeName, DistinctSnakeCase) {
  std::set<std::string_view> names;
  for (auto code : kAllCodes) {
    auto name = error_code_name(code);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string_view::npos)
        << name;
  }
}

TEST(Error, CarriesCodeMessageAndDetails) {
  Error e(ErrorCode::kInsufficientFunds, "Not enough money.",
          {{"required", 100}, {"available", 5}});
  EXPECT_EQ(e.code(), ErrorCode::kInsufficientFunds);
  EXPECT_STREQ(e.what(), "Not enough money.");
  EXPECT_EQ(e.details()["required"], 100);
  EXPECT_EQ(e.details()["available"], 5);
}

TEST(Error, DefaultDetailsAreAnEmptyObject) {
  Error e(ErrorCode::kNotFound, "No such rental.");
  EXPECT_TRUE(e.details().is_object());
  EXPECT_TRUE(e.details().empty());
}

TEST(Error, ToJsonHasTheContractShape) {
  Error e(ErrorCode::kConflict, "Busy.", {{"retry", true}});
  nlohmann::json j = e.to_json();
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j.size(), 1u);
  const auto& err = j.at("error");
  ASSERT_EQ(err.size(), 3u);
  EXPECT_EQ(err.at("code"), "conflict");
  EXPECT_EQ(err.at("message"), "Busy.");
  EXPECT_EQ(err.at("details"), nlohmann::json({{"retry", true}}));
}

TEST(Error, ToJsonKeepsEmptyDetailsAsObject) {
  nlohmann::json j = Error(ErrorCode::kInternal, "Oops.").to_json();
  EXPECT_TRUE(j["error"]["details"].is_object());
}

TEST(Error, InvalidFieldNamesTheField) {
  Error e = Error::invalid_field("gpu_count", "must be between 1 and 8");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(e.details()["field"], "gpu_count");
  EXPECT_EQ(e.details()["reason"], "must be between 1 and 8");
  EXPECT_STREQ(e.what(), "Field 'gpu_count' must be between 1 and 8.");
}

TEST(Error, IsARuntimeError) {
  try {
    throw Error(ErrorCode::kForbidden, "No.");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "No.");
  }
}

TEST(ConfigError, IsARuntimeError) {
  try {
    throw ConfigError("config x: bad");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "config x: bad");
  }
}

}  // namespace error_test
}  // namespace gpurent
