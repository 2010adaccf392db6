// book_with_retries: the CLI's retry loop over the tests' raw HTTP client.
#include "tests/chaos/booking_client.h"

#include "tests/support/http_client.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

namespace gpurent::testing::chaos {
namespace {

using std::chrono::milliseconds;

std::string error_code_of(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return "";
  return j["error"].value("code", "");
}

Attempt send_once(const std::string& token, const std::string& key, const std::string& body,
                  int port, const RetryPolicy& policy) {
  Attempt a;
  a.start = std::chrono::steady_clock::now();
  try {
    auto r = http_request(port, "POST", "/v1/rentals", body,
                          {{"Authorization", "Bearer " + token},
                           {"Content-Type", "application/json"},
                           {"Idempotency-Key", key},
                           {"Connection", "close"}},
                          policy.read_timeout);
    a.status = r.status;
    if (auto ra = r.header("retry-after"); !ra.empty()) {
      a.retry_after = true;
      try {
        a.retry_after_s = std::stoi(ra);
      } catch (const std::exception&) {
        a.retry_after_s = -1;  // not a number of seconds: reported as is
      }
    }
    a.replayed = r.header("idempotent-replayed") == "true";
    if (r.status == 201) {
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (j.is_object()) a.rental_id = j.value("id", "");
    } else {
      a.error = error_code_of(r.body);
      a.body_head = r.body.substr(0, 300);
    }
  } catch (const std::exception& e) {
    a.status = 0;
    a.error = e.what();
    if (a.error.size() > 200) a.error.resize(200);
  }
  a.end = std::chrono::steady_clock::now();
  return a;
}

}  // namespace

bool retried(const Attempt& a) {
  if (a.status == 0 || a.status >= 500 || a.status == 429) return true;
  return a.status == 409 && a.error == "conflict";  // the first attempt still runs
}

void book_with_retries(KeyRecord& record, const std::string& token, const std::string& body,
                       const BookingTarget& target, const RetryPolicy& policy, int first_replica,
                       std::mt19937& random) {
  auto first = std::chrono::steady_clock::now();
  for (int n = 0;; ++n) {
    int replica = (first_replica + n) % target.replicas;
    Attempt a = send_once(token, record.key, body, target.port(replica), policy);
    a.replica = replica;
    record.attempts.push_back(a);
    record.final_status = a.status;
    record.final_code = a.error;
    if (a.status == 201) {
      record.outcome = KeyRecord::Outcome::kBooked;
      record.rental_ids.insert(a.rental_id);
      return;
    }
    if (!retried(a)) {
      record.outcome = KeyRecord::Outcome::kRefused;
      return;
    }
    bool more = policy.total_limit.count() > 0 ? true : n + 1 < policy.attempts;
    if (!more) break;
    milliseconds pause;
    if (a.retry_after && a.retry_after_s >= 0) {
      if (a.retry_after_s > policy.retry_after_max_s) break;
      pause = milliseconds(a.retry_after_s * 1000) +
              milliseconds(std::uniform_int_distribution<int>(0, 250)(random));
    } else {
      long long base = std::min<long long>(policy.backoff_cap.count(),
                                           policy.backoff_base.count() * (1LL << std::min(n, 20)));
      pause =
          milliseconds(base / 2 + std::uniform_int_distribution<long long>(0, base / 2)(random));
    }
    if (policy.total_limit.count() > 0 &&
        std::chrono::steady_clock::now() + pause - first > policy.total_limit) {
      break;
    }
    std::this_thread::sleep_for(pause);
  }
  record.outcome = KeyRecord::Outcome::kGaveUp;
}

}  // namespace gpurent::testing::chaos
