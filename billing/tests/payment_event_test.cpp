// Tests the payment callback body parser against the fixtures (fixtures/payments/) and
// against hostile bodies: every refusal names its field, as the API's errors do.
#include "billing/payment_event.h"

#include "core/error.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

namespace gpurent::billing {
namespace payment_event_test {

constexpr std::string_view kOrg = "org_4Qh7cT0rXk2LmP9sVb3NwZ";

std::filesystem::path fixture_dir() {
  return std::filesystem::path(gpurent::testing::source_dir()) / "billing/tests/fixtures/payments";
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() / name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The error parsing `body` throws; fails the test when it parses.
Error refusal(std::string_view body) {
  try {
    parse_payment_event(body);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "parsed: " << body;
  return Error(ErrorCode::kInternal, "parsed");
}

// The refused field, when the error names one.
std::optional<std::string> field_of(const Error& e) {
  auto it = e.details().find("field");
  if (it == e.details().end()) return std::nullopt;
  return it->get<std::string>();
}

std::string event(std::string_view fields) {
  return R"({"id": "pay_1", "type": "payment.succeeded", "org_id": ")" + std::string(kOrg) +
         R"(", "amount": {"amount_minor": 100, "currency": "RUB"})" + std::string(fields) + "}";
}

// ---- Fixtures ----

struct Accepted {
  const char* id;
  std::string_view type;
  std::int64_t amount_minor;
};

struct FixtureCase {
  const char* file;
  std::optional<Accepted> accepted;  // or refused with:
  ErrorCode code = ErrorCode::kInvalidRequest;
  const char* field = nullptr;  // none for text that is not JSON
};

const FixtureCase kFixtures[] = {
    {"succeeded.json", Accepted{"pay_2Yk9Qw7Lm3Xc", kPaymentSucceeded, 100000}},
    {"refunded.json", Accepted{"re_5Tn8-Vb2_Pq4", kPaymentRefunded, 2550}},
    {"not_json.json", std::nullopt, ErrorCode::kInvalidJson, nullptr},
    {"not_object.json", std::nullopt, ErrorCode::kInvalidRequest, "body"},
    {"missing_id.json", std::nullopt, ErrorCode::kInvalidRequest, "id"},
    {"bad_id.json", std::nullopt, ErrorCode::kInvalidRequest, "id"},
    {"unknown_type.json", std::nullopt, ErrorCode::kInvalidRequest, "type"},
    {"bad_org_id.json", std::nullopt, ErrorCode::kInvalidRequest, "org_id"},
    {"missing_amount.json", std::nullopt, ErrorCode::kInvalidRequest, "amount"},
    {"amount_as_string.json", std::nullopt, ErrorCode::kInvalidRequest, "amount"},
    {"zero_amount.json", std::nullopt, ErrorCode::kInvalidRequest, "amount.amount_minor"},
    {"negative_amount.json", std::nullopt, ErrorCode::kInvalidRequest, "amount.amount_minor"},
    {"fractional_amount.json", std::nullopt, ErrorCode::kInvalidRequest, "amount.amount_minor"},
    {"bad_currency.json", std::nullopt, ErrorCode::kInvalidRequest, "amount.currency"},
    {"amount_extra_field.json", std::nullopt, ErrorCode::kInvalidRequest, "amount.fee_minor"},
    {"unknown_field.json", std::nullopt, ErrorCode::kInvalidRequest, "metadata"},
    {"created_string.json", std::nullopt, ErrorCode::kInvalidRequest, "created"},
};

TEST(PaymentEventFixtures, EachParsesOrIsRefusedNamingItsField) {
  for (const auto& c : kFixtures) {
    SCOPED_TRACE(c.file);
    std::string body = read_fixture(c.file);
    if (c.accepted) {
      PaymentEvent e = parse_payment_event(body);
      EXPECT_EQ(e.payment_id, c.accepted->id);
      EXPECT_EQ(e.type, c.accepted->type);
      EXPECT_EQ(e.org_id, kOrg);
      EXPECT_EQ(e.amount, Money(c.accepted->amount_minor, "RUB"));
    } else {
      Error e = refusal(body);
      EXPECT_EQ(error_code_name(e.code()), error_code_name(c.code));
      if (c.field) {
        EXPECT_EQ(field_of(e), c.field);
        // A field's message quotes it ("Field 'amount.currency' ..."); the whole body's does not.
        std::string quoted =
            std::string_view(c.field) == "body" ? "" : "'" + std::string(c.field) + "'";
        EXPECT_NE(std::string(e.what()).find(quoted), std::string::npos) << e.what();
      } else {
        EXPECT_EQ(field_of(e), std::nullopt);
      }
    }
  }
}

TEST(PaymentEventFixtures, TableCoversEveryFile) {
  std::set<std::string> covered;
  for (const auto& c : kFixtures) EXPECT_TRUE(covered.insert(c.file).second) << c.file;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir())) {
    std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    ++files;
    EXPECT_TRUE(covered.count(name)) << name << " is not in the table";
  }
  EXPECT_EQ(files, static_cast<int>(covered.size()));
}

// ---- Fields one by one ----

TEST(PaymentEvent, CreatedIsOptionalAndANonNegativeInteger) {
  EXPECT_NO_THROW(parse_payment_event(event("")));
  EXPECT_NO_THROW(parse_payment_event(event(R"(, "created": 0)")));
  EXPECT_NO_THROW(parse_payment_event(event(R"(, "created": 1767225600)")));
  EXPECT_NO_THROW(parse_payment_event(event(R"(, "created": 18446744073709551615)")));
  EXPECT_NO_THROW(parse_payment_event(event(R"(, "created": null)")));
  for (std::string_view bad : {"-1", "1.5", "\"1767225600\"", "true", "[]", "{}"}) {
    Error e = refusal(event(R"(, "created": )" + std::string(bad)));
    EXPECT_EQ(field_of(e), "created") << bad;
  }
}

TEST(PaymentEvent, PaymentIdCharactersAndLength) {
  auto with_id = [](const std::string& id) {
    return R"({"id": ")" + id + R"(", "type": "payment.refunded", "org_id": ")" +
           std::string(kOrg) + R"(", "amount": {"amount_minor": 1, "currency": "RUB"}})";
  };
  for (const std::string& good :
       {std::string("a"), std::string(128, 'Z'), std::string("AZaz09_-"), std::string("-_-")}) {
    EXPECT_EQ(parse_payment_event(with_id(good)).payment_id, good);
  }
  for (const std::string& bad :
       {std::string(), std::string(129, 'Z'), std::string("pay.1"), std::string("pay 1"),
        std::string("pay/1"), std::string("pay\\u00001"), std::string("\xd0\xbf"),
        std::string("pay+1"), std::string("pay:1")}) {
    EXPECT_EQ(field_of(refusal(with_id(bad))), "id") << bad;
  }
}

TEST(PaymentEvent, OnlyTheTwoTypesThatMoveMoney) {
  for (std::string_view bad :
       {"payment.failed", "Payment.Succeeded", "payment.succeeded ", "payment", "", "refund"}) {
    std::string body = event("");
    body.replace(body.find("payment.succeeded"), 17, bad);
    EXPECT_EQ(field_of(refusal(body)), "type") << bad;
  }
}

TEST(PaymentEvent, FieldsOfTheWrongTypeOrNull) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"id": 1, "type": "payment.succeeded", "org_id": "x", "amount": {}})", "id"},
      {R"({"id": null, "type": "payment.succeeded"})", "id"},
      {R"({"id": "p", "type": ["payment.succeeded"]})", "type"},
      {R"({"id": "p", "type": "payment.succeeded", "org_id": null})", "org_id"},
      {R"({"id": "p", "type": "payment.succeeded", "org_id": ")" + std::string(kOrg) +
           R"(", "amount": null})",
       "amount"},
      {R"({"id": "p", "type": "payment.succeeded", "org_id": ")" + std::string(kOrg) +
           R"(", "amount": 100})",
       "amount"},
      {R"({"id": "p", "type": "payment.succeeded", "org_id": ")" + std::string(kOrg) +
           R"(", "amount": {"amount_minor": 18446744073709551615, "currency": "RUB"}})",
       "amount.amount_minor"},
      {R"({"id": "p", "type": "payment.succeeded", "org_id": ")" + std::string(kOrg) +
           R"(", "amount": {"amount_minor": 1}})",
       "amount.currency"},
      {R"({"id": "p", "type": "payment.succeeded", "org_id": "org_short", "amount": {}})",
       "org_id"},
  };
  for (const auto& [body, field] : cases) {
    Error e = refusal(body);
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << body;
    EXPECT_EQ(field_of(e), field) << body;
  }
}

TEST(PaymentEvent, UnknownFieldsAreRefused) {
  EXPECT_EQ(field_of(refusal(event(R"(, "Amount": 1)"))), "Amount");
  EXPECT_EQ(field_of(refusal(event(R"(, "livemode": false)"))), "livemode");
  EXPECT_EQ(field_of(refusal(event(R"(, "": 1)"))), "");
}

// ---- Hostile bodies ----

TEST(PaymentEvent, NotJson) {
  for (std::string_view bad :
       {"", " ", "{", "nul", "{\"id\": \"p\",}", "{'id': 'p'}", "{\"id\": \"\xff\"}", "{} {}"}) {
    Error e = refusal(bad);
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJson) << bad;
    EXPECT_TRUE(e.details().contains("offset")) << bad;
  }
}

TEST(PaymentEvent, NotAnObject) {
  for (std::string_view bad : {"[]", "1", "\"payment\"", "null", "true"}) {
    Error e = refusal(bad);
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << bad;
    EXPECT_EQ(field_of(e), "body") << bad;
  }
}

TEST(PaymentEvent, NumberPastADouble) {
  Error e = refusal(event(R"(, "created": 1e400)"));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(field_of(e), "body");
}

TEST(PaymentEvent, BodyOf64KibAtMost) {
  std::string body = event("");
  body += std::string(kMaxPaymentEventBytes - body.size(), ' ');
  ASSERT_EQ(body.size(), 65536u);
  EXPECT_EQ(parse_payment_event(body).payment_id, "pay_1");
  EXPECT_EQ(refusal(body + " ").code(), ErrorCode::kPayloadTooLarge);
  EXPECT_EQ(refusal(std::string(1 << 20, '[')).code(), ErrorCode::kPayloadTooLarge);
}

TEST(PaymentEvent, DeepNestingIsRefusedWithoutExhaustingTheStack) {
  std::string deep = std::string(30'000, '[') + std::string(30'000, ']');
  Error e = refusal(event(R"(, "created": )" + deep));
  EXPECT_EQ(field_of(e), "created");
  std::string deep_amount = R"({"id": "p", "type": "payment.succeeded", "org_id": ")" +
                            std::string(kOrg) + R"(", "amount": )" + deep + "}";
  EXPECT_EQ(field_of(refusal(deep_amount)), "amount");
  std::string open = std::string(60'000, '[');
  EXPECT_EQ(refusal(open).code(), ErrorCode::kInvalidJson);
}

TEST(PaymentEvent, ErrorsPrintAsJson) {
  // Messages quote field names from the body; they must stay printable in a JSON reply.
  Error e = refusal(event(R"(, "\u00e9\u0000x": 1)"));
  EXPECT_EQ(field_of(e), std::string("\xc3\xa9\0x", 4));
  EXPECT_NO_THROW(e.to_json().dump());
}

}  // namespace payment_event_test
}  // namespace gpurent::billing
