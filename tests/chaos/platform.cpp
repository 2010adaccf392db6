// set_up_platform over the tests' raw HTTP client.
#include "tests/chaos/platform.h"

#include "tests/support/funding.h"
#include "tests/support/http_client.h"
#include "tests/support/wait_for.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <fstream>
#include <map>
#include <stdexcept>

namespace gpurent::testing::chaos {
namespace {

using nlohmann::json;
using Headers = std::map<std::string, std::string>;
constexpr const char* kPassword = "a good passphrase";

HttpResult call(int port, const std::string& method, const std::string& path, const json& body,
                Headers h) {
  h["Content-Type"] = "application/json";
  return http_request(port, method, path, body.dump(), h);
}

json expect(const HttpResult& r, int status, const std::string& step) {
  if (r.status != status) {
    throw std::runtime_error(step + ": answered " + std::to_string(r.status) + " " + r.body);
  }
  return r.json();
}

struct Session {
  Headers headers;
  std::string user_id;
  std::string org_id;
};

Session log_in(int port, const std::string& email) {
  auto r = call(port, "POST", "/v1/auth/login", {{"email", email}, {"password", kPassword}}, {});
  auto j = expect(r, 200, "login " + email);
  std::string cookie = r.header("set-cookie");
  return {
      {{"Cookie", cookie.substr(0, cookie.find(';'))}, {"X-CSRF-Token", j.value("csrf_token", "")}},
      j["user"].value("id", ""),
      j.value("current_org_id", "")};
}

Session sign_up(int port, const std::string& email, const std::string& org) {
  expect(call(port, "POST", "/v1/auth/signup",
              {{"email", email}, {"password", kPassword}, {"org_name", org}}, {}),
         201, "signup " + email);
  return log_in(port, email);
}

}  // namespace

Platform set_up_platform(int port, const std::string& url, int nodes, int orgs,
                         const std::string& enroll_file) {
  Platform p;
  Session admin = sign_up(port, "operator@chaos.test", "Operator");
  {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec_params("UPDATE users SET is_platform_admin = true WHERE id = $1", admin.user_id);
    tx.commit();
  }
  admin = log_in(port, "operator@chaos.test");
  // The server learns of the flag through the database's announcement, milliseconds later.
  HttpResult site;
  bool admitted = wait_for([&] {
    site = call(port, "POST", "/v1/admin/sites",
                {{"name", "Chaos DC"}, {"region", "test"}, {"timezone", "Europe/Moscow"}},
                admin.headers);
    return site.status != 403;
  });
  if (!admitted) throw std::runtime_error("the operator never became a platform admin");
  std::string site_id = expect(site, 201, "create the site")["id"];
  p.image_id = expect(call(port, "POST", "/v1/admin/images",
                           {{"name", "ubuntu-cuda-12.4"},
                            {"os", "Ubuntu 22.04"},
                            {"driver_version", "550.54.15"},
                            {"cuda_version", "12.4"}},
                           admin.headers),
                      201, "create the image")["id"];
  expect(call(port, "PUT", "/v1/admin/prices",
              json::array(
                  {{{"gpu_model", kModel},
                    {"gpu_count", 1},
                    {"price_per_day", {{"amount_minor", kDayPriceMinor}, {"currency", "RUB"}}}}}),
              admin.headers),
         200, "set the prices");
  std::ofstream file(enroll_file);
  file << "# node_id token\n";
  for (int i = 0; i < nodes; ++i) {
    auto node = expect(call(port, "POST", "/v1/admin/nodes",
                            {{"site_id", site_id},
                             {"hostname", "chaos-" + std::to_string(i)},
                             {"gpu_model", kModel},
                             {"gpu_count", 8}},
                            admin.headers),
                       201, "create a node");
    std::string id = node["node"]["id"];
    p.node_ids.push_back(id);
    file << id << ' ' << node["enrollment_token"].get<std::string>() << '\n';
  }
  file.close();
  for (int i = 0; i < orgs; ++i) {
    Session customer = sign_up(port, "customer" + std::to_string(i) + "@chaos.test",
                               "Customer " + std::to_string(i));
    {
      pqxx::connection c(url);
      fund_org(c, customer.org_id, kAmpleFunds);
    }
    auto token = expect(
        call(port, "POST", "/v1/api-tokens",
             {{"name", "storm"}, {"scopes", {"rentals:write", "rentals:read"}}}, customer.headers),
        201, "create an API token");
    p.org_ids.push_back(customer.org_id);
    p.tokens.push_back(token["token"]);
  }
  return p;
}

}  // namespace gpurent::testing::chaos
