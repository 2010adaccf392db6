// Tests the UTF-8 validator against the well-formedness table of RFC 3629 and the Unicode
// standard's ill-formed sequences, and printable_name's escaping and cutting.
#include "api/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gpurent::http {
namespace utf8_test {

using Case = std::pair<std::string, std::string>;  // label, bytes

std::vector<Case> well_formed() {
  return {
      {"empty", ""},
      {"ASCII", "gpu_model=H100"},
      {"every ASCII byte but NUL",
       [] {
         std::string s;
         for (int c = 1; c < 0x80; ++c) s.push_back(static_cast<char>(c));
         return s;
       }()},
      {"U+0080, the first two-byte", "\xC2\x80"},
      {"U+07FF, the last two-byte", "\xDF\xBF"},
      {"U+0800, the first three-byte", "\xE0\xA0\x80"},
      {"U+D7FF, just below the surrogates", "\xED\x9F\xBF"},
      {"U+E000, just above the surrogates", "\xEE\x80\x80"},
      {"U+FFFD", "\xEF\xBF\xBD"},
      {"U+FFFF", "\xEF\xBF\xBF"},
      {"U+10000, the first four-byte", "\xF0\x90\x80\x80"},
      {"U+10FFFF, the last code point", "\xF4\x8F\xBF\xBF"},
      {"Cyrillic", "\xD1\x84\xD0\xB5\xD1\x80\xD0\xBC\xD0\xB0"},
      {"emoji", "\xF0\x9F\x9A\x80"},
      {"right-to-left override", "\xE2\x80\xAE"},
      {"NUL is a valid code point", std::string("a\0b", 3)},
  };
}

std::vector<Case> ill_formed() {
  return {
      {"a lone continuation byte", "\x80"},
      {"a continuation byte after ASCII", "a\xBF"},
      {"C0: overlong NUL", "\xC0\x80"},
      {"C1: overlong DEL", "\xC1\xBF"},
      {"E0: overlong slash", "\xE0\x80\xAF"},
      {"E0: overlong U+07FF", "\xE0\x9F\xBF"},
      {"F0: overlong U+FFFF", "\xF0\x8F\xBF\xBF"},
      {"ED A0 80: high surrogate U+D800", "\xED\xA0\x80"},
      {"ED AD BF: U+DB7F", "\xED\xAD\xBF"},
      {"ED B0 80: low surrogate U+DC00", "\xED\xB0\x80"},
      {"ED BF BF: U+DFFF", "\xED\xBF\xBF"},
      {"a surrogate pair in CESU-8", "\xED\xA0\xBD\xED\xB8\x80"},
      {"F4 90: past U+10FFFF", "\xF4\x90\x80\x80"},
      {"F5: past U+10FFFF", "\xF5\x80\x80\x80"},
      {"FE", "\xFE"},
      {"FF", "\xFF"},
      {"a cut-off two-byte", "\xC3"},
      {"a cut-off three-byte", "\xE2\x82"},
      {"a cut-off four-byte", "\xF0\x9F\x9A"},
      {"a two-byte start followed by ASCII", "\xC3("},
      {"a three-byte start followed by ASCII", "\xE2(\xA1"},
      {"five-byte form", "\xF8\x88\x80\x80\x80"},
      {"six-byte form", "\xFC\x84\x80\x80\x80\x80"},
      {"valid text then a bad byte", "ok \xD0\xB6 \xFF"},
  };
}

TEST(Utf8, AcceptsWellFormedText) {
  for (const auto& [label, bytes] : well_formed()) {
    EXPECT_TRUE(is_valid_utf8(bytes)) << label;
  }
}

TEST(Utf8, RefusesIllFormedText) {
  for (const auto& [label, bytes] : ill_formed()) {
    EXPECT_FALSE(is_valid_utf8(bytes)) << label;
    // Inside valid text as well.
    EXPECT_FALSE(is_valid_utf8("abc" + bytes + "xyz")) << label << " (embedded)";
  }
}

TEST(Utf8, ValidatorStaysFailedAfterABadByte) {
  Utf8Validator v;
  EXPECT_TRUE(v.feed('a'));
  EXPECT_FALSE(v.feed(0xFF));
  EXPECT_FALSE(v.feed('a'));
  EXPECT_FALSE(v.complete());
}

TEST(Utf8, ValidatorIsIncompleteMidSequence) {
  Utf8Validator v;
  EXPECT_TRUE(v.feed(0xE2));
  EXPECT_FALSE(v.complete());
  EXPECT_TRUE(v.feed(0x82));
  EXPECT_FALSE(v.complete());
  EXPECT_TRUE(v.feed(0xAC));
  EXPECT_TRUE(v.complete());
}

TEST(Utf8, EveryLeadByteAgainstEveryContinuation) {
  // Two-byte sequences: lead C2..DF takes any 80..BF; every other lead fails or waits.
  for (int lead = 0x80; lead <= 0xFF; ++lead) {
    for (int next = 0x80; next <= 0xBF; ++next) {
      std::string s{static_cast<char>(lead), static_cast<char>(next)};
      EXPECT_EQ(is_valid_utf8(s), lead >= 0xC2 && lead <= 0xDF) << std::hex << lead << " " << next;
    }
  }
}

TEST(Utf8, SequenceLength) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("x\xD0\xB6", 1), 2u);
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x9A\x80", 0), 4u);
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x9A", 0), 0u);
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);
  EXPECT_EQ(utf8_sequence_length("", 0), 0u);
}

TEST(PrintableName, Table) {
  struct Row {
    std::string raw;
    std::size_t max;
    std::string printed;
  };
  std::vector<Row> rows = {
      {"limit", 64, "limit"},
      {"\xD0\xBB\xD0\xB8\xD0\xBC\xD0\xB8\xD1\x82", 64, "\xD0\xBB\xD0\xB8\xD0\xBC\xD0\xB8\xD1\x82"},
      {"\xED\xA0\x80", 64, "%ED%A0%80"},
      {"a\xFF", 64, "a%FF"},
      {std::string("a\0b", 3), 64, "a%00b"},
      {"tab\there", 64, "tab%09here"},
      {"\x7F", 64, "%7F"},
      {"abcdef", 4, "abcd"},
      // Never cut inside a character or an escape.
      {"ab\xD0\xB6", 3, "ab"},
      {"ab\xFF", 4, "ab"},
      {"ab\xFF", 5, "ab%FF"},
      {std::string(100, 'x'), 64, std::string(64, 'x')},
  };
  for (const auto& r : rows) {
    std::string printed = printable_name(r.raw, r.max);
    EXPECT_EQ(printed, r.printed) << r.raw;
    EXPECT_TRUE(is_valid_utf8(printed)) << r.raw;
    EXPECT_LE(printed.size(), r.max) << r.raw;
  }
}

}  // namespace utf8_test
}  // namespace gpurent::http
