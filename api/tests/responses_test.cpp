// Tests the error code → status table (API.md "Conventions") and the error body shape.
#include "api/responses.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpurent::http {
namespace responses_test {

using nlohmann::json;

TEST(StatusFor, FollowsTheContractTable) {
  const std::pair<ErrorCode, int> table[] = {
      {ErrorCode::kInvalidRequest, 400},
      {ErrorCode::kInvalidJson, 400},
      {ErrorCode::kUnauthenticated, 401},
      {ErrorCode::kInsufficientFunds, 402},
      {ErrorCode::kForbidden, 403},
      {ErrorCode::kNotFound, 404},
      {ErrorCode::kMethodNotAllowed, 405},
      {ErrorCode::kInsufficientCapacity, 409},
      {ErrorCode::kInvalidState, 409},
      {ErrorCode::kConflict, 409},
      {ErrorCode::kPayloadTooLarge, 413},
      {ErrorCode::kIncompatibleImage, 422},
      {ErrorCode::kIdempotencyKeyReused, 422},
      {ErrorCode::kQuotaExceeded, 422},
      {ErrorCode::kRateLimited, 429},
      {ErrorCode::kUnavailable, 503},
      {ErrorCode::kInternal, 500},
  };
  for (const auto& [code, status] : table) {
    EXPECT_EQ(status_for(code), status) << error_code_name(code);
  }
}

TEST(ErrorResponse, BodyHasTheContractShape) {
  Error e(ErrorCode::kInsufficientFunds, "Top up your balance.",
          {{"required", {{"amount_minor", 100}, {"currency", "RUB"}}}});
  Response r = error_response(e);
  EXPECT_EQ(r.status, 402);
  EXPECT_EQ(r.content_type, "application/json");
  json body = json::parse(r.body_view());
  ASSERT_EQ(body.size(), 1u);
  const auto& err = body.at("error");
  ASSERT_EQ(err.size(), 3u);
  EXPECT_EQ(err.at("code"), "insufficient_funds");
  EXPECT_EQ(err.at("message"), "Top up your balance.");
  EXPECT_EQ(err.at("details")["required"]["amount_minor"], 100);
}

TEST(ErrorResponse, InvalidFieldDetails) {
  Response r = error_response(Error::invalid_field("gpu_count", "must be between 1 and 8"));
  EXPECT_EQ(r.status, 400);
  json body = json::parse(r.body_view());
  EXPECT_EQ(body["error"]["code"], "invalid_request");
  EXPECT_EQ(body["error"]["details"]["field"], "gpu_count");
  EXPECT_EQ(body["error"]["details"]["reason"], "must be between 1 and 8");
}

TEST(ErrorResponse, FromCodeAndMessageHasEmptyDetailsObject) {
  Response r = error_response(ErrorCode::kNotFound, "No such rental.");
  EXPECT_EQ(r.status, 404);
  json body = json::parse(r.body_view());
  EXPECT_EQ(body["error"]["code"], "not_found");
  EXPECT_EQ(body["error"]["message"], "No such rental.");
  ASSERT_TRUE(body["error"]["details"].is_object());
  EXPECT_TRUE(body["error"]["details"].empty());
}

TEST(ErrorResponse, EveryCodeGivesAnErrorStatusAndItsName) {
  for (int i = 0; i <= static_cast<int>(ErrorCode::kInternal); ++i) {
    auto code = static_cast<ErrorCode>(i);
    Response r = error_response(code, "m");
    EXPECT_GE(r.status, 400);
    EXPECT_LT(r.status, 600);
    EXPECT_EQ(json::parse(r.body_view())["error"]["code"], error_code_name(code));
  }
}

TEST(ErrorResponse, MessageIsJsonEscaped) {
  Response r = error_response(ErrorCode::kInvalidRequest, "Bad \"name\"\n<script>");
  EXPECT_EQ(json::parse(r.body_view())["error"]["message"], "Bad \"name\"\n<script>");
}

TEST(JsonResponse, StatusAndBody) {
  Response r = json_response(201, {{"id", "rnt_1"}, {"gpu_count", 8}});
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(json::parse(r.body_view()), json({{"id", "rnt_1"}, {"gpu_count", 8}}));
  EXPECT_FALSE(r.close);
}

}  // namespace responses_test
}  // namespace gpurent::http
