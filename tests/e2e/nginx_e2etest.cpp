// Two replicas behind a real nginx serving deploy/nginx/gpurent.conf: TLS at nginx, the
// client's address and scheme carried to gpurentd through trusted_proxies, a booking made
// through it, and a replica stopped under load without a request failing.
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/tls_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

namespace gpurent::testing::nginx_e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A port free now on 127.0.0.1 (bound and released; nginx takes it a moment later).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `text` with every `from` replaced; fails the test when there is none, so the deployed
// file cannot drift from what this test serves.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "deploy/nginx/gpurent.conf no longer has: " << from;
  for (; at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class NginxE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    make_test_certificate(dir_, "proxy");
    server_ = replica();  // replica A: ApiTest's own server, for the setup through the API
    replica_b_ = replica();
    start_nginx();
  }
  void TearDown() override {
    if (nginx_) {
      EXPECT_EQ(nginx_->stop(SIGQUIT), 0) << read(dir_ + "/error.log");
    }
    nginx_.reset();
    replica_b_.reset();
    server_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<ServerProcess> replica() {
    return std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--trusted_proxies=127.0.0.1"}});
  }

  // deploy/nginx/gpurent.conf with this test's replicas, ports and certificate, inside the
  // smallest nginx.conf that runs it in the foreground as one process.
  void start_nginx() {
    std::string site = read(source_dir() + "/deploy/nginx/gpurent.conf");
    site = replaced(site, "server 10.0.1.11:8080", "server 127.0.0.1:" + std::to_string(port()));
    site = replaced(site, "server 10.0.1.12:8080",
                    "server 127.0.0.1:" + std::to_string(replica_b_->port()));
    site = replaced(site, "listen 443 ssl http2;",
                    "listen 127.0.0.1:" + std::to_string(https_port_) + " ssl http2;");
    site = replaced(site, "listen [::]:443 ssl http2;", "");
    site = replaced(site, "listen 80;", "listen 127.0.0.1:" + std::to_string(free_port()) + ";");
    site = replaced(site, "listen [::]:80;", "");
    site = replaced(site, "/etc/ssl/gpurent/cp.example.com.crt", dir_ + "/proxy.crt");
    site = replaced(site, "/etc/ssl/gpurent/cp.example.com.key", dir_ + "/proxy.key");
    std::ofstream(dir_ + "/gpurent.conf") << site;
    std::ofstream(dir_ + "/nginx.conf")
        << "master_process off;\ndaemon off;\npid " << dir_ << "/nginx.pid;\nerror_log " << dir_
        << "/error.log info;\nevents { worker_connections 256; }\nhttp {\n  access_log " << dir_
        << "/access.log;\n  client_body_temp_path " << dir_ << "/body;\n  proxy_temp_path " << dir_
        << "/proxy;\n  fastcgi_temp_path " << dir_ << "/fastcgi;\n  uwsgi_temp_path " << dir_
        << "/uwsgi;\n  scgi_temp_path " << dir_ << "/scgi;\n  include " << dir_
        << "/gpurent.conf;\n}\n";
    nginx_ = std::make_unique<ChildProcess>(
        "/usr/sbin/nginx", std::vector<std::string>{"-c", dir_ + "/nginx.conf", "-p", dir_},
        dir_ + "/nginx.out");
    bool up = wait_for([&] {
      try {
        TlsConnection probe(https_port_, client());
        return true;
      } catch (const std::runtime_error&) {
        return false;
      }
    });
    ASSERT_TRUE(up) << read(dir_ + "/nginx.out") << read(dir_ + "/error.log");
  }

  TlsClientOptions client(const std::string& from = "") {
    return {.ca_file = dir_ + "/proxy.crt", .host_name = "localhost", .source_address = from};
  }
  // A request through nginx, over TLS, from `from`.
  HttpResult proxied(const std::string& method, const std::string& path,
                     const nlohmann::json& body = nullptr, Headers headers = {},
                     const std::string& from = "") {
    std::string text = body.is_null() ? "" : body.dump();
    if (!text.empty()) headers.emplace("Content-Type", "application/json");
    return https_request(https_port_, client(from), method, path, text, headers);
  }
  // Access-log lines of `server` for requests carrying `request_id`.
  static std::string lines_of(const ServerProcess& server, const std::string& request_id) {
    std::string out, logs = server.logs();
    std::size_t at = 0;
    while ((at = logs.find(request_id, at)) != std::string::npos) {
      std::size_t start = logs.rfind('\n', at) + 1, end = logs.find('\n', at);
      out += logs.substr(start, end - start) + "\n";
      at = end;
    }
    return out;
  }

  std::string dir_ = make_temp_dir("gpurent-nginx");
  int https_port_ = free_port();
  std::unique_ptr<ServerProcess> replica_b_;
  std::unique_ptr<ChildProcess> nginx_;
};

TEST_F(NginxE2E, ABookingOverTlsThroughNginxKnowsTheClientsAddressAndScheme) {
  seed_fleet({1, 2});
  add_node("nginx-node-1");
  auto signup = proxied("POST", "/v1/auth/signup",
                        {{"email", "ci@example.com"}, {"password", kPassword}, {"org_name", "CI"}});
  ASSERT_EQ(signup.status, 201) << signup.body;
  fund(signup.json()["org"]["id"], kAmpleFunds);

  // The client connects from 127.0.0.3; nginx reaches the replicas from 127.0.0.1, which
  // they trust to say who the client is and that it came over TLS.
  auto login =
      proxied("POST", "/v1/auth/login", {{"email", "ci@example.com"}, {"password", kPassword}},
              {{"X-Request-Id", "nginx-e2e-login"}}, "127.0.0.3");
  ASSERT_EQ(login.status, 200) << login.body;
  EXPECT_NE(login.header("set-cookie").find("; Secure"), std::string::npos)
      << login.header("set-cookie");
  EXPECT_EQ(login.header("strict-transport-security"), "max-age=31536000");
  std::string seen =
      lines_of(*server_, "nginx-e2e-login") + lines_of(*replica_b_, "nginx-e2e-login");
  EXPECT_NE(seen.find("127.0.0.3"), std::string::npos) << "the access log line: " << seen;

  std::string cookie = login.header("set-cookie").substr(0, login.header("set-cookie").find(';'));
  Headers session{{"Cookie", cookie}, {"X-CSRF-Token", login.json()["csrf_token"]}};
  Headers booking = session;
  booking.emplace("Idempotency-Key", "nginx-e2e-booking-1");
  auto booked = proxied("POST", "/v1/rentals",
                        {{"gpu_model", kModel},
                         {"gpu_count", 2},
                         {"start", "now"},
                         {"days", 1},
                         {"image_id", image_id_}},
                        booking);
  ASSERT_EQ(booked.status, 201) << booked.body;
  auto shown =
      proxied("GET", "/v1/rentals/" + booked.json()["id"].get<std::string>(), nullptr, session);
  EXPECT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(shown.json()["gpu_count"], 2);

  // Metrics stay on the private network.
  EXPECT_EQ(proxied("GET", "/metrics").status, 404);
  EXPECT_EQ(proxied("GET", "/readyz").status, 200);
}

TEST_F(NginxE2E, OneReplicaStoppedUnderLoadFailsNoRequest) {
  seed_fleet({1});
  for (int i = 1; i <= 4; ++i) add_node("nginx-load-" + std::to_string(i));
  Login customer = account("load@example.com", "Load");
  Headers session = ApiTest::session(customer);

  std::atomic<bool> stop{false};
  std::atomic<int> served{0}, booked{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  auto load = [&](int client) {
    for (int i = 0; !stop; ++i) {
      try {
        HttpResult r;
        if (i % 4 == 3) {
          Headers h = session;
          h.emplace("Idempotency-Key", "load-" + std::to_string(client) + "-" + std::to_string(i));
          r = proxied("POST", "/v1/rentals",
                      {{"gpu_model", kModel},
                       {"gpu_count", 1},
                       {"start", "now"},
                       {"days", 1},
                       {"image_id", image_id_}},
                      h);
          if (r.status == 201) ++booked;
        } else {
          r = proxied("GET", "/v1/rentals", nullptr, session);
        }
        // 409: the fleet is full, an answer like any other. 5xx: a failed request.
        if (r.status >= 500) {
          std::lock_guard lock(failures_mutex);
          failures.push_back(std::to_string(r.status) + " " + r.body);
        }
        ++served;
      } catch (const std::exception& e) {
        std::lock_guard lock(failures_mutex);
        failures.push_back(e.what());
      }
    }
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) clients.emplace_back(load, c);

  ASSERT_TRUE(wait_for([&] { return served >= 30; })) << "no load got through";
  int before_stop = served;
  server_->send_signal(SIGTERM);
  int exit_code = server_->wait_exit(30s);
  int at_exit = served;
  wait_for([&] { return served >= at_exit + 30; });
  stop = true;
  for (auto& t : clients) t.join();

  EXPECT_EQ(exit_code, 0) << server_->logs();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, the first: " << failures.front();
  EXPECT_GE(served - at_exit, 30) << "the remaining replica served the load";
  EXPECT_GT(booked, 0);
  // Both replicas took part before the stop.
  auto access_lines = [](const ServerProcess& s) {
    std::string logs = s.logs();
    std::size_t n = 0;
    for (std::size_t at = 0; (at = logs.find("/v1/rentals", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_GT(access_lines(*server_), 0u);
  EXPECT_GT(access_lines(*replica_b_), 0u);
  std::cout << "served " << served << " requests (" << before_stop << " before the stop, "
            << served - at_exit << " after replica A exited), " << booked << " bookings\n";
}

}  // namespace gpurent::testing::nginx_e2e
