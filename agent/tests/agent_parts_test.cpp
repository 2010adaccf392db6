// The agent's small pure parts: the --url reader, reconnect backoff, the key and CSR.
#include "agent/backoff.h"
#include "agent/fault_schedule.h"
#include "agent/gpu_backend.h"
#include "agent/host_keys.h"
#include "agent/key_request.h"
#include "agent/server_url.h"

#include "agent_proto/health_rules.h"
#include "core/subprocess.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace gpurent::agent::agent_parts_test {

using std::chrono::milliseconds;

TEST(ServerUrl, TakesHttpsHostAndPort) {
  EXPECT_EQ(parse_server_url("https://cp.example.com:8443"),
            (ServerUrl{.host = "cp.example.com", .port = 8443}));
  EXPECT_EQ(parse_server_url("https://127.0.0.1:9000/"), (ServerUrl{"127.0.0.1", 9000}));
  EXPECT_EQ(parse_server_url("https://cp.example.com"), (ServerUrl{"cp.example.com", 443}));
  EXPECT_EQ(parse_server_url("https://[::1]:9000"), (ServerUrl{"::1", 9000}));
}

TEST(ServerUrl, RefusesAnythingElse) {
  for (const char* bad : {"http://cp:80", "cp:80", "https://", "https://:80",
                          "https://cp:", "https://cp:0", "https://cp:65536", "https://cp:80x",
                          "https://cp:80/agent", "https://user@cp", "https://[::1"}) {
    EXPECT_EQ(parse_server_url(bad), std::nullopt) << bad;
  }
}

TEST(Backoff, GrowsWithJitterUpToItsCeilingAndResets) {
  Backoff backoff(milliseconds(1000), milliseconds(8000), 42);
  std::vector<std::pair<int, int>> bounds = {{500, 1000},  {1000, 2000}, {2000, 4000},
                                             {4000, 8000}, {4000, 8000}, {4000, 8000}};
  for (auto [low, high] : bounds) {
    auto d = backoff.next().count();
    EXPECT_GE(d, low);
    EXPECT_LE(d, high);
  }
  backoff.reset();
  EXPECT_LE(backoff.next().count(), 1000);
}

TEST(Backoff, SpreadsAFleetThatFailedTogether) {
  std::set<long> first;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    first.insert(Backoff(milliseconds(1000), milliseconds(60000), seed).next().count());
  }
  EXPECT_GT(first.size(), 10u);
}

TEST(KeyRequest, MakesAP256KeyAndACsrSignedWithIt) {
  auto made = make_key_and_request("gpu-node-7");
  EXPECT_NE(made.key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  BIO* bio = BIO_new_mem_buf(made.csr_pem.data(), static_cast<int>(made.csr_pem.size()));
  X509_REQ* req = PEM_read_bio_X509_REQ(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(req, nullptr) << made.csr_pem;
  EVP_PKEY* key = X509_REQ_get0_pubkey(req);
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(X509_REQ_verify(req, key), 1) << "signed by its own key";
  char group[64] = {};
  size_t len = 0;
  EXPECT_EQ(EVP_PKEY_get_group_name(key, group, sizeof(group), &len), 1);
  EXPECT_STREQ(group, "prime256v1");
  char cn[128] = {};
  X509_NAME_get_text_by_NID(X509_REQ_get_subject_name(req), NID_commonName, cn, sizeof(cn));
  EXPECT_STREQ(cn, "gpu-node-7");
  X509_REQ_free(req);
  EXPECT_NE(make_key_and_request("x").key_pem, made.key_pem) << "a fresh key each time";
}

TEST(HostKeys, TheHostKeysSshdKeepsThatAHelloMayCarry) {
  namespace fs = std::filesystem;
  std::string pattern = (fs::temp_directory_path() / "gpurent-hostkeys-XXXXXX").string();
  fs::path dir = mkdtemp(pattern.data());
  for (const char* type : {"ed25519", "ecdsa"}) {
    std::string key = (dir / ("ssh_host_" + std::string(type) + "_key")).string();
    auto made = run_subprocess({"ssh-keygen", "-q", "-N", "", "-t", type, "-f", key});
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  std::ofstream(dir / "ssh_host_dsa_key.pub") << "ssh-dss AAAAB3NzaC1kc3MAAACBAP== root@x\n";
  std::ofstream(dir / "ssh_host_bad_key.pub") << "not a key\n";
  std::ofstream(dir / "authorized_keys.pub") << "ssh-ed25519 AAAA\n";  // not a host key file
  auto keys = read_ssh_host_keys(dir);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].rfind("ecdsa-sha2-nistp256 ", 0), 0u) << keys[0];  // by file name
  EXPECT_EQ(keys[1].rfind("ssh-ed25519 ", 0), 0u) << keys[1];
  std::ifstream pub(dir / "ssh_host_ed25519_key.pub");
  std::string line;
  std::getline(pub, line);
  EXPECT_EQ(keys[1], line);
  EXPECT_TRUE(read_ssh_host_keys(dir / "missing").empty());
  fs::remove_all(dir);
}

TEST(FaultSchedule, ReadsEveryKindOfFault) {
  using K = SimulatedFault::Kind;
  using std::chrono::minutes;
  using std::chrono::seconds;
  EXPECT_TRUE(parse_fault_schedule("").empty());
  EXPECT_EQ(parse_fault_schedule("xid79@30s:gpu1,dbe@2m:gpu2,thermal@500ms,hang@1h,"
                                 "slow-gpu@0s:gpu3,nvlink-down@10s:gpu1"),
            (std::vector<SimulatedFault>{
                {.kind = K::kXid, .at = seconds(30), .gpu = 1, .xid = 79},
                {.kind = K::kDoubleBitEcc, .at = minutes(2), .gpu = 2, .xid = 0},
                {.kind = K::kThermalSlowdown, .at = milliseconds(500), .gpu = 0, .xid = 0},
                {.kind = K::kHang, .at = minutes(60), .gpu = 0, .xid = 0},
                {.kind = K::kSlowGpu, .at = seconds(0), .gpu = 3, .xid = 0},
                {.kind = K::kNvlinkDown, .at = seconds(10), .gpu = 1, .xid = 0}}));
}

TEST(FaultSchedule, SaysWhichFaultDoesNotRead) {
  for (const char* bad : {"xid79", "xid@1s", "xid0@1s", "xid1000@1s", "xid79@", "xid79@1d",
                          "xid79@-1s", "xid79@1s:gpu", "xid79@1s:gpu64", "xid79@1s:1",
                          "hang@1s:gpu0", "fire@1s", "dbe@1s,", ",dbe@1s", "dbe@99999999h"}) {
    try {
      parse_fault_schedule(bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("fault \""), std::string::npos) << e.what();
    }
  }
}

TEST(FaultSchedule, TheSimulatedNodeSuffersItsFaultsWhenTheirTimeComes) {
  SimulatedNode node;
  node.faults = parse_fault_schedule("xid79@0s:gpu1,dbe@0s:gpu2,thermal@0s:gpu3,xid48@1h:gpu0");
  auto backend = make_simulated_backend(node);
  auto gpus = backend->telemetry();
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[2].ecc_volatile_dbe, 1);
  EXPECT_EQ(gpus[3].throttle_reasons, std::vector<std::string>{"hw_thermal_slowdown"});
  EXPECT_EQ(gpus[0].ecc_volatile_dbe, 0);
  EXPECT_TRUE(gpus[0].throttle_reasons.empty());
  auto events = backend->new_events();
  ASSERT_EQ(events.size(), 1u) << "the XID due in an hour has not happened";
  EXPECT_EQ(events[0].xid, 79);
  EXPECT_TRUE(agent_proto::same_pci_device(events[0].pci, *gpus[1].pci_bus_id)) << events[0].pci;
  EXPECT_TRUE(backend->new_events().empty()) << "logged once";
  EXPECT_FALSE(backend->hung());

  SimulatedNode hanging;
  hanging.faults = parse_fault_schedule("hang@0s");
  EXPECT_TRUE(make_simulated_backend(hanging)->hung());
}

}  // namespace gpurent::agent::agent_parts_test
