// The platform the storm books on, set up through the public and admin API as an operator
// and customers would: a platform admin, a site, an image, a price for one GPU, nodes with
// enrolment tokens (written as gpurent-fleetsim's --enroll-from file), and customer orgs,
// each funded and with an API token that may book.
#pragma once

#include <string>
#include <vector>

namespace gpurent::testing::chaos {

inline constexpr const char* kModel = "H100-SXM5-80GB";
inline constexpr long long kDayPriceMinor = 100'000;

struct Platform {
  std::string image_id;
  std::vector<std::string> node_ids;
  std::vector<std::string> org_ids;
  std::vector<std::string> tokens;  // one per org, scopes rentals:write and rentals:read
};

// Against the replica on `port`, on the database at `url` (where the admin flag and the
// top-ups are set, as an operator does in SQL). Throws std::runtime_error naming the step
// that failed, with the answer.
Platform set_up_platform(int port, const std::string& url, int nodes, int orgs,
                         const std::string& enroll_file);

}  // namespace gpurent::testing::chaos
