// The platform admins' money use cases (billing/admin_money.h) against a real PostgreSQL:
// each posts and audits in one transaction, refuses what the contract refuses before
// writing anything, and knows orgs only through identity's OrgDirectory.
#include "billing/admin_money.h"

#include "billing/tests/billing_fixture.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

class AdminMoneyTest : public BillingTest {
 protected:
  const Caller admin_{.actor = {.user_id = "usr_admin", .ip = "192.0.2.1", .request_id = "r1"}};

  long long audit_rows(const std::string& action) {
    return count("SELECT count(*) FROM audit_log WHERE action = '" + action + "'");
  }
};

TEST_F(AdminMoneyTest, ACreditPostsAndAuditsTogetherAndNeedsAnOrg) {
  std::string acme = org();
  auto credited = money_.credit(
      admin_, acme,
      {.amount = Money(250'000, "RUB"), .kind = CreditKind::kGoodwill, .reason = "slow start"});
  EXPECT_EQ(credited.balances.available.amount_minor(), 250'000);
  EXPECT_EQ(balances(acme).available.amount_minor(), 250'000);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'billing.credit' AND org_id = '" +
                  acme + "' AND target = '" + transaction_id_text(credited.transaction_id) +
                  "' AND actor_user_id = 'usr_admin' AND details->>'kind' = 'goodwill'"),
            1);

  std::string nobody = new_id(id_prefix::kOrg);
  EXPECT_EQ(
      code_of([&] { money_.credit(admin_, nobody, {.amount = Money(1, "RUB"), .reason = "x"}); }),
      "not_found");
  EXPECT_EQ(code_of([&] { money_.balances(nobody); }), "not_found");
  EXPECT_EQ(audit_rows("billing.credit"), 1) << "nothing audited for a refusal";
  expect_ledger_sound(/*postings_only=*/true);
}

TEST_F(AdminMoneyTest, ACreditLimitIsInTheLedgersCurrencyAndNotNegative) {
  std::string acme = org();
  EXPECT_EQ(code_of([&] { money_.set_credit_limit(admin_, acme, Money(100, "EUR")); }),
            "invalid_request");
  EXPECT_EQ(code_of([&] { money_.set_credit_limit(admin_, acme, Money(-100, "RUB")); }),
            "invalid_request");
  EXPECT_EQ(
      code_of([&] { money_.set_credit_limit(admin_, new_id(id_prefix::kOrg), Money(100, "RUB")); }),
      "not_found");
  EXPECT_EQ(audit_rows("billing.credit_limit_set"), 0);

  auto after = money_.set_credit_limit(admin_, acme, Money(500'000, "RUB"));
  EXPECT_EQ(after.credit_limit.amount_minor(), 500'000);
  EXPECT_EQ(money_.balances(acme).credit_limit.amount_minor(), 500'000);
  EXPECT_EQ(audit_rows("billing.credit_limit_set"), 1);
}

}  // namespace
}  // namespace gpurent::billing
