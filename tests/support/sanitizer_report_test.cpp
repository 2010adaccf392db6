// find_sanitizer_report on real reports (fixtures/sanitizer/README.md says where each came
// from) and on clean logs, including JSON log lines that quote the runtimes' words.
#include "tests/support/sanitizer_report.h"

#include "tests/support/paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpurent::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string fixture(const std::string& name) {
  std::ifstream in(source_dir() + "/tests/support/fixtures/sanitizer/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A few of the JSON lines gpurentd writes before a report, so reports are found amid them.
const std::string kServerLines =
    R"({"ts":"2026-11-30T12:00:00.000Z","level":"info","msg":"gpurentd 0.1.0 listening on http://127.0.0.1:40123"})"
    "\n"
    R"({"ts":"2026-11-30T12:00:01.000Z","level":"info","msg":"GET /healthz 200","request_id":"req_1"})"
    "\n";

struct Case {
  const char* file;
  const char* first_line;  // where the report starts
  const char* must_hold;   // a line of its body
};

class RealReport : public ::testing::TestWithParam<Case> {};

TEST_P(RealReport, IsFoundWholeFromItsFirstLineToItsSummary) {
  const Case& c = GetParam();
  std::string raw = fixture(c.file);
  ASSERT_FALSE(raw.empty());
  for (const std::string& log : {raw, kServerLines + raw + kServerLines}) {
    std::string report = find_sanitizer_report(log);
    EXPECT_THAT(report, StartsWith(c.first_line));
    EXPECT_THAT(report, HasSubstr(c.must_hold));
    EXPECT_THAT(report, ::testing::Not(HasSubstr("\"level\"")))
        << "the server's own lines after the report are not part of it";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sanitizers, RealReport,
    ::testing::Values(
        Case{"lsan_direct_leak.txt", "==", "Direct leak of 4242 byte(s) in 1 object(s)"},
        Case{"asan_heap_use_after_free.txt", "==", "ERROR: AddressSanitizer: heap-use-after-free"},
        Case{"ubsan_signed_overflow.txt",
             "ubsan.cpp:4:60: runtime error: ", "signed integer overflow"},
        Case{"gpurentd_leak.txt", "==", "leak_on_purpose"}),
    [](const auto& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(SanitizerReport, LeakReportEndsAtItsSummary) {
  std::string report = find_sanitizer_report(fixture("lsan_direct_leak.txt") + kServerLines);
  EXPECT_THAT(report,
              EndsWith("SUMMARY: AddressSanitizer: 4242 byte(s) leaked in 1 allocation(s).\n"));
}

TEST(SanitizerReport, CleanLogsHaveNone) {
  EXPECT_EQ(find_sanitizer_report(""), "");
  EXPECT_EQ(find_sanitizer_report(kServerLines), "");
  EXPECT_EQ(find_sanitizer_report("no newline at the end"), "");
}

TEST(SanitizerReport, JsonLinesQuotingTheWordsAreNotReports) {
  // A hostile request target is logged verbatim inside a JSON string.
  std::string log = kServerLines +
                    R"({"level":"info","msg":"GET /v1/x==1==ERROR: AddressSanitizer: 404"})"
                    "\n" +
                    R"({"level":"info","msg":"a.cpp:1:2: runtime error: quoted"})"
                    "\n" +
                    R"({"level":"info","msg":"SUMMARY: AddressSanitizer quoted"})"
                    "\n" +
                    "prefix ==12==ERROR: LeakSanitizer: not at the line start\n";
  EXPECT_EQ(find_sanitizer_report(log), "");
}

TEST(SanitizerReport, EachKindOfFirstLineIsRecognisedAlone) {
  EXPECT_NE(find_sanitizer_report("==7==ERROR: LeakSanitizer: detected memory leaks\n"), "");
  EXPECT_NE(find_sanitizer_report("==7==ERROR: AddressSanitizer: SEGV on unknown address\n"), "");
  EXPECT_NE(find_sanitizer_report("SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior x\n"),
            "");
  EXPECT_NE(find_sanitizer_report("/src/api/wire.cpp:10:5: runtime error: load of value 7\n"), "");
  EXPECT_EQ(find_sanitizer_report("==x==ERROR: AddressSanitizer\n"), "") << "no pid";
}

}  // namespace
}  // namespace gpurent::testing
