// A booking as the CLI makes it (docs/cli.md, "Retries and idempotency"): one
// Idempotency-Key per booking, the same key and body on every attempt, up to five attempts;
// an attempt without an answer, a 5xx, a 429 or a 409 `conflict` is tried again after an
// exponential pause with equal jitter, or after the answer's Retry-After. Every attempt is
// recorded, with its status and headers, for the suite's figures and invariants.
#pragma once

#include <chrono>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace gpurent::testing::chaos {

using SteadyTime = std::chrono::steady_clock::time_point;

struct Attempt {
  int replica = 0;           // which replica it was sent to
  int status = 0;            // 0: no answer (refused, reset, closed, timed out)
  std::string error;         // why there was no answer, or the error code of the body
  bool retry_after = false;  // the answer had a Retry-After header
  int retry_after_s = 0;
  bool replayed = false;  // Idempotent-Replayed: true
  std::string rental_id;  // a 201's
  std::string body_head;  // the start of a non-2xx body, for the report
  bool late = false;      // the suite's check after the scenario, not the storm's
  SteadyTime start;
  SteadyTime end;
};

struct KeyRecord {
  enum class Outcome { kBooked, kRefused, kGaveUp };
  std::string key;  // also the rental's name, so the database can be asked per key
  int client = 0;
  std::string phase;
  std::string start;  // "now" or a date
  std::vector<Attempt> attempts;
  Outcome outcome = Outcome::kGaveUp;
  int final_status = 0;
  std::string final_code;
  std::set<std::string> rental_ids;  // every id a 201 for this key carried
};

struct BookingTarget {
  // The replicas' HTTP ports now (a replica that is down keeps its old port: refused).
  std::function<int(int replica)> port;
  int replicas = 2;
};

struct RetryPolicy {
  int attempts = 5;  // retries + 1, the CLI's default
  std::chrono::milliseconds read_timeout{30'000};
  // The CLI's pause before retry n: min(cap, base × 2^(n−1)), half fixed and half random.
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{10'000};
  int retry_after_max_s = 60;  // a longer Retry-After is not waited for
  // When set, no attempt starts later than this after the first (the late retries' bound).
  std::chrono::milliseconds total_limit{0};
};

// Runs `record`'s request until a definite answer or the attempts run out; attempt a goes to
// replica (first_replica + a) % replicas, as a load balancer moves a retry to another one.
void book_with_retries(KeyRecord& record, const std::string& token, const std::string& body,
                       const BookingTarget& target, const RetryPolicy& policy, int first_replica,
                       std::mt19937& random);

// Whether an attempt's answer is one the CLI tries again.
bool retried(const Attempt& a);

}  // namespace gpurent::testing::chaos
