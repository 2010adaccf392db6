// The invoice routes over a real PostgreSQL, called as the pipeline calls a handler (the
// caller already checked against the route's declaration): the JSON of API.md "Billing",
// paging, the CSV download with its file name, `format` checked, and malformed, unknown and
// other orgs' ids all 404.
#include "api/handlers/invoice_handlers.h"

#include "api/auth.h"
#include "api/router.h"
#include "core/error.h"
#include "core/id.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>

namespace gpurent::http {
namespace invoice_handlers_pgtest {

Timestamp utc_day(int y, unsigned m, unsigned d) {
  std::chrono::sys_days day{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  return std::chrono::time_point_cast<Timestamp::duration>(day + std::chrono::hours(12));
}

class InvoiceHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    add_invoice_routes(router_, state_);
    mine_ = create_org();
    theirs_ = create_org();
  }

  std::string create_org() {
    static constexpr Statement kInsertOrg = {"invoice_handlers_test_insert_org",
                                             "INSERT INTO orgs (id, name) VALUES ($1, 'Org')"};
    std::string id = new_id(id_prefix::kOrg);
    pool_.transact("invoice_handlers_test", [&](Tx& tx) { tx.exec(kInsertOrg, id); });
    return id;
  }

  void add_day(const std::string& org, Timestamp at) {
    pool_.transact("invoice_handlers_test", [&](Tx& tx) {
      store_.add_rental_day(tx, org, "rnt_a", "=1x L4-24GB", at, {10'000, 2'000, 12'000});
    });
  }

  std::string only_invoice(const std::string& org) {
    return pool_.read("invoice_handlers_test",
                      [&](Tx& tx) { return store_.list(tx, org, 1, std::nullopt).items.at(0).id; });
  }

  // GET `target` as the org's caller; the route's answer, or the Error it threw.
  Response get(const std::string& target, const std::string& org) {
    auto q = target.find('?');
    Request req;
    req.method = Method::kGet;
    req.target = target;
    req.path = std::string_view(target).substr(0, q);
    if (q != std::string::npos) req.query = std::string_view(target).substr(q + 1);
    auto m = router_.match(Method::kGet, req.path);
    EXPECT_EQ(m.kind, RouteMatch::Kind::kFound) << target;
    if (m.kind != RouteMatch::Kind::kFound) return {};
    EXPECT_TRUE(m.route->needs_org);
    EXPECT_EQ(m.route->scope, "billing:read");
    req.path_params = m.params;
    Principal p;
    p.org_id = org;
    p.role = "billing";
    p.scopes = {"rentals:read", "billing:read"};
    return m.route->handler(req, p);
  }

  // The error code `target` is refused with, or "" when it is answered.
  std::string refused(const std::string& target, const std::string& org,
                      std::string* field = nullptr) {
    try {
      get(target, org);
      return "";
    } catch (const Error& e) {
      if (field) *field = e.details().value("field", "");
      return std::string(error_code_name(e.code()));
    }
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 2}};
  TestClock clock_;
  billing::InvoiceStore store_{clock_, "RUB", 2000, "Europe/Moscow"};
  InvoiceRoutesState state_{.pool = &pool_, .invoices = &store_};
  Router router_;
  std::string mine_, theirs_;
};

TEST_F(InvoiceHandlersTest, OneInvoiceAsJson) {
  add_day(mine_, utc_day(2026, 1, 5));
  add_day(mine_, utc_day(2026, 1, 6));
  ASSERT_EQ(store_.finalise_due(pool_, utc_day(2026, 2, 2)), 1);
  const auto id = only_invoice(mine_);
  auto r = get("/v1/invoices/" + id, mine_);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  auto body = nlohmann::json::parse(r.body);
  auto rub = [](long long minor) {
    return nlohmann::json{{"amount_minor", minor}, {"currency", "RUB"}};
  };
  nlohmann::json expected = {{"id", id},
                             {"number", "2026-000001"},
                             {"period", {{"start", "2026-01-01"}, {"end", "2026-02-01"}}},
                             {"status", "issued"},
                             {"kind", "invoice"},
                             {"corrects_invoice_id", nullptr},
                             {"lines",
                              {{{"kind", "rental_days"},
                                {"rental_id", "rnt_a"},
                                {"description", "=1x L4-24GB"},
                                {"days", 2},
                                {"unit_price", rub(12'000)},
                                {"amount", rub(24'000)},
                                {"tax", rub(4'000)},
                                {"amount_net", rub(20'000)},
                                {"energy_kwh", nullptr}}}},
                             {"subtotal", rub(20'000)},
                             {"tax", rub(4'000)},
                             {"total", rub(24'000)},
                             {"vat_rate_percent", "20.00"},
                             {"created_at", body.value("created_at", "")},
                             {"issued_at", "2026-02-02T12:00:00Z"}};
  EXPECT_EQ(body, expected) << body.dump(2);

  EXPECT_EQ(get("/v1/invoices/" + id + "?format=json", mine_).body, r.body);
}

TEST_F(InvoiceHandlersTest, OneInvoiceAsCsv) {
  add_day(mine_, utc_day(2026, 1, 5));
  const auto id = only_invoice(mine_);
  auto draft = get("/v1/invoices/" + id + "?format=csv", mine_);
  EXPECT_EQ(draft.status, 200);
  EXPECT_EQ(draft.content_type, "text/csv; charset=utf-8");
  ASSERT_EQ(draft.headers.size(), 1u);
  EXPECT_EQ(draft.headers[0].first, "Content-Disposition");
  EXPECT_EQ(draft.headers[0].second, "attachment; filename=\"invoice-" + id + ".csv\"");
  auto record =
      pool_.read("invoice_handlers_test", [&](Tx& tx) { return store_.get(tx, mine_, id); });
  EXPECT_EQ(draft.body, billing::invoice_csv(*record));
  EXPECT_NE(draft.body.find("\"'=1x L4-24GB\""), std::string::npos) << draft.body;

  ASSERT_EQ(store_.finalise_due(pool_, utc_day(2026, 2, 2)), 1);
  auto issued = get("/v1/invoices/" + id + "?format=csv", mine_);
  ASSERT_EQ(issued.headers.size(), 1u);
  EXPECT_EQ(issued.headers[0].second, "attachment; filename=\"invoice-2026-000001.csv\"");
}

TEST_F(InvoiceHandlersTest, FormatIsJsonOrCsv) {
  add_day(mine_, utc_day(2026, 1, 5));
  const auto id = only_invoice(mine_);
  std::string field;
  EXPECT_EQ(refused("/v1/invoices/" + id + "?format=xml", mine_, &field), "invalid_request");
  EXPECT_EQ(field, "format");
  EXPECT_EQ(refused("/v1/invoices/" + id + "?format=", mine_, &field), "invalid_request");
  EXPECT_EQ(field, "format");
  EXPECT_EQ(refused("/v1/invoices/" + id + "?fromat=csv", mine_, &field), "invalid_request");
  EXPECT_EQ(field, "fromat");
}

TEST_F(InvoiceHandlersTest, MalformedUnknownAndForeignIdsAreNotFound) {
  add_day(mine_, utc_day(2026, 1, 5));
  add_day(theirs_, utc_day(2026, 1, 5));
  const auto their_id = only_invoice(theirs_);
  EXPECT_EQ(refused("/v1/invoices/" + their_id, mine_), "not_found");
  EXPECT_EQ(refused("/v1/invoices/" + their_id + "?format=csv", mine_), "not_found");
  EXPECT_EQ(refused("/v1/invoices/" + new_id(id_prefix::kInvoice), mine_), "not_found");
  EXPECT_EQ(refused("/v1/invoices/" + new_id(id_prefix::kRental), mine_), "not_found");
  EXPECT_EQ(refused("/v1/invoices/inv_short", mine_), "not_found");
  EXPECT_EQ(get("/v1/invoices/" + their_id, theirs_).status, 200);
}

TEST_F(InvoiceHandlersTest, TheListPagesTheOrgsInvoicesNewestFirst) {
  for (unsigned m = 1; m <= 3; ++m) add_day(mine_, utc_day(2026, m, 5));
  add_day(theirs_, utc_day(2026, 4, 5));
  auto first = nlohmann::json::parse(get("/v1/invoices?limit=2", mine_).body);
  ASSERT_EQ(first["items"].size(), 2u);
  EXPECT_EQ(first["items"][0]["period"]["start"], "2026-03-01");
  EXPECT_EQ(first["items"][1]["period"]["start"], "2026-02-01");
  EXPECT_EQ(first["items"][0]["status"], "draft");
  EXPECT_EQ(first["items"][0]["number"], nullptr);
  EXPECT_EQ(first["items"][0]["lines"].size(), 1u);
  ASSERT_TRUE(first["next_cursor"].is_string());
  auto second = nlohmann::json::parse(
      get("/v1/invoices?limit=2&cursor=" + first["next_cursor"].get<std::string>(), mine_).body);
  ASSERT_EQ(second["items"].size(), 1u);
  EXPECT_EQ(second["items"][0]["period"]["start"], "2026-01-01");
  EXPECT_EQ(second["next_cursor"], nullptr);

  std::string field;
  EXPECT_EQ(refused("/v1/invoices?cursor=nonsense", mine_, &field), "invalid_request");
  EXPECT_EQ(field, "cursor");
  EXPECT_EQ(refused("/v1/invoices?limit=501", mine_, &field), "invalid_request");
  EXPECT_EQ(field, "limit");
  EXPECT_EQ(refused("/v1/invoices?format=csv", mine_, &field), "invalid_request");
  EXPECT_EQ(field, "format");
}

}  // namespace invoice_handlers_pgtest
}  // namespace gpurent::http
