// scrypt password hashing: round trip, salts, tampering, malformed encodings, policy.
#include "identity/password.h"

#include <gtest/gtest.h>

namespace gpurent::identity {
namespace password_test {

// Cheap parameters keep the tests fast; production defaults are tested once.
const ScryptParams kFast{.log2_n = 10, .r = 8, .p = 1};

TEST(Password, VerifiesTheRightPasswordOnly) {
  auto encoded = hash_password("correct horse battery", kFast);
  EXPECT_TRUE(verify_password("correct horse battery", encoded));
  EXPECT_FALSE(verify_password("correct horse batterY", encoded));
  EXPECT_FALSE(verify_password("", encoded));
}

TEST(Password, DefaultParametersAreMemoryHard) {
  auto encoded = hash_password("a long enough password");
  EXPECT_EQ(encoded.rfind("scrypt$ln=15,r=8,p=1$", 0), 0u) << encoded;
  EXPECT_TRUE(verify_password("a long enough password", encoded));
}

TEST(Password, SaltMakesEveryHashDifferent) {
  EXPECT_NE(hash_password("same password!", kFast), hash_password("same password!", kFast));
}

TEST(Password, NeverContainsThePassword) {
  auto encoded = hash_password("plaintext-marker-123", kFast);
  EXPECT_EQ(encoded.find("plaintext-marker-123"), std::string::npos);
}

TEST(Password, TamperedOrMalformedEncodingsNeverVerify) {
  auto encoded = hash_password("hunter2hunter2", kFast);
  std::string flipped = encoded;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  for (const std::string& bad :
       {flipped, std::string(""), std::string("scrypt"), std::string("bcrypt$x$y$z"),
        encoded.substr(0, encoded.size() - 2), std::string("scrypt$ln=99,r=8,p=1$00$00"),
        std::string("scrypt$ln=10,r=8,p=1$zz$zz"), std::string("scrypt$ln=10,p=1,r=8$00$00")}) {
    EXPECT_FALSE(verify_password("hunter2hunter2", bad)) << bad;
  }
}

TEST(Password, PolicyRefusesShortAndHugePasswords) {
  EXPECT_NE(password_policy_violation("short"), "");
  EXPECT_NE(password_policy_violation(std::string(2000, 'x')), "");
  EXPECT_EQ(password_policy_violation("ten chars!"), "");
}

}  // namespace password_test
}  // namespace gpurent::identity
