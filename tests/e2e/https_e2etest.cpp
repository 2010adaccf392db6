// The public listener's own HTTPS (tls_certificate, tls_key): what it offers and refuses,
// HSTS and Secure cookies over it, and a certificate renewed by SIGHUP without a dropped
// connection. Certificates are made by the `openssl` command, as an operator would.
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/tls_client.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace gpurent::testing::https_e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void make_certificate(const std::string& dir, const std::string& name) {
  ASSERT_NO_THROW(make_test_certificate(dir, name));
}

class HttpsE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    make_certificate(dir_, "first");
    make_certificate(dir_, "second");
    fs::copy_file(dir_ + "/first.crt", dir_ + "/server.crt");
    fs::copy_file(dir_ + "/first.key", dir_ + "/server.key");
    // The client trusts both, so a reload's new certificate verifies too.
    std::ofstream(dir_ + "/trusted.pem") << read(dir_ + "/first.crt") << read(dir_ + "/second.crt");
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--tls_certificate=" + dir_ + "/server.crt",
                                "--tls_key=" + dir_ + "/server.key"}});
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  TlsClientOptions client(int min_version = 0, int max_version = 0, std::string ciphers = "") {
    return {.ca_file = dir_ + "/trusted.pem",
            .host_name = "localhost",
            .min_version = min_version,
            .max_version = max_version,
            .tls12_ciphers = std::move(ciphers)};
  }
  long long metric(const std::string& name) {
    auto r = https_request(server_->port(), client(), "GET", "/metrics");
    std::string needle = "\n" + name + " ";
    auto at = r.body.find(needle);
    return at == std::string::npos ? -1 : std::stoll(r.body.substr(at + needle.size()));
  }

  TestDatabase db_;
  std::string dir_ = make_temp_dir("gpurent-https");
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(HttpsE2E, ServesTls13And12WithForwardSecretAeadSuitesAndRefusesTheRest) {
  TlsConnection modern(server_->port(), client());
  EXPECT_EQ(modern.version(), "TLSv1.3");
  ASSERT_TRUE(modern.send(build_request("GET", "/readyz")));
  auto ready = modern.read_response();
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.header("strict-transport-security"), "max-age=31536000");

  TlsConnection tls12(server_->port(), client(TLS1_2_VERSION, TLS1_2_VERSION));
  EXPECT_EQ(tls12.version(), "TLSv1.2");
  EXPECT_EQ(tls12.cipher().rfind("ECDHE-", 0), 0u) << tls12.cipher();
  ASSERT_TRUE(tls12.send(build_request("GET", "/healthz")));
  EXPECT_EQ(tls12.read_response().status, 200);

  // Key exchange without forward secrecy, CBC, and the versions before 1.2: no handshake.
  EXPECT_THROW(TlsConnection(server_->port(), client(TLS1_2_VERSION, TLS1_2_VERSION,
                                                     "AES128-GCM-SHA256:AES256-SHA")),
               std::runtime_error);
  EXPECT_THROW(
      TlsConnection(server_->port(), client(TLS1_2_VERSION, TLS1_2_VERSION,
                                            "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA")),
      std::runtime_error);
  EXPECT_THROW(TlsConnection(server_->port(), client(TLS1_VERSION, TLS1_1_VERSION, "ALL")),
               std::runtime_error);

  // Plain HTTP to the TLS port gets no HTTP answer, and the listener carries on.
  RawConnection plain(server_->port());
  ASSERT_TRUE(plain.send(build_request("GET", "/readyz")));
  std::string received;
  EXPECT_TRUE(plain.closed_within(15s, &received));
  EXPECT_EQ(received.find("HTTP/1.1"), std::string::npos) << received;

  EXPECT_EQ(https_request(server_->port(), client(), "GET", "/readyz").status, 200);
  EXPECT_GE(metric("gpurent_tls_handshake_failures_total"), 4);
  EXPECT_GT(metric("gpurent_tls_certificate_expiry_timestamp_seconds"),
            std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count());
}

TEST_F(HttpsE2E, SessionCookiesOverHttpsAreSecure) {
  auto json = [](const nlohmann::json& j) { return j.dump(); };
  auto signup = https_request(server_->port(), client(), "POST", "/v1/auth/signup",
                              json({{"email", "tls@example.com"},
                                    {"password", "a good passphrase"},
                                    {"org_name", "Encrypted"}}),
                              {{"Content-Type", "application/json"}});
  ASSERT_EQ(signup.status, 201) << signup.body;
  auto login =
      https_request(server_->port(), client(), "POST", "/v1/auth/login",
                    json({{"email", "tls@example.com"}, {"password", "a good passphrase"}}),
                    {{"Content-Type", "application/json"}});
  ASSERT_EQ(login.status, 200) << login.body;
  EXPECT_NE(login.header("set-cookie").find("; Secure"), std::string::npos)
      << login.header("set-cookie");
  EXPECT_EQ(login.header("strict-transport-security"), "max-age=31536000");
}

TEST_F(HttpsE2E, SighupReloadsTheCertificateForNewConnectionsWithoutDroppingOpenOnes) {
  TlsConnection open(server_->port(), client());
  const std::string first = open.certificate_fingerprint();
  ASSERT_TRUE(open.send(build_request("GET", "/readyz")));
  ASSERT_EQ(open.read_response().status, 200);

  // Renewal: the new files are moved into place, then the server is told.
  fs::copy_file(dir_ + "/second.crt", dir_ + "/server.crt.new");
  fs::copy_file(dir_ + "/second.key", dir_ + "/server.key.new");
  fs::rename(dir_ + "/server.crt.new", dir_ + "/server.crt");
  fs::rename(dir_ + "/server.key.new", dir_ + "/server.key");
  server_->send_signal(SIGHUP);
  std::string now;
  EXPECT_TRUE(wait_for([&] {
    now = TlsConnection(server_->port(), client()).certificate_fingerprint();
    return now != first;
  })) << server_->logs();
  EXPECT_EQ(metric("gpurent_tls_reloads_total"), 1);

  // The connection made before the reload is still served, with the certificate it began with.
  ASSERT_TRUE(open.send(build_request("GET", "/readyz")));
  EXPECT_EQ(open.read_response().status, 200);
  EXPECT_EQ(open.certificate_fingerprint(), first);

  // A renewal gone wrong (a key that is not the certificate's) leaves the one in service.
  fs::copy_file(dir_ + "/first.key", dir_ + "/server.key", fs::copy_options::overwrite_existing);
  server_->send_signal(SIGHUP);
  EXPECT_TRUE(wait_for([&] { return metric("gpurent_tls_reload_failures_total") == 1; }))
      << server_->logs();
  EXPECT_EQ(TlsConnection(server_->port(), client()).certificate_fingerprint(), now);
  EXPECT_NE(server_->logs().find("not reloaded"), std::string::npos) << server_->logs();
  EXPECT_EQ(server_->stop(), "");
}

TEST(HttpsConfigE2E, StartRefusesOneFileAloneAndAKeyThatIsNotTheCertificates) {
  std::string dir = make_temp_dir("gpurent-https-config");
  make_certificate(dir, "a");
  make_certificate(dir, "b");
  {
    ServerProcess alone({.flags = {"--tls_certificate=" + dir + "/a.crt"}, .wait_ready = false});
    EXPECT_EQ(alone.wait_exit(10s), 2);
    EXPECT_NE(alone.logs().find("must be set together"), std::string::npos) << alone.logs();
  }
  {
    TestDatabase db;
    ServerProcess mismatched(
        {.database_url = db.url(),
         .flags = {"--tls_certificate=" + dir + "/a.crt", "--tls_key=" + dir + "/b.key"},
         .wait_ready = false});
    EXPECT_EQ(mismatched.wait_exit(30s), 2);
    EXPECT_NE(mismatched.logs().find("is not the key of"), std::string::npos) << mismatched.logs();
  }
  fs::remove_all(dir);
}

}  // namespace gpurent::testing::https_e2e
