// Invoice routes: each is one InvoiceStore read for the caller's org, which every statement
// fixes, so another org's invoice is as unknown as one that does not exist.
#include "api/handlers/invoice_handlers.h"

#include "api/handlers/json_values.h"
#include "api/handlers/query_params.h"
#include "api/responses.h"
#include "core/error.h"
#include "core/id.h"
#include "core/money.h"

#include <optional>
#include <set>

namespace gpurent::http {
namespace {

// The invoice id from the path; a malformed one is an invoice that does not exist.
std::string invoice_id(const Request& req) {
  return path_id(req, "id", id_prefix::kInvoice, "No such invoice.");
}

nlohmann::json line_json(const billing::InvoiceLine& l, const std::string& currency,
                         std::optional<double> energy_kwh) {
  return {{"kind", l.kind},
          {"rental_id", l.rental_id},
          {"description", l.description},
          {"days", l.days},
          {"unit_price", Money(l.unit.gross_minor, currency).to_json()},
          {"amount", Money(l.amount_minor, currency).to_json()},
          {"tax", Money(l.tax_minor, currency).to_json()},
          {"amount_net", Money(l.amount_net_minor, currency).to_json()},
          {"energy_kwh", optional_json(energy_kwh)}};
}

// The invoice as JSON with its lines' energy, in the read's transaction.
nlohmann::json invoice_with_details(Tx& tx, const InvoiceRoutesState& state,
                                    const billing::InvoiceRecord& invoice) {
  std::map<std::string, double> energy;
  if (state.details) {
    std::vector<std::string> rentals;
    for (const auto& l : invoice.lines) {
      if (l.kind == "rental_days") rentals.push_back(l.rental_id);
    }
    if (!rentals.empty()) {
      energy = state.details->energy_kwh(tx, invoice.org_id, rentals, invoice.period_start,
                                         invoice.period_end, state.invoices->time_zone());
    }
  }
  return invoice_json(invoice, energy);
}

// A name a browser saves the download under: the number once issued, the id of a draft.
std::string csv_filename(const billing::InvoiceRecord& invoice) {
  return "invoice-" + invoice.number.value_or(invoice.id) + ".csv";
}

}  // namespace

nlohmann::json invoice_json(const billing::InvoiceRecord& invoice,
                            const std::map<std::string, double>& energy) {
  nlohmann::json lines = nlohmann::json::array();
  std::set<std::string> shown;  // a rental's energy goes on its first line only
  for (const auto& l : invoice.lines) {
    std::optional<double> kwh;
    auto it = energy.find(l.rental_id);
    if (l.kind == "rental_days" && it != energy.end() && shown.insert(l.rental_id).second) {
      kwh = it->second;
    }
    lines.push_back(line_json(l, invoice.currency, kwh));
  }
  return {{"id", invoice.id},
          {"number", optional_json(invoice.number)},
          {"period", {{"start", invoice.period_start}, {"end", invoice.period_end}}},
          {"status", invoice.status},
          {"lines", std::move(lines)},
          {"subtotal", Money(invoice.subtotal_minor, invoice.currency).to_json()},
          {"tax", Money(invoice.tax_minor, invoice.currency).to_json()},
          {"total", Money(invoice.total_minor, invoice.currency).to_json()},
          {"vat_rate_percent", billing::vat_rate_percent(invoice.vat_basis_points)},
          {"created_at", time_json(invoice.created_at)},
          {"issued_at", optional_json(invoice.issued_at)},
          // A credit note is a document of its own that corrects an issued invoice.
          {"kind", invoice.kind},
          {"corrects_invoice_id", optional_json(invoice.corrects_invoice_id)}};
}

void add_invoice_routes(Router& router, InvoiceRoutesState& state) {
  router.add({.method = Method::kGet,
              .pattern = "/v1/invoices",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    QueryParams query(req, {"limit", "cursor"});
                    nlohmann::json items = nlohmann::json::array();
                    auto page = state.pool->read("invoice_list", [&](Tx& tx) {
                      auto found =
                          state.invoices->list(tx, *p.org_id, query.limit(), query.cursor());
                      for (const auto& i : found.items) {
                        items.push_back(invoice_with_details(tx, state, i));
                      }
                      return found;
                    });
                    return list_response(200, std::move(items), page.next_cursor);
                  },
              .needs_org = true,
              .scope = "billing:read",
              .summary = "The org's monthly invoices, newest month first, with their lines.",
              .tag = "billing"});

  router.add({.method = Method::kGet,
              .pattern = "/v1/invoices/{id}",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    std::string id = invoice_id(req);
                    QueryParams query(req, {"format"});
                    const std::string format = query.text("format").value_or("json");
                    if (format != "json" && format != "csv") {
                      throw Error::invalid_field("format", "must be json or csv");
                    }
                    nlohmann::json body;
                    auto invoice = state.pool->read("invoice_get", [&](Tx& tx) {
                      auto found = state.invoices->get(tx, *p.org_id, id);
                      if (found) body = invoice_with_details(tx, state, *found);
                      return found;
                    });
                    if (!invoice) throw Error(ErrorCode::kNotFound, "No such invoice.");
                    if (format == "json") return json_response(200, body);
                    Response r;
                    r.content_type = "text/csv; charset=utf-8";
                    r.body = billing::invoice_csv(*invoice);
                    r.set_header("Content-Disposition",
                                 "attachment; filename=\"" + csv_filename(*invoice) + "\"");
                    return r;
                  },
              .needs_org = true,
              .scope = "billing:read",
              .summary = "One invoice with its lines; ?format=csv downloads it as CSV (RFC 4180).",
              .tag = "billing"});
}

}  // namespace gpurent::http
