// Tests the payment webhook's signature: the MAC over "<t>." and the raw body, the time
// window, rotated secrets and every malformed header shape.
#include "billing/payment_signature.h"

#include "core/crypto.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>

namespace gpurent::billing {

// Readable failure messages for gtest.
void PrintTo(SignatureVerdict v, std::ostream* os) {
  *os << to_string(v);
}

namespace payment_signature_test {

using std::chrono::microseconds;
using std::chrono::seconds;
using V = SignatureVerdict;

constexpr std::string_view kSecret = "whsec_test_secret";
constexpr std::string_view kBody = R"({"id":"pay_1"})";
constexpr std::int64_t kT = 1'767'225'600;  // 2026-01-01T00:00:00Z
constexpr seconds kTolerance{300};

Timestamp at_seconds(std::int64_t s) {
  return Timestamp(seconds(s));
}

const Timestamp kNow = at_seconds(kT);

// The MAC as the provider computes it, independently of sign_payment.
std::string mac(std::string_view secret, std::string_view t, std::string_view body) {
  return crypto::hmac_sha256_hex(secret, std::string(t) + "." + std::string(body));
}

const std::string kMac = mac(kSecret, std::to_string(kT), kBody);

SignatureCheck check(std::string_view header, std::string_view body = kBody, Timestamp now = kNow,
                     std::string_view secret = kSecret) {
  return check_payment_signature(header, body, secret, now, kTolerance);
}

std::string header(std::string_view macs) {
  return "t=" + std::to_string(kT) + "," + std::string(macs);
}

// ---- The scheme ----

TEST(PaymentSignature, KnownVector) {
  // HMAC-SHA256("whsec_test_secret", "1767225600.{\"id\":\"pay_1\"}"), computed independently.
  const std::string expected =
      "t=1767225600,v1=6ad772b202b1ecee138c218c1a007e1b320d617e6ba980da07053e8995797d00";
  EXPECT_EQ(sign_payment(kBody, kSecret, kT), expected);
  SignatureCheck result = check(expected);
  EXPECT_EQ(result.verdict, V::kValid);
  EXPECT_EQ(result.timestamp, kT);
}

TEST(PaymentSignature, TamperedBodyIsAMismatch) {
  std::string signed_header = sign_payment(kBody, kSecret, kT);
  for (std::string_view body :
       {R"({"id":"pay_2"})", R"({"id":"pay_1"} )", R"( {"id":"pay_1"})", R"({"id":"pay_1")", ""}) {
    SignatureCheck result = check(signed_header, body);
    EXPECT_EQ(result.verdict, V::kMismatch) << body;
    EXPECT_EQ(result.timestamp, kT) << body;
  }
}

TEST(PaymentSignature, WrongSecretIsAMismatch) {
  std::string signed_header = sign_payment(kBody, kSecret, kT);
  EXPECT_EQ(check(signed_header, kBody, kNow, "whsec_other").verdict, V::kMismatch);
  EXPECT_EQ(check(signed_header, kBody, kNow, "whsec_test_secreT").verdict, V::kMismatch);
  EXPECT_EQ(check(signed_header, kBody, kNow, "whsec_test_secret ").verdict, V::kMismatch);
}

TEST(PaymentSignature, EmptySecretMatchesNothing) {
  // Even a MAC made under the empty key: a missing secret must not turn into a known one.
  std::string under_empty_key = header("v1=" + mac("", std::to_string(kT), kBody));
  EXPECT_EQ(check(under_empty_key, kBody, kNow, "").verdict, V::kMismatch);
  EXPECT_THROW(sign_payment(kBody, "", kT), std::invalid_argument);
}

TEST(PaymentSignature, TheTimestampIsSigned) {
  // The MAC of kT presented with another t: moving a message in time breaks it.
  std::string moved = "t=" + std::to_string(kT + 1) + ",v1=" + kMac;
  EXPECT_EQ(check(moved, kBody, at_seconds(kT + 1)).verdict, V::kMismatch);
  // The digits as sent are signed: a leading zero is another message.
  std::string padded = "t=0" + std::to_string(kT) + ",v1=" + kMac;
  EXPECT_EQ(check(padded).verdict, V::kMismatch);
  std::string padded_signed =
      "t=0" + std::to_string(kT) + ",v1=" + mac(kSecret, "0" + std::to_string(kT), kBody);
  EXPECT_EQ(check(padded_signed).verdict, V::kValid);
}

// ---- The time window ----

struct WindowCase {
  const char* what;
  Timestamp now;
  SignatureVerdict verdict;
};

TEST(PaymentSignature, StaleBothWaysAndExactlyAtTolerance) {
  std::string signed_header = sign_payment(kBody, kSecret, kT);
  const WindowCase cases[] = {
      {"now", kNow, V::kValid},
      {"tolerance later", kNow + kTolerance, V::kValid},
      {"tolerance earlier", kNow - kTolerance, V::kValid},
      {"tolerance and 1 us later", kNow + kTolerance + microseconds(1), V::kStale},
      {"tolerance and 1 us earlier", kNow - kTolerance - microseconds(1), V::kStale},
      {"1 s past tolerance later", kNow + kTolerance + seconds(1), V::kStale},
      {"1 s past tolerance earlier", kNow - kTolerance - seconds(1), V::kStale},
      {"a day later (a replay)", kNow + seconds(86400), V::kStale},
      {"a day earlier (from the future)", kNow - seconds(86400), V::kStale},
      {"the epoch", at_seconds(0), V::kStale},
  };
  for (const auto& c : cases) {
    SignatureCheck result = check(signed_header, kBody, c.now);
    EXPECT_EQ(result.verdict, c.verdict) << c.what;
    EXPECT_EQ(result.timestamp, kT) << c.what;
  }
}

TEST(PaymentSignature, ZeroToleranceCountsMicroseconds) {
  std::string signed_header = sign_payment(kBody, kSecret, kT);
  EXPECT_EQ(check_payment_signature(signed_header, kBody, kSecret, kNow, seconds(0)).verdict,
            V::kValid);
  EXPECT_EQ(check_payment_signature(signed_header, kBody, kSecret, kNow + microseconds(500'000),
                                    seconds(0))
                .verdict,
            V::kStale);
}

TEST(PaymentSignature, AForgeryIsAMismatchWhateverItsTime) {
  std::string forged = sign_payment(kBody, "whsec_other", kT);
  EXPECT_EQ(check(forged, kBody, kNow + seconds(86400)).verdict, V::kMismatch);
  EXPECT_EQ(check(forged, kBody, kNow).verdict, V::kMismatch);
}

TEST(PaymentSignature, TimesAtTheEndsOfInt64DoNotOverflow) {
  const std::string largest = "9223372036854775807";
  std::string far = "t=" + largest + ",v1=" + mac(kSecret, largest, kBody);
  SignatureCheck result = check(far);
  EXPECT_EQ(result.verdict, V::kStale);
  EXPECT_EQ(result.timestamp, 9'223'372'036'854'775'807);
  std::string epoch = "t=0,v1=" + mac(kSecret, "0", kBody);
  EXPECT_EQ(check(epoch).verdict, V::kStale);
  EXPECT_EQ(check(epoch, kBody, at_seconds(0)).verdict, V::kValid);
}

// ---- Rotated secrets and the header's shape ----

TEST(PaymentSignature, RotatedSecretsAnyOneMatches) {
  std::string old_mac = mac("whsec_old", std::to_string(kT), kBody);
  std::string new_mac = mac("whsec_new", std::to_string(kT), kBody);
  for (const std::string& h :
       {header("v1=" + old_mac + ",v1=" + new_mac), header("v1=" + new_mac + ",v1=" + old_mac)}) {
    EXPECT_EQ(check(h, kBody, kNow, "whsec_old").verdict, V::kValid) << h;
    EXPECT_EQ(check(h, kBody, kNow, "whsec_new").verdict, V::kValid) << h;
    EXPECT_EQ(check(h, kBody, kNow, "whsec_third").verdict, V::kMismatch) << h;
  }
  std::string many;
  for (int i = 0; i < 5; ++i) many += "v1=" + mac("whsec_" + std::to_string(i), "1", "") + ",";
  EXPECT_EQ(check(header(many + "v1=" + kMac)).verdict, V::kValid);
  EXPECT_EQ(check(header(many + "v1=" + kMac), kBody, kNow, "whsec_3").verdict, V::kMismatch);
}

TEST(PaymentSignature, AcceptedHeaderShapes) {
  std::string t = "t=" + std::to_string(kT);
  std::string v1 = "v1=" + kMac;
  std::string v0 = "v0=" + std::string(64, '0');
  const std::string shapes[] = {
      t + "," + v1,
      v1 + "," + t,                                  // any order
      v0 + "," + t + "," + v1,                       // an unknown scheme is ignored
      t + ",v2=whatever," + v1 + ",x=1",             // so are other parts
      " " + t + " , \t" + v1 + "\t ",                // whitespace around parts
      t + ",," + v1 + ",",                           // empty parts
      t + ",junk," + v1,                             // a part without '='
      t + ",v1=" + std::string(64, 'A') + "," + v1,  // an ill-formed v1 beside a good one
      t + ",v1=short," + v1,
      t + ",v1=" + std::string(64, 'f') + "," + v1,  // a wrong but well-formed one too
  };
  for (const auto& h : shapes) {
    SignatureCheck result = check(h);
    EXPECT_EQ(result.verdict, V::kValid) << '"' << h << '"';
    EXPECT_EQ(result.timestamp, kT) << '"' << h << '"';
  }
}

TEST(PaymentSignature, MalformedHeaders) {
  std::string t = "t=" + std::to_string(kT);
  std::string v1 = "v1=" + kMac;
  std::string upper = kMac;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string shapes[] = {
      "",
      " ",
      "garbage",
      t,              // no v1
      v1,             // no t
      "t=," + v1,     // empty t
      "t=abc," + v1,  // non-numeric t
      "t=-1," + v1,   // signed
      "t=+1767225600," + v1,
      "t=1767225600.5," + v1,                                   // fractional
      "t= 1767225600," + v1,                                    // space inside the part
      "t=1767225600 ," + v1.substr(0, 3) + " " + v1.substr(3),  // v1 with a space in it
      "t=99999999999999999999," + v1,                           // past int64
      "t=0x69558a00," + v1,                                     // hex
      t + "," + t + "," + v1,                                   // two t= (which one was signed?)
      t + ",t=1," + v1,
      t + ",v1=",                         // empty v1
      t + ",v1=" + kMac.substr(1),        // 63 hex digits
      t + ",v1=" + kMac + "0",            // 65
      t + ",v1=" + upper,                 // upper case
      t + ",v1=" + kMac.substr(1) + "g",  // not hex
      t + ",v0=" + kMac,                  // only another scheme
      t + ";" + v1,                       // another separator
      "T=1767225600,V1=" + kMac,          // keys are case-sensitive
      "t:1767225600,v1:" + kMac,
  };
  for (const auto& h : shapes) {
    SignatureCheck result = check(h);
    EXPECT_EQ(result.verdict, V::kMalformed) << '"' << h << '"';
    EXPECT_EQ(result.timestamp, 0) << '"' << h << '"';
  }
}

TEST(PaymentSignature, HeaderOf2048BytesAtMost) {
  std::string h = sign_payment(kBody, kSecret, kT) + ",x=";
  h += std::string(2048 - h.size(), 'a');
  ASSERT_EQ(h.size(), 2048u);
  EXPECT_EQ(check(h).verdict, V::kValid);
  EXPECT_EQ(check(h + "a").verdict, V::kMalformed);
  EXPECT_EQ(check(std::string(100'000, ',') + sign_payment(kBody, kSecret, kT)).verdict,
            V::kMalformed);
}

// ---- sign_payment ----

TEST(SignPayment, RoundTripsThroughTheCheck) {
  const std::regex shape("t=[0-9]+,v1=[0-9a-f]{64}");
  std::string large(100'000, 'x');
  std::string binary("a\0b\xff\n\r", 6);
  for (std::string_view body : {std::string_view(), kBody, std::string_view(large),
                                std::string_view(binary), std::string_view("\xd0\xbf\xd1\x80")}) {
    for (std::int64_t t : {std::int64_t{0}, std::int64_t{1}, kT, std::int64_t{4'102'444'800}}) {
      std::string h = sign_payment(body, kSecret, t);
      EXPECT_TRUE(std::regex_match(h, shape)) << h;
      SignatureCheck result = check(h, body, at_seconds(t));
      EXPECT_EQ(result.verdict, V::kValid) << h;
      EXPECT_EQ(result.timestamp, t) << h;
    }
  }
  EXPECT_THROW(sign_payment(kBody, kSecret, -1), std::invalid_argument);
}

// The fuzz target's signed seeds (fuzz/corpus/payment_webhook/): header, newline, body.
TEST(SignPayment, FuzzSeedsStillVerify) {
  auto dir = std::filesystem::path(gpurent::testing::source_dir()) / "fuzz/corpus/payment_webhook";
  for (const char* name : {"signed_succeeded.txt", "signed_refunded_rotated.txt"}) {
    std::ifstream in(dir / name, std::ios::binary);
    ASSERT_TRUE(in) << "missing seed " << name;
    std::ostringstream text;
    text << in.rdbuf();
    std::string input = text.str();
    auto newline = input.find('\n');
    ASSERT_NE(newline, std::string::npos) << name;
    SignatureCheck result = check_payment_signature(std::string_view(input).substr(0, newline),
                                                    std::string_view(input).substr(newline + 1),
                                                    "whsec_fuzz_secret", kNow, kTolerance);
    EXPECT_EQ(result.verdict, V::kValid) << name;
  }
}

TEST(SignatureVerdictNames, AreTheWireNames) {
  EXPECT_EQ(to_string(V::kValid), "valid");
  EXPECT_EQ(to_string(V::kMalformed), "malformed");
  EXPECT_EQ(to_string(V::kStale), "stale");
  EXPECT_EQ(to_string(V::kMismatch), "mismatch");
}

}  // namespace payment_signature_test
}  // namespace gpurent::billing
