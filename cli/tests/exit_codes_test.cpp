// Exit codes for API answers: every row of the contract's error table has its code.
#include "cli/exit_codes.h"

#include <gtest/gtest.h>

namespace gpurent::cli::exit_codes_test {

TEST(CliExitCodes, EachContractErrorHasItsDocumentedCode) {
  struct Case {
    int status;
    const char* code;
    int exit;
  };
  const Case cases[] = {
      {200, "", 0},
      {201, "", 0},
      {204, "", 0},
      {400, "invalid_request", 1},
      {400, "invalid_json", 1},
      {401, "unauthenticated", 3},
      {402, "insufficient_funds", 5},
      {403, "forbidden", 3},
      {404, "not_found", 7},
      {409, "insufficient_capacity", 4},
      {409, "invalid_state", 1},
      {409, "conflict", 1},
      {413, "payload_too_large", 1},
      {422, "incompatible_image", 1},
      {422, "idempotency_key_reused", 1},
      {422, "quota_exceeded", 1},
      {429, "rate_limited", 1},
      {500, "internal", 8},
      {502, "", 8},
      {503, "unavailable", 8},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(exit_code_for(c.status, c.code), c.exit) << c.status << " " << c.code;
  }
  // The values are a contract with scripts: they never move.
  EXPECT_EQ(kExitUsage, 2);
  EXPECT_EQ(kExitTimeout, 6);
  EXPECT_EQ(kExitServer, 8);
  EXPECT_EQ(kExitUnhealthy, 9);
}

TEST(CliExitCodes, TheHelpListsEveryCode) {
  std::string help = exit_code_help();
  for (int code = 0; code <= 9; ++code) {
    EXPECT_NE(help.find("  " + std::to_string(code) + "  "), std::string::npos) << code;
  }
}

}  // namespace gpurent::cli::exit_codes_test
