// Tests prefixed ids and request ids: shape, alphabet, uniqueness and validation.
#include "core/id.h"

#include <gtest/gtest.h>

#include <latch>
#include <map>
#include <string>
#include <thread>
#include <unordered_set>

namespace gpurent {
namespace id_test {

constexpr std::string_view kBase62 =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

bool all_base62(std::string_view s) {
  return s.find_first_not_of(kBase62) == std::string_view::npos;
}

TEST(NewId, HasPrefixUnderscoreAnd22Base62Characters) {
  for (auto prefix : {id_prefix::kOrg, id_prefix::kRental, id_prefix::kToken, id_prefix::kSite}) {
    std::string id = new_id(prefix);
    ASSERT_EQ(id.size(), prefix.size() + 1 + 22) << id;
    EXPECT_EQ(id.substr(0, prefix.size()), prefix);
    EXPECT_EQ(id[prefix.size()], '_');
    EXPECT_TRUE(all_base62(id.substr(prefix.size() + 1))) << id;
    EXPECT_TRUE(is_valid_id(prefix, id)) << id;
  }
}

TEST(NewId, UniqueOverManyIds) {
  std::unordered_set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(seen.insert(new_id(id_prefix::kRental)).second) << "duplicate after " << i;
  }
}

TEST(NewId, CharactersAreUniform) {
  // 220,000 characters: each of the 62 should appear about 3548 times (sd ~59). Taking
  // byte % 62 without rejection would make '0'..'7' about 21% more common.
  std::map<char, int> counts;
  constexpr int kIds = 10'000;
  for (int i = 0; i < kIds; ++i) {
    std::string id = new_id(id_prefix::kOrg);
    for (char c : id.substr(4)) ++counts[c];
  }
  ASSERT_EQ(counts.size(), 62u);
  const double expected = kIds * 22.0 / 62.0;
  for (const auto& [c, n] : counts) {
    EXPECT_GT(n, expected * 0.9) << c;
    EXPECT_LT(n, expected * 1.1) << c;
  }
}

TEST(IsValidId, RejectsMalformedIds) {
  std::string good = new_id(id_prefix::kOrg);
  ASSERT_TRUE(is_valid_id(id_prefix::kOrg, good));
  EXPECT_FALSE(is_valid_id(id_prefix::kUser, good));  // wrong prefix
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, "usr" + good.substr(3)));
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, good.substr(0, good.size() - 1)));  // short
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, good + "A"));                       // long
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, "org-" + good.substr(4)));          // separator
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, ""));
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, "org_"));
  for (char bad : {'-', '_', '.', ' ', '/', '%', '\0', '\n'}) {
    std::string id = good;
    id[10] = bad;
    EXPECT_FALSE(is_valid_id(id_prefix::kOrg, id)) << int(bad);
  }
  std::string non_ascii = good;
  non_ascii[10] = static_cast<char>(0xC3);
  EXPECT_FALSE(is_valid_id(id_prefix::kOrg, non_ascii));
}

TEST(IsValidId, AcceptsAnyBase62RandomPart) {
  EXPECT_TRUE(is_valid_id("org", "org_0000000000000000000000"));
  EXPECT_TRUE(is_valid_id("org", "org_zzzzzzzzzzzzzzzzzzzzzz"));
  EXPECT_TRUE(is_valid_id("org", "org_AbCdEfGhIjKlMnOpQrSt09"));
}

TEST(NewRequestId, ShapeAndAcceptability) {
  std::string id = new_request_id();
  ASSERT_EQ(id.size(), 20u) << id;
  EXPECT_EQ(id.substr(0, 4), "req_");
  EXPECT_TRUE(all_base62(id.substr(4))) << id;
  EXPECT_TRUE(is_acceptable_request_id(id));
}

TEST(NewRequestId, UniqueOverManyIds) {
  std::unordered_set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(seen.insert(new_request_id()).second) << "duplicate after " << i;
  }
}

TEST(NewRequestId, ThreadsDoNotRepeatEachOther) {
  // Each thread seeds its own generator; two threads must not produce the same sequence.
  std::vector<std::string> a, b;
  std::latch go(2);  // both running at once, not one after the other
  std::thread ta([&] {
    go.arrive_and_wait();
    for (int i = 0; i < 1000; ++i) a.push_back(new_request_id());
  });
  std::thread tb([&] {
    go.arrive_and_wait();
    for (int i = 0; i < 1000; ++i) b.push_back(new_request_id());
  });
  ta.join();
  tb.join();
  std::unordered_set<std::string> seen(a.begin(), a.end());
  for (const auto& id : b) EXPECT_FALSE(seen.count(id)) << id;
}

TEST(IsAcceptableRequestId, AcceptsShortSafeIds) {
  EXPECT_TRUE(is_acceptable_request_id("abc"));
  EXPECT_TRUE(is_acceptable_request_id("trace-1_2.3:4"));
  EXPECT_TRUE(is_acceptable_request_id("0af7651916cd43dd8448eb211c80319c"));
  EXPECT_TRUE(is_acceptable_request_id(std::string(128, 'a')));
}

TEST(IsAcceptableRequestId, RejectsLongOrUnsafeIds) {
  EXPECT_FALSE(is_acceptable_request_id(""));
  EXPECT_FALSE(is_acceptable_request_id(std::string(129, 'a')));
  for (std::string bad : {"a b", "a\rb", "a\nb", "a\r\nX-Evil: 1", "a\"b", "a/b", "a\\b", "a%0d",
                          "a\tb", "a{b}", "<script>"}) {
    EXPECT_FALSE(is_acceptable_request_id(bad)) << bad;
  }
  EXPECT_FALSE(is_acceptable_request_id(std::string("a\0b", 3)));
  EXPECT_FALSE(is_acceptable_request_id("\xD0\xB6"));  // non-ASCII
}

}  // namespace id_test
}  // namespace gpurent
