// A rental's handover report (issue "Hardware you can trust"): what the tenant got, as the
// platform measured it at handover — the GPUs and the links between them, each burn-in figure
// beside the bar it was held to, the image's driver and CUDA, the GPUs' ECC counters — signed
// with the platform's report key (identity/ssh_certificate_authority.h, published at
// GET /v1/platform/report-key), so that anyone can check it offline:
//   base64 -d payload > report.json; base64 -d signature > report.sig
//   openssl pkeyutl -verify -pubin -inkey report-key.pem -rawin -in report.json -sigfile report.sig
// Built from what the database keeps with the rental (the ECC counters as the node reported
// them when its burn-in was judged), so it reads the same every time.
#pragma once

#include "core/caller.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/ssh_certificate_authority.h"
#include "inventory/burn_in_store.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

struct ReportImage {
  std::string id, name, driver_version, cuda_version;
};

// What the report is made of, read in one transaction.
struct HandoverFacts {
  RentalRecord rental;
  std::optional<ReportImage> image;
  // The links between the rental's GPUs on its node: (a, b, kind), a < b.
  std::vector<std::tuple<int, int, std::string>> links;
  // The rental's burn-ins, oldest first.
  std::vector<inventory::BurnInRecord> burn_ins;
};

// The report's JSON (API.md's fields: rental_id, node, topology, measurements [{name, value,
// unit, expected, verdict}], image, ecc, signed_at; docs/burn-in.md, "Handover report"): the
// handover is the last passed handover burn-in on the rental's node; the measurements are
// those of the rental's GPUs, the links between them and the node-wide ones (NCCL). Pure.
nlohmann::json handover_report_json(const HandoverFacts& facts);

struct SignedReport {
  nlohmann::json report;
  std::string payload;    // the exact bytes signed: report.dump()
  std::string signature;  // raw Ed25519, 64 bytes
  std::string key_id;     // the signing key's (GET /v1/platform/report-key)
};

class HandoverReports {
 public:
  HandoverReports(PgPool& pool, RentalStore& rentals, const identity::SshCertificateAuthority& keys)
      : pool_(pool), rentals_(rentals), keys_(keys) {}

  // The caller's rental's report, signed; not_found for another org's rental. Before its
  // handover (no passed handover burn-in on its node yet) `handover` is null: what the
  // platform vouches for so far.
  SignedReport report(const Caller& caller, const std::string& id);

  // The report key's public half (PEM) and its id.
  const std::string& public_key_pem() const { return keys_.report_public_key_pem(); }
  const std::string& key_id() const { return keys_.report_key_id(); }

 private:
  PgPool& pool_;
  RentalStore& rentals_;
  const identity::SshCertificateAuthority& keys_;
  inventory::BurnInStore burn_ins_;
};

}  // namespace gpurent::scheduler
