// gpurent_test_cluster start|stop STATE_FILE: the CTest fixture around pg and e2e tests.
// start: initdb + start a cluster in a fresh /tmp folder, build the migrated template,
// record where it is in STATE_FILE. stop: stop it and remove the folder.
#include "core/embedded_postgres.h"
#include "core/log.h"
#include "tests/support/pg_harness.h"

#include <nlohmann/json.hpp>

#include <stdlib.h>
#include <cstdio>
#include <filesystem>
#include <fstream>

using gpurent::EmbeddedPostgres;
using gpurent::EmbeddedPostgresOptions;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpurent_test_cluster start|stop STATE_FILE\n");
    return 2;
  }
  std::string command = argv[1], state_file = argv[2];
  gpurent::log::init(gpurent::LogFormat::kText, "warn");
  try {
    if (command == "start") {
      std::string dir = gpurent::testing::make_cluster_dir();
      std::string data_dir = dir + "/pg";
      EmbeddedPostgres pg({.data_dir = data_dir,
                           .database = gpurent::testing::TestCluster::kTemplate,
                           .durable = false});
      pg.start();
      gpurent::testing::TestCluster::prepare_template(pg.url("postgres"), pg.url());
      std::ofstream(state_file) << nlohmann::json{{"root", dir},
                                                  {"data_dir", data_dir},
                                                  {"socket_dir", pg.socket_dir()}}
                                       .dump()
                                << "\n";
      pg.detach();  // leave it running for the tests
      std::printf("test cluster running in %s\n", dir.c_str());
      return 0;
    }
    if (command == "stop") {
      std::ifstream in(state_file);
      if (!in) return 0;  // nothing was started
      auto j = nlohmann::json::parse(in);
      {
        EmbeddedPostgres pg({.data_dir = j.at("data_dir").get<std::string>(),
                             .database = gpurent::testing::TestCluster::kTemplate});
        pg.start();  // adopts the running server
        pg.stop();
      }
      std::filesystem::remove_all(j.at("root").get<std::string>());
      std::filesystem::remove(state_file);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpurent_test_cluster %s: %s\n", command.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown command %s\n", command.c_str());
  return 2;
}
