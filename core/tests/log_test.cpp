// Tests logging: JSON lines stamped with the request id, the text format, and escaping.
#include "core/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>
#include <thread>

namespace gpurent::log {
namespace log_test {

using testing::HasSubstr;
using testing::Not;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string escaped(std::string_view s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

class LogTest : public testing::Test {
 protected:
  // Leaves a plain logger behind so later tests' output is not JSON-captured by accident.
  void TearDown() override { init(LogFormat::kText, "info"); }
};

TEST_F(LogTest, JsonLinesCarryTheRequestId) {
  init(LogFormat::kJson, "info");
  testing::internal::CaptureStderr();
  {
    RequestScope scope("req_abc123");
    spdlog::info("rental {} started", "rnt_1");
  }
  spdlog::warn("outside any request");
  std::string out = testing::internal::GetCapturedStderr();

  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  auto first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first.at("request_id"), "req_abc123");
  EXPECT_EQ(first.at("msg"), "rental rnt_1 started");
  EXPECT_EQ(first.at("level"), "info");
  EXPECT_TRUE(std::regex_match(first.at("ts").get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << first.at("ts");

  auto second = nlohmann::json::parse(lines[1]);
  EXPECT_FALSE(second.contains("request_id"));
  EXPECT_EQ(second.at("level"), "warning");
  EXPECT_EQ(second.at("msg"), "outside any request");
}

TEST_F(LogTest, JsonLinesStayValidWithHostileText) {
  init(LogFormat::kJson, "info");
  std::string nasty = "quote\" backslash\\ newline\n cr\r tab\t bell\x07 esc\x1b end";
  testing::internal::CaptureStderr();
  {
    RequestScope scope("id\"with\\odd\nchars");
    spdlog::error("{}", nasty);
  }
  std::string out = testing::internal::GetCapturedStderr();
  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 1u) << out;  // the newline in the message did not split the line
  auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j.at("msg"), nasty);
  EXPECT_EQ(j.at("request_id"), "id\"with\\odd\nchars");
}

TEST_F(LogTest, LevelFiltersLines) {
  init(LogFormat::kJson, "warn");
  testing::internal::CaptureStderr();
  spdlog::info("dropped");
  spdlog::debug("dropped too");
  spdlog::warn("kept");
  std::string out = testing::internal::GetCapturedStderr();
  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_EQ(nlohmann::json::parse(lines[0]).at("msg"), "kept");
}

TEST_F(LogTest, TextFormatShowsTheRequestId) {
  init(LogFormat::kText, "info");
  testing::internal::CaptureStderr();
  {
    RequestScope scope("req_text1");
    spdlog::info("inside");
  }
  spdlog::info("outside");
  std::string out = testing::internal::GetCapturedStderr();
  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_THAT(lines[0], HasSubstr("[req_text1] inside"));
  EXPECT_THAT(lines[1], HasSubstr("[-] outside"));
  EXPECT_THAT(lines[0], Not(HasSubstr("{\"")));
}

TEST(RequestScope, SetsAndRestoresTheThreadsRequestId) {
  EXPECT_EQ(current_request_id(), "");
  {
    RequestScope outer("req_outer");
    EXPECT_EQ(current_request_id(), "req_outer");
    {
      RequestScope inner("req_inner");
      EXPECT_EQ(current_request_id(), "req_inner");
    }
    EXPECT_EQ(current_request_id(), "req_outer");
  }
  EXPECT_EQ(current_request_id(), "");
}

TEST(RequestScope, IsPerThread) {
  RequestScope scope("req_main");
  std::string seen_in_other = "unset";
  std::thread other([&] {
    seen_in_other = std::string(current_request_id());
    RequestScope theirs("req_other");
  });
  other.join();
  EXPECT_EQ(seen_in_other, "");
  EXPECT_EQ(current_request_id(), "req_main");
}

TEST(AppendJsonEscaped, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(escaped("plain text"), "plain text");
  EXPECT_EQ(escaped("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(escaped("C:\\dir"), "C:\\\\dir");
  EXPECT_EQ(escaped("a\nb"), "a\\nb");
  EXPECT_EQ(escaped("a\rb"), "a\\rb");
  EXPECT_EQ(escaped("a\tb"), "a\\tb");
  EXPECT_EQ(escaped(std::string_view("\0", 1)), "\\u0000");
  EXPECT_EQ(escaped("\x01\x1f"), "\\u0001\\u001f");
  EXPECT_EQ(escaped("\x7f"), "\\u007f") << "DEL is escaped too, keeping log lines printable";
  EXPECT_EQ(escaped("\xD0\xB6"), "\xD0\xB6");  // UTF-8 passes through
  EXPECT_EQ(escaped(""), "");
}

TEST(AppendJsonEscaped, Appends) {
  std::string out = "prefix:";
  append_json_escaped(out, "\"x\"");
  EXPECT_EQ(out, "prefix:\\\"x\\\"");
}

TEST(AppendJsonEscaped, EveryAsciiByteRoundTripsThroughAJsonParser) {
  std::string all;
  for (int c = 0; c < 128; ++c) all.push_back(static_cast<char>(c));
  std::string doc = "\"" + escaped(all) + "\"";
  EXPECT_EQ(nlohmann::json::parse(doc).get<std::string>(), all);
}

TEST(AppendJsonEscaped, KeepsValidUtf8AndReplacesInvalidBytes) {
  std::string valid = "Привет, GPU 🚀";
  EXPECT_EQ(nlohmann::json::parse("\"" + escaped(valid) + "\"").get<std::string>(), valid);
  // A lone continuation byte, a truncated sequence, an overlong form and a surrogate.
  for (std::string bad :
       {std::string("a\x80"
                    "b"),
        std::string("a\xe2\x82"), std::string("\xc0\xaf"), std::string("\xed\xa0\x80")}) {
    std::string doc = "\"" + escaped(bad) + "\"";
    EXPECT_NO_THROW(nlohmann::json::parse(doc)) << doc;
    EXPECT_NE(doc.find("\\ufffd"), std::string::npos) << doc;
  }
}

}  // namespace log_test
}  // namespace gpurent::log
