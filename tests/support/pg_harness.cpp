// TestCluster and TestDatabase over EmbeddedPostgres.
#include "tests/support/pg_harness.h"

#include "core/id.h"
#include "core/migrator.h"
#include "migrations/embedded_migrations.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace gpurent::testing {
namespace {

std::mutex g_mutex;
TestCluster* g_cluster = nullptr;

std::string lower_id() {
  std::string id = new_id("t");
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

}  // namespace

namespace {

std::string make_dir_in(const std::string& parent, const std::string& prefix) {
  std::string pattern = parent + "/" + prefix + "-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed under " + parent);
  chmod(pattern.c_str(), 0755);
  return pattern;
}

// A writable folder with at least `bytes` free.
bool has_room(const char* dir, unsigned long long bytes) {
  struct statvfs fs {};
  if (statvfs(dir, &fs) != 0 || access(dir, W_OK) != 0) return false;
  return static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize >= bytes;
}

}  // namespace

std::string make_temp_dir(const std::string& prefix) {
  return make_dir_in("/tmp", prefix);
}

std::string make_cluster_dir() {
  if (const char* parent = std::getenv("GPURENT_TEST_CLUSTER_PARENT"); parent && *parent) {
    return make_dir_in(parent, "gpurent-test");
  }
  // The template and a few test databases at a time are tens of megabytes; 2 GiB leaves
  // room for what a test writes.
  constexpr unsigned long long kRoom = 2ull << 30;
  return make_dir_in(has_room("/dev/shm", kRoom) ? "/dev/shm" : "/tmp", "gpurent-test");
}

class ClusterAccess {
 public:
  static TestCluster* create() {
    auto* c = new TestCluster();
    if (const char* state = std::getenv("GPURENT_TEST_STATE"); state && *state) {
      std::ifstream in(state);
      if (!in) throw std::runtime_error(std::string("test cluster state file missing: ") + state);
      auto j = nlohmann::json::parse(in);
      c->socket_dir_ = j.at("socket_dir").get<std::string>();
      return c;
    }
    // Run by hand: a cluster for this process only.
    std::string dir = make_cluster_dir();
    c->owned_dir_ = dir;
    c->owned_ = std::make_unique<EmbeddedPostgres>(EmbeddedPostgresOptions{
        .data_dir = dir + "/pg", .database = TestCluster::kTemplate, .durable = false});
    c->owned_->start();
    c->socket_dir_ = c->owned_->socket_dir();
    TestCluster::prepare_template(c->url("postgres"), c->url(TestCluster::kTemplate));
    return c;
  }
};

TestCluster& TestCluster::get() {
  std::lock_guard lock(g_mutex);
  if (!g_cluster) g_cluster = ClusterAccess::create();
  return *g_cluster;
}

void TestCluster::shutdown() {
  std::lock_guard lock(g_mutex);
  if (!g_cluster) return;
  std::string dir = g_cluster->owned_dir_;
  delete g_cluster;  // stops the cluster it owns
  g_cluster = nullptr;
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

std::string TestCluster::url(const std::string& database) const {
  return "postgresql://gpurent@/" + database + "?host=" + socket_dir_ + "&port=5432";
}

void TestCluster::prepare_template(const std::string& admin_url, const std::string& template_url) {
  Migrator(template_url, embedded_migrations()).migrate();
  // Clones need the template to have no connections; the migrator's has closed by now.
  pqxx::connection conn(admin_url);
  pqxx::nontransaction tx(conn);
  tx.exec("ALTER DATABASE " + tx.quote_name(kTemplate) + " WITH IS_TEMPLATE true");
}

TestDatabase::TestDatabase(Kind kind) : name_(lower_id()) {
  auto& cluster = TestCluster::get();
  pqxx::connection conn(cluster.url("postgres"));
  pqxx::nontransaction tx(conn);
  if (kind == Kind::kMigrated) {
    // FILE_COPY copies the template's files; PostgreSQL 15's default (WAL_LOG) writes them
    // through the WAL, 3x slower for a database this small, and there is one per test.
    tx.exec("CREATE DATABASE " + tx.quote_name(name_) + " TEMPLATE " +
            tx.quote_name(TestCluster::kTemplate) + " STRATEGY FILE_COPY");
  } else {
    tx.exec("CREATE DATABASE " + tx.quote_name(name_) + " TEMPLATE template0");
  }
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection conn(TestCluster::get().url("postgres"));
    pqxx::nontransaction tx(conn);
    tx.exec("DROP DATABASE IF EXISTS " + tx.quote_name(name_) + " WITH (FORCE)");
  } catch (const std::exception&) {
    // The cluster may already be gone (a test that stops it); nothing to clean then.
  }
}

std::string TestDatabase::url() const {
  return TestCluster::get().url(name_);
}

}  // namespace gpurent::testing
