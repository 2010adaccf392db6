// The handover report: its facts, its JSON and its signature.
#include "scheduler/handover_report.h"

#include "core/error.h"
#include "core/sql.h"

#include <algorithm>

namespace gpurent::scheduler {
namespace {

using nlohmann::json;

// The report reads inventory's tables for the image and the links: the same
// rows the admin views show, read-only (docs/ARCHITECTURE.md, "SQL edges").
constexpr Statement kImage = {
    "handover_report_image",
    "SELECT id, name, driver_version, cuda_version FROM images WHERE id = $1"};
constexpr Statement kLinks = {
    "handover_report_links",
    "SELECT gpu_a, gpu_b, kind FROM gpu_links WHERE node_id = $1 AND gpu_a = ANY ($2::int[])"
    " AND gpu_b = ANY ($2::int[]) ORDER BY gpu_a, gpu_b"};

std::string pg_int_array(const std::vector<int>& v) {
  std::string out = "{";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "}";
}

bool ours(const std::vector<int>& gpus, int index) {
  return std::find(gpus.begin(), gpus.end(), index) != gpus.end();
}

// "gpu3" or "gpu1-gpu2": whether a finding is about the rental's GPUs (or the whole node).
bool about_ours(const std::string& subject, const std::vector<int>& gpus) {
  if (!subject.starts_with("gpu")) return true;
  auto dash = subject.find("-gpu");
  try {
    if (dash == std::string::npos) return ours(gpus, std::stoi(subject.substr(3)));
    return ours(gpus, std::stoi(subject.substr(3, dash - 3))) &&
           ours(gpus, std::stoi(subject.substr(dash + 4)));
  } catch (const std::exception&) {
    return true;  // a DCGM test named like a GPU: keep it
  }
}

}  // namespace

json handover_report_json(const HandoverFacts& f) {
  const auto& r = f.rental;
  // The handover: the last passed handover burn-in on the node the rental runs on.
  const inventory::BurnInRecord* handover = nullptr;
  for (const auto& b : f.burn_ins) {
    if (b.phase == "handover" && b.passed && r.node_id && b.node_id == *r.node_id) handover = &b;
  }
  json out = {{"report_version", 1},
              {"rental_id", r.id},
              {"org_id", r.org_id},
              {"gpu_model", r.gpu_model},
              {"gpu_count", r.gpu_count},
              {"period",
               {{"start", format_rfc3339(r.period.start)}, {"end", format_rfc3339(r.period.end)}}}};
  out["node"] =
      r.node_id
          ? json{{"id", *r.node_id}, {"gpu_model", r.gpu_model}, {"gpu_indices", r.gpu_indices}}
          : json(nullptr);
  out["image"] = f.image ? json{{"id", f.image->id},
                                {"name", f.image->name},
                                {"driver_version", f.image->driver_version},
                                {"cuda_version", f.image->cuda_version}}
                         : json(nullptr);
  json links = json::array();
  for (const auto& [a, b, kind] : f.links) links.push_back({{"a", a}, {"b", b}, {"kind", kind}});
  out["topology"] = {{"gpus", r.gpu_indices}, {"links", std::move(links)}};

  // Each figure of the rental's own GPUs, the links between them and the node-wide ones,
  // beside the bar it was held to.
  json measurements = json::array();
  if (handover) {
    for (const auto& finding : handover->findings) {
      std::string subject = finding.value("subject", "");
      if (!about_ours(subject, r.gpu_indices)) continue;
      measurements.push_back(
          {{"name", finding.value("check", "") + " " + subject},
           {"value", finding.contains("measured") ? finding["measured"] : json(nullptr)},
           {"unit", finding.contains("unit") ? finding["unit"] : json(nullptr)},
           {"expected", finding.contains("expected") ? finding["expected"] : json(nullptr)},
           {"verdict", finding.value("verdict", "")},
           {"detail", finding.value("detail", "")}});
    }
    out["handover"] = {{"task_id", handover->task_id},
                       {"measured_at", format_rfc3339(handover->finished_at)},
                       {"passed", handover->passed},
                       {"tools", handover->figures.value("tools", json::array())}};
  } else {
    out["handover"] = nullptr;
  }
  out["measurements"] = std::move(measurements);
  // Earlier nodes that failed their burn-in for this rental: the tenant sees why it moved.
  json failed = json::array();
  for (const auto& b : f.burn_ins) {
    if (b.phase == "handover" && !b.passed) {
      failed.push_back({{"node_id", b.node_id}, {"measured_at", format_rfc3339(b.finished_at)}});
    }
  }
  out["failed_handovers"] = std::move(failed);

  json ecc = json::array();
  if (handover && handover->telemetry.is_array()) {
    for (const auto& gpu : handover->telemetry) {
      if (!gpu.is_object() || !gpu.contains("index") || !gpu["index"].is_number_integer() ||
          !ours(r.gpu_indices, gpu["index"].get<int>())) {
        continue;
      }
      json row = {{"index", gpu["index"]}};
      for (const auto& [key, value] : gpu.items()) {
        if (key.starts_with("ecc_") || key.starts_with("retired_") ||
            key.starts_with("remapped_")) {
          row[key] = value;
        }
      }
      ecc.push_back(std::move(row));
    }
  }
  out["ecc"] = std::move(ecc);
  // When the platform vouched for it: its handover, so the report and its signature are the
  // same on every read (Ed25519 signatures are deterministic).
  out["signed_at"] = format_rfc3339(handover ? handover->finished_at : r.created_at);
  return out;
}

SignedReport HandoverReports::report(const Caller& caller, const std::string& id) {
  auto facts = pool_.read("handover_report", [&](Tx& tx) {
    auto rental = rentals_.get(tx, caller.org_id, id);
    if (!rental) throw Error(ErrorCode::kNotFound, "No such rental.");
    HandoverFacts f{.rental = *rental};
    auto image = tx.exec(kImage, rental->image_id);
    if (!image.empty()) {
      f.image = ReportImage{image[0][0].as<std::string>(), image[0][1].as<std::string>(),
                            image[0][2].as<std::string>(), image[0][3].as<std::string>()};
    }
    if (rental->node_id) {
      for (const auto& row : tx.exec(kLinks, *rental->node_id, pg_int_array(rental->gpu_indices))) {
        f.links.emplace_back(row[0].as<int>(), row[1].as<int>(), row[2].as<std::string>());
      }
    }
    f.burn_ins = burn_ins_.for_rental(tx, id);
    return f;
  });
  SignedReport out{.report = handover_report_json(facts)};
  out.payload = out.report.dump();
  out.signature = keys_.sign_report(out.payload);
  out.key_id = keys_.report_key_id();
  return out;
}

}  // namespace gpurent::scheduler
