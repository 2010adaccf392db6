// Inventory end to end: the platform-admin gate on sites, nodes, images and prices; node
// topologies pasted from real `nvidia-smi topo -m` captures and declared from the interconnect;
// the node state machine over HTTP; image compatibility; the catalog; price history.
#include "tests/support/api_fixture.h"
#include "tests/support/paths.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace gpurent::testing::inventory_e2e {

using nlohmann::json;

constexpr const char* kNv6Fixture = "nccl-1617_4xH100_NV6.topo-m.txt";
constexpr const char* kPhbFixture = "nccl-1298_aws-g5.48xlarge_8xA10G_PHB.topo-m.txt";
constexpr const char* kPxbFixture = "nccl-667_4gpu_PXB_PIX_SYS.topo-m.txt";
constexpr const char* kL40sFixture = "linux-x86_64__nvidia-l40s__595.80.topo-m";
constexpr const char* kWindowsFixture =
    "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.topo-m";
constexpr const char* kUnknownNode = "nod_0123456789012345678901";
constexpr const char* kUnknownSite = "sit_0123456789012345678901";
constexpr const char* kUnknownImage = "img_0123456789012345678901";

std::string read_fixture(const std::string& name) {
  std::ifstream in(source_dir() + "/agent_proto/tests/fixtures/topo/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// Whether `text` contains `part`, for messages that only need to say why.
bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class InventoryE2E : public ApiTest {
 protected:
  // PUT …/topology with the text as the body, under the given Content-Type ("" = none).
  HttpResult put_topology(const Headers& h, const std::string& node_id, const std::string& text,
                          const std::string& content_type = "text/plain") {
    Headers headers = h;
    if (!content_type.empty()) headers["Content-Type"] = content_type;
    return http_request(port(), "PUT", "/v1/admin/nodes/" + node_id + "/topology", text, headers);
  }
  // ---- Database ----

  template <typename... Args>
  void exec(const std::string& sql, Args&&... args) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec_params(sql, std::forward<Args>(args)...);
    tx.commit();
  }
  template <typename... Args>
  long long count(const std::string& sql, Args&&... args) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec_params(sql, std::forward<Args>(args)...)[0][0].template as<long long>();
  }
  void set_state(const std::string& node_id, const std::string& state) {
    exec("UPDATE nodes SET state = $2 WHERE id = $1", node_id, state);
  }
  long long events_of(const std::string& node_id) {
    return count("SELECT count(*) FROM node_events WHERE node_id = $1", node_id);
  }
  long long audit_rows(const std::string& action, const std::string& target) {
    return count("SELECT count(*) FROM audit_log WHERE action = $1 AND target = $2", action,
                 target);
  }

  // ---- Inventory ----

  std::string create_site(const Headers& h, const std::string& name,
                          const std::string& timezone = "Europe/Moscow") {
    auto r = post("/v1/admin/sites",
                  {{"name", name}, {"region", "ru-central"}, {"timezone", timezone}}, h);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()["id"].get<std::string>() : "";
  }
  // POST /v1/admin/nodes; `extra` fields are merged into the body.
  HttpResult add_node(const Headers& h, const std::string& site_id, const std::string& hostname,
                      const std::string& model, int gpus, json extra = json::object()) {
    json body = {
        {"site_id", site_id}, {"hostname", hostname}, {"gpu_model", model}, {"gpu_count", gpus}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return post("/v1/admin/nodes", body, h);
  }
  // A node that must be created; returns its detail.
  json node(const Headers& h, const std::string& site_id, const std::string& hostname,
            const std::string& model, int gpus, json extra = json::object()) {
    auto r = add_node(h, site_id, hostname, model, gpus, std::move(extra));
    EXPECT_EQ(r.status, 201) << hostname << " " << r.body;
    return r.status == 201 ? r.json()["node"] : json::object();
  }
  json node_detail(const Headers& h, const std::string& id) {
    auto r = get("/v1/admin/nodes/" + id, h);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  HttpResult create_image(const Headers& h, const std::string& name, const std::string& driver,
                          const std::string& cuda) {
    return post("/v1/admin/images",
                {{"name", name},
                 {"os", "Ubuntu 22.04"},
                 {"driver_version", driver},
                 {"cuda_version", cuda},
                 {"frameworks", {"pytorch"}}},
                h);
  }

  static std::vector<std::string> strings(const json& items, const std::string& key) {
    std::vector<std::string> out;
    for (const auto& i : items) out.push_back(i[key].get<std::string>());
    return out;
  }
  static std::set<std::string> string_set(const json& items, const std::string& key) {
    auto v = strings(items, key);
    return {v.begin(), v.end()};
  }
  // Polls `probe` until it returns true, up to the shared generous limit (the catalog is
  // a cached snapshot).
  template <typename Probe>
  static bool eventually(Probe probe) {
    return wait_for(probe, kWaitLimit, std::chrono::milliseconds(20));
  }

  // `secret` (hex) is in no text of any row, nor inside any bytea value as bytes.
  void expect_nowhere_in_database(const std::string& secret) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    auto tables = tx.exec(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
    EXPECT_GT(tables.size(), 10u);
    for (const auto& t : tables) {
      std::string name = t[0].as<std::string>();
      auto hits = tx.exec_params(
          "SELECT count(*) FROM " + tx.quote_name(name) + " t WHERE strpos(t::text, $1) > 0",
          secret);
      EXPECT_EQ(hits[0][0].as<long long>(), 0) << "the secret is in table " << name;
    }
    auto bytea = tx.exec(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'public' AND data_type = 'bytea'");
    for (const auto& col : bytea) {
      std::string table = col[0].as<std::string>(), column = col[1].as<std::string>();
      auto hits =
          tx.exec_params("SELECT count(*) FROM " + tx.quote_name(table) + " WHERE position(" +
                             "convert_to($1, 'UTF8') IN " + tx.quote_name(column) + ") > 0",
                         secret);
      EXPECT_EQ(hits[0][0].as<long long>(), 0) << "the secret is in " << table << "." << column;
    }
  }

  static void expect_field_error(const HttpResult& r, int status, const std::string& field) {
    EXPECT_EQ(r.status, status) << r.body;
    if (r.body.empty()) return;
    auto error = r.json()["error"];
    if (status == 400) {
      EXPECT_EQ(error["code"], "invalid_request") << r.body;
    }
    EXPECT_EQ(error["details"]["field"], field) << r.body;
  }
};

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, EveryInventoryAdminRouteIs403ForOrgOwnersAnd401ForStrangers) {
  Login admin = platform_admin();
  Headers a = session(admin);
  std::string site = create_site(a, "Moscow-1");
  json n = node(a, site, "gate-node.example.net", "H100-PCIe-80GB", 4, {{"interconnect", "pcie"}});
  std::string node_id = n.value("id", "");
  // Available, so that any transition the gate let through would change something.
  set_state(node_id, "available");
  auto img = create_image(a, "gate-image", "550.54.15", "12.4");
  ASSERT_EQ(img.status, 201) << img.body;
  std::string image_id = img.json()["id"];
  json price_list =
      json::array({{{"gpu_model", "H100-PCIe-80GB"},
                    {"gpu_count", 4},
                    {"price_per_day", {{"amount_minor", 4000000}, {"currency", "RUB"}}}}});
  ASSERT_EQ(put("/v1/admin/prices", price_list, a).status, 200);

  Login owner = account("owner@example.com", "Alpha");
  auto [tok_id, owner_token] =
      token(session(owner), {"rentals:read", "rentals:write", "billing:read", "ssh-keys:write",
                             "members:write", "tokens:write"});

  struct Call {
    std::string method, path, body, content_type = "application/json";
  };
  std::string node_path = "/v1/admin/nodes/" + node_id;
  json cheaper = price_list;
  cheaper[0]["price_per_day"]["amount_minor"] = 1;
  std::vector<Call> calls = {
      {"GET", "/v1/admin/sites", ""},
      {"POST", "/v1/admin/sites",
       R"({"name": "Sneaky", "region": "x", "timezone": "Europe/Moscow"})"},
      {"GET", "/v1/admin/nodes", ""},
      {"GET", "/v1/admin/nodes?state=available&site_id=" + site, ""},
      {"POST", "/v1/admin/nodes",
       json({{"site_id", site},
             {"hostname", "sneaky.example.net"},
             {"gpu_model", "L4-24GB"},
             {"gpu_count", 1}})
           .dump()},
      {"GET", node_path, ""},
      {"PATCH", node_path, R"({"labels": {"owned": "yes"}, "hostname": "mine.example.net"})"},
      {"PUT", node_path + "/topology", read_fixture(kNv6Fixture), "text/plain"},
      {"POST", node_path + "/maintenance", R"({"reason": "mine now"})"},
      {"POST", node_path + "/drain", R"({"reason": "mine now"})"},
      {"POST", node_path + "/activate", R"({"reason": "mine now"})"},
      {"POST", node_path + "/retire", R"({"reason": "mine now"})"},
      {"GET", "/v1/admin/images", ""},
      {"POST", "/v1/admin/images",
       R"({"name": "sneaky", "os": "Ubuntu", "driver_version": "580.65.06", "cuda_version": "13.0"})"},
      {"POST", "/v1/admin/images/" + image_id + "/deprecate", ""},
      {"GET", "/v1/admin/prices", ""},
      {"PUT", "/v1/admin/prices", cheaper.dump()},
      {"PUT", "/v1/admin/prices", "[]"},
      // Authorisation comes before lookup and validation: nothing is revealed either.
      {"GET", std::string("/v1/admin/nodes/") + kUnknownNode, ""},
      {"POST", std::string("/v1/admin/nodes/") + kUnknownNode + "/retire", R"({"reason": "x"})"},
      {"POST", "/v1/admin/nodes", "{}"},
      {"POST", node_path + "/drain", "{}"},
      {"PUT", node_path + "/topology", "garbage", "text/plain"},
      {"GET", "/v1/admin/nodes?state=bogus", ""},
  };
  auto snapshot = [&] {
    std::map<std::string, long long> counts;
    for (const char* table : {"sites", "nodes", "gpus", "gpu_links", "node_events",
                              "node_enrollment_tokens", "images", "prices"}) {
      counts[table] = count(std::string("SELECT count(*) FROM ") + table);
    }
    counts["inventory audit"] =
        count("SELECT count(*) FROM audit_log WHERE action ~ '^(site|node|image|prices)\\.'");
    counts["deprecated images"] = count("SELECT count(*) FROM images WHERE status <> 'active'");
    counts["open prices"] = count("SELECT count(*) FROM prices WHERE valid_until IS NULL");
    return counts;
  };
  auto before = snapshot();
  json node_before = node_detail(a, node_id);

  for (const auto& c : calls) {
    SCOPED_TRACE(c.method + " " + c.path);
    auto with = [&](Headers h) {
      if (!c.body.empty() || c.method != "GET") h["Content-Type"] = c.content_type;
      return http_request(port(), c.method, c.path, c.body, h);
    };
    auto as_owner = with(session(owner));
    EXPECT_EQ(as_owner.status, 403) << as_owner.body;
    if (as_owner.status == 403) {
      EXPECT_EQ(as_owner.json()["error"]["code"], "forbidden");
    }
    auto as_token = with(bearer(owner_token));
    EXPECT_EQ(as_token.status, 403) << as_token.body;
    if (as_token.status == 403) {
      EXPECT_EQ(as_token.json()["error"]["code"], "forbidden");
    }
    auto stranger = with({});
    EXPECT_EQ(stranger.status, 401) << stranger.body;
    if (stranger.status == 401) {
      EXPECT_EQ(stranger.json()["error"]["code"], "unauthenticated");
    }
    EXPECT_EQ(with(bearer("gpr_" + std::string(64, 'a'))).status, 401);
  }

  EXPECT_EQ(snapshot(), before);
  json node_after = node_detail(a, node_id);
  EXPECT_EQ(node_after, node_before);
  EXPECT_EQ(node_after["state"], "available");
  EXPECT_EQ(node_after["topology_source"], "declared");
  EXPECT_EQ(get("/v1/admin/prices", a).json()["items"][0]["price_per_day"]["amount_minor"],
            4000000);
  // The platform admin's own session still works on the same routes.
  EXPECT_EQ(get("/v1/admin/sites", a).status, 200);
  EXPECT_EQ(get("/v1/admin/images", a).status, 200);
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, TopologyFixturesThroughTheApi) {
  Login admin = platform_admin();
  Headers a = session(admin);
  std::string site = create_site(a, "Moscow-1");
  std::string n4 =
      node(a, site, "h100-pcie.example.net", "H100-PCIe-80GB", 4, {{"interconnect", "pcie"}})
          .value("id", "");
  std::string n8 = node(a, site, "l40s-8.example.net", "L40S-48GB", 8).value("id", "");
  std::string n1 = node(a, site, "l40s-1.example.net", "L40S-48GB", 1).value("id", "");
  ASSERT_FALSE(n4.empty() || n8.empty() || n1.empty());
  json declared = node_detail(a, n4);  // kept: the loop reads into it
  for (const auto& l : declared["topology"]["links"]) {
    for (const auto& k : l) EXPECT_FALSE(k.get<std::string>().starts_with("NV")) << "pcie";
  }

  // 4×H100, every pair NV6; the NIC rows and columns are dropped.
  auto nv6 = put_topology(a, n4, read_fixture(kNv6Fixture));
  ASSERT_EQ(nv6.status, 200) << nv6.body;
  json got = node_detail(a, n4);
  EXPECT_EQ(nv6.json(), got);
  EXPECT_EQ(got["topology_source"], "admin");
  EXPECT_EQ(got["topology"]["gpus"], 4);
  ASSERT_EQ(got["topology"]["links"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(got["topology"]["links"][i].size(), 4u);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(got["topology"]["links"][i][j], i == j ? "X" : "NV6") << i << "," << j;
    }
  }
  EXPECT_EQ(got["gpu_count"], 4);
  EXPECT_EQ(got["state"], "enrolling") << "a topology is not a state change";
  auto audit = get("/v1/admin/audit?action=node.topology_set", a).json()["items"];
  ASSERT_EQ(audit.size(), 1u) << audit;
  EXPECT_EQ(audit[0]["target"], n4);
  EXPECT_EQ(audit[0]["actor_user_id"], admin.user_id);
  EXPECT_EQ(audit[0]["details"]["nvlink_pairs"], 6);

  // 8×A10G on one PCIe host bridge.
  auto phb = put_topology(a, n8, read_fixture(kPhbFixture));
  ASSERT_EQ(phb.status, 200) << phb.body;
  got = node_detail(a, n8);
  EXPECT_EQ(got["topology_source"], "admin");
  EXPECT_EQ(got["topology"]["gpus"], 8);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(got["topology"]["links"][i][j], i == j ? "X" : "PHB") << i << "," << j;
    }
  }

  // PCIe switches on two sockets, tab-separated: replaces the NV6 matrix exactly.
  auto pxb = put_topology(a, n4, read_fixture(kPxbFixture));
  ASSERT_EQ(pxb.status, 200) << pxb.body;
  json expected = {{"gpus", 4},
                   {"links",
                    {{"X", "PXB", "SYS", "SYS"},
                     {"PXB", "X", "SYS", "SYS"},
                     {"SYS", "SYS", "X", "PIX"},
                     {"SYS", "SYS", "PIX", "X"}}}};
  EXPECT_EQ(node_detail(a, n4)["topology"], expected);

  // A single GPU, header wrapped in ANSI escapes; the charset parameter is fine.
  auto single = put_topology(a, n1, read_fixture(kL40sFixture), "text/plain; charset=utf-8");
  ASSERT_EQ(single.status, 200) << single.body;
  EXPECT_EQ(single.json()["topology"], json({{"gpus", 1}, {"links", {{"X"}}}}));
  EXPECT_EQ(single.json()["topology_source"], "admin");

  // Text that is not a matrix: 400 naming the topology and saying why; nothing changes.
  json n4_before = node_detail(a, n4);
  long long audit_before = count("SELECT count(*) FROM audit_log");
  std::string nv6_text = read_fixture(kNv6Fixture);
  struct Bad {
    std::string what, text, reason;
  };
  std::vector<Bad> bad = {
      {"garbage", "hello, this is not nvidia-smi\n", "hello, this is not nvidia-smi"},
      {"windows error", read_fixture(kWindowsFixture), "Option -m is missing"},
      {"asymmetric",
       "\tGPU0\tGPU1\tGPU2\tGPU3\n"
       "GPU0\t X \tNV4\tSYS\tSYS\n"
       "GPU1\tNV4\t X \tSYS\tSYS\n"
       "GPU2\tSYS\tSYS\t X \tNV4\n"
       "GPU3\tSYS\tPIX\tNV4\t X \n",
       "not symmetric"},
      {"diagonal", "\tGPU0\tGPU1\nGPU0\tNV4\tNV4\nGPU1\tNV4\t X \n", "diagonal"},
      {"unknown kind", "\tGPU0\tGPU1\nGPU0\t X \tFAST\nGPU1\tFAST\t X \n", "FAST"},
      {"empty", "", "empty"},
      {"truncated", nv6_text.substr(0, nv6_text.find("\nGPU2") + 1), "row GPU2 is missing"},
      {"header only", "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\n", "GPU0 is missing"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    auto r = put_topology(a, n4, b.text);
    expect_field_error(r, 400, "topology");
    if (r.status != 400) continue;
    std::string reason = r.json()["error"]["details"].value("reason", "");
    EXPECT_TRUE(mentions(reason, b.reason)) << "reason: " << reason;
  }
  EXPECT_EQ(node_detail(a, n4), n4_before);

  // The right text for another node: the GPU count must match.
  json n8_before = node_detail(a, n8);
  auto mismatch = put_topology(a, n8, read_fixture(kNv6Fixture));
  expect_field_error(mismatch, 400, "topology");
  std::string why = mismatch.json()["error"]["details"].value("reason", "");
  EXPECT_TRUE(mentions(why, "4 GPUs") && mentions(why, "8")) << why;
  EXPECT_EQ(node_detail(a, n8), n8_before);
  auto mismatch1 = put_topology(a, n1, read_fixture(kPhbFixture));
  expect_field_error(mismatch1, 400, "topology");

  // Only text/plain: JSON (even a well-formed matrix) or no type at all names Content-Type.
  expect_field_error(put_topology(a, n4, read_fixture(kNv6Fixture), "application/json"), 400,
                     "Content-Type");
  expect_field_error(put_topology(a, n4, expected.dump(), "application/json"), 400, "Content-Type");
  expect_field_error(put_topology(a, n4, read_fixture(kNv6Fixture), ""), 400, "Content-Type");
  expect_field_error(put_topology(a, n4, read_fixture(kNv6Fixture), "text/html"), 400,
                     "Content-Type");
  EXPECT_EQ(node_detail(a, n4), n4_before);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log"), audit_before);

  for (std::string id : {std::string(kUnknownNode), std::string("nod_nope"), n4 + "x"}) {
    auto r = put_topology(a, id, read_fixture(kNv6Fixture));
    EXPECT_EQ(r.status, 404) << id << " " << r.body;
    if (r.status == 404) {
      EXPECT_EQ(r.json()["error"]["code"], "not_found");
    }
  }
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, DeclaredTopologiesFollowTheInterconnect) {
  Login admin = platform_admin();
  Headers a = session(admin);
  std::string site = create_site(a, "Moscow-1");
  auto links_of = [](const json& detail) {
    return detail["topology"]["links"].get<std::vector<std::vector<std::string>>>();
  };
  auto all_off_diagonal = [](const std::vector<std::vector<std::string>>& m,
                             const std::string& kind) {
    for (std::size_t i = 0; i < m.size(); ++i) {
      for (std::size_t j = 0; j < m.size(); ++j) {
        EXPECT_EQ(m[i][j], i == j ? "X" : kind) << i << "," << j;
      }
    }
  };

  json h100 = node(a, site, "hgx-h100.example.net", "H100-SXM5-80GB", 8);
  EXPECT_EQ(h100["interconnect"], "nvswitch") << "the HGX default";
  EXPECT_EQ(h100["topology_source"], "declared");
  EXPECT_EQ(h100["topology"]["gpus"], 8);
  ASSERT_EQ(links_of(h100).size(), 8u);
  all_off_diagonal(links_of(h100), "NV18");
  EXPECT_EQ(node_detail(a, h100["id"].get<std::string>())["topology"], h100["topology"])
      << "stored, not recomputed";

  json a100 = node(a, site, "hgx-a100.example.net", "A100-SXM4-80GB", 8);
  EXPECT_EQ(a100["interconnect"], "nvswitch");
  ASSERT_EQ(links_of(a100).size(), 8u);
  all_off_diagonal(links_of(a100), "NV12");

  json pairs = node(a, site, "a100-pcie.example.net", "A100-PCIe-80GB", 4,
                    {{"interconnect", "nvlink-pairs"}});
  EXPECT_EQ(pairs["interconnect"], "nvlink-pairs");
  auto p = links_of(pairs);
  ASSERT_EQ(p.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      SCOPED_TRACE(std::to_string(i) + "," + std::to_string(j));
      if (i == j) {
        EXPECT_EQ(p[i][j], "X");
      } else if (i / 2 == j / 2) {
        EXPECT_EQ(p[i][j], "NV4");
      } else {
        EXPECT_TRUE(p[i][j] == "NODE" || p[i][j] == "SYS") << p[i][j];
      }
      EXPECT_EQ(p[i][j], p[j][i]);
    }
  }
  EXPECT_EQ(p[0][1], "NV4");
  EXPECT_EQ(p[2][3], "NV4");
  EXPECT_FALSE(p[0][2].starts_with("NV")) << p[0][2];

  for (json extra : {json::object(), json({{"interconnect", "pcie"}})}) {
    json rtx = node(a, site, "rtx4090-" + std::to_string(extra.size()) + ".example.net",
                    "RTX4090-24GB", 8, extra);
    EXPECT_EQ(rtx["interconnect"], "pcie");
    auto m = links_of(rtx);
    ASSERT_EQ(m.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i) {
      for (std::size_t j = 0; j < 8; ++j) {
        if (i == j) {
          EXPECT_EQ(m[i][j], "X");
        } else {
          EXPECT_TRUE(m[i][j] == "NODE" || m[i][j] == "SYS") << i << "," << j << " " << m[i][j];
        }
      }
    }
  }

  // Shapes the model cannot physically have are refused, and no node is written.
  long long nodes_before = count("SELECT count(*) FROM nodes");
  expect_field_error(
      add_node(a, site, "l4-switch.example.net", "L4-24GB", 8, {{"interconnect", "nvswitch"}}), 400,
      "interconnect");
  expect_field_error(
      add_node(a, site, "l4-pairs.example.net", "L4-24GB", 2, {{"interconnect", "nvlink-pairs"}}),
      400, "interconnect");
  expect_field_error(add_node(a, site, "h100-pcie-switch.example.net", "H100-PCIe-80GB", 4,
                              {{"interconnect", "nvswitch"}}),
                     400, "interconnect");
  auto odd = add_node(a, site, "a100-odd.example.net", "A100-PCIe-80GB", 3,
                      {{"interconnect", "nvlink-pairs"}});
  EXPECT_EQ(odd.status, 400) << odd.body;
  EXPECT_EQ(odd.json()["error"]["code"], "invalid_request");
  expect_field_error(add_node(a, site, "a100-ib.example.net", "A100-SXM4-80GB", 8,
                              {{"interconnect", "infiniband"}}),
                     400, "interconnect");
  expect_field_error(add_node(a, site, "a100-upper.example.net", "A100-SXM4-80GB", 8,
                              {{"interconnect", "NVSwitch"}}),
                     400, "interconnect");
  EXPECT_EQ(count("SELECT count(*) FROM nodes"), nodes_before);
  EXPECT_EQ(count("SELECT count(*) FROM nodes WHERE hostname LIKE '%odd%'"), 0);
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, EveryAdminTransitionOverHttp) {
  Login admin = platform_admin();
  Headers a = session(admin);
  std::string site = create_site(a, "Moscow-1");
  const std::vector<std::string> states = {"enrolling", "available", "maintenance",
                                           "draining",  "failed",    "retired"};
  const std::vector<std::string> verbs = {"activate", "maintenance", "drain", "retire"};
  // The table of API.md / node_state.h, written out independently of it.
  auto expected = [](const std::string& from,
                     const std::string& verb) -> std::optional<std::string> {
    if (verb == "activate" && from == "maintenance") return "available";
    if (verb == "maintenance" && (from == "available" || from == "draining" || from == "failed"))
      return "maintenance";
    if (verb == "drain" && from == "available") return "draining";
    if (verb == "retire" && from != "retired") return "retired";
    return std::nullopt;
  };
  std::map<std::string, std::string> node_in;  // starting state -> node id
  for (const auto& s : states) {
    node_in[s] = node(a, site, "node-" + s + ".example.net", "L4-24GB", 2).value("id", "");
    ASSERT_FALSE(node_in[s].empty());
  }

  int allowed = 0, refused = 0;
  for (const auto& from : states) {
    for (const auto& verb : verbs) {
      SCOPED_TRACE(verb + " from " + from);
      const std::string& id = node_in[from];
      set_state(id, from);
      std::string reason = "ticket OPS-" + std::to_string(allowed + refused) + ": " + verb;
      long long events = events_of(id);
      long long audits = audit_rows("node." + verb, id);
      auto r = post("/v1/admin/nodes/" + id + "/" + verb, {{"reason", reason}}, a);
      auto to = expected(from, verb);
      if (to) {
        ++allowed;
        ASSERT_EQ(r.status, 200) << r.body;
        json d = r.json();
        EXPECT_EQ(d["id"], id);
        EXPECT_EQ(d["state"], *to);
        ASSERT_FALSE(d["events"].empty());
        json e = d["events"][0];
        EXPECT_EQ(e["action"], verb);
        EXPECT_EQ(e["from_state"], from);
        EXPECT_EQ(e["to_state"], *to);
        EXPECT_EQ(e["reason"], reason);
        EXPECT_EQ(e["actor_user_id"], admin.user_id);
        EXPECT_EQ(events_of(id), events + 1);
        EXPECT_EQ(count("SELECT count(*) FROM node_events WHERE node_id = $1 AND action = $2"
                        " AND from_state = $3 AND to_state = $4 AND reason = $5",
                        id, verb, from, *to, reason),
                  1);
        EXPECT_EQ(audit_rows("node." + verb, id), audits + 1);
        auto log = get("/v1/admin/audit?action=node." + verb, a);
        ASSERT_EQ(log.status, 200) << log.body;
        int matching = 0;
        json log_items = log.json()["items"];
        for (const auto& row : log_items) {
          if (row["target"] == id && row["details"]["reason"] == reason) {
            ++matching;
            EXPECT_EQ(row["actor_user_id"], admin.user_id);
            EXPECT_EQ(row["details"]["from"], from);
            EXPECT_EQ(row["details"]["to"], *to);
          }
        }
        EXPECT_EQ(matching, 1) << log.body;
        EXPECT_EQ(node_detail(a, id)["state"], *to);
      } else {
        ++refused;
        ASSERT_EQ(r.status, 409) << r.body;
        auto error = r.json()["error"];
        EXPECT_EQ(error["code"], "invalid_state");
        EXPECT_EQ(error["details"]["state"], from);
        EXPECT_EQ(error["details"]["action"], verb);
        EXPECT_EQ(events_of(id), events) << "a refused transition writes no event";
        EXPECT_EQ(audit_rows("node." + verb, id), audits);
        EXPECT_EQ(node_detail(a, id)["state"], from);
      }
    }
  }
  EXPECT_EQ(allowed, 10);
  EXPECT_EQ(refused, 14);

  // The reason is required, printable and not blank; nothing is written when it is bad.
  const std::string& id = node_in["available"];
  set_state(id, "available");
  long long events = events_of(id);
  for (const auto& verb : verbs) {
    SCOPED_TRACE(verb);
    std::string path = "/v1/admin/nodes/" + id + "/" + verb;
    expect_field_error(post(path, json::object(), a), 400, "reason");
    expect_field_error(post(path, {{"reason", "   "}}, a), 400, "reason");
    expect_field_error(post(path, {{"reason", ""}}, a), 400, "reason");
    expect_field_error(post(path, {{"reason", nullptr}}, a), 400, "reason");
    expect_field_error(post(path, {{"reason", 42}}, a), 400, "reason");
    expect_field_error(post(path, {{"reason", "bell\x07"}}, a), 400, "reason");
    expect_field_error(post(path, {{"reason", std::string(1001, 'r')}}, a), 400, "reason");
    expect_field_error(post(path, {{"reason", "ok"}, {"force", true}}, a), 400, "force");
    EXPECT_EQ(send("POST", path, "", a).status, 400);
    auto unknown = post("/v1/admin/nodes/" + std::string(kUnknownNode) + "/" + verb,
                        {{"reason", "no such node"}}, a);
    EXPECT_EQ(unknown.status, 404) << unknown.body;
  }
  EXPECT_EQ(events_of(id), events);
  EXPECT_EQ(node_detail(a, id)["state"], "available");
  // A reason of exactly 1000 characters is fine.
  auto longest = post("/v1/admin/nodes/" + id + "/drain", {{"reason", std::string(1000, 'r')}}, a);
  EXPECT_EQ(longest.status, 200) << longest.body.substr(0, 300);

  // System events have no route.
  set_state(id, "draining");
  for (std::string system : {"drained", "fail", "enrolled"}) {
    auto r = post("/v1/admin/nodes/" + id + "/" + system, {{"reason", "sneaky"}}, a);
    EXPECT_EQ(r.status, 404) << system << " " << r.body;
  }
  EXPECT_EQ(node_detail(a, id)["state"], "draining");
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, NodesCreateListAndPatch) {
  Login admin = platform_admin();
  Headers a = session(admin);

  // Sites: an IANA zone, a unique name whatever its case.
  std::string site_a = create_site(a, "Moscow-1");
  std::string site_b = create_site(a, "Novosibirsk-1", "Asia/Novosibirsk");
  expect_field_error(post("/v1/admin/sites",
                          {{"name", "Nowhere"}, {"region", "x"}, {"timezone", "Mars/Olympus"}}, a),
                     400, "timezone");
  auto dup_site = post("/v1/admin/sites",
                       {{"name", "MOSCOW-1"}, {"region", "x"}, {"timezone", "Europe/Moscow"}}, a);
  EXPECT_EQ(dup_site.status, 409) << dup_site.body;
  EXPECT_EQ(dup_site.json()["error"]["code"], "conflict");
  auto sites = get("/v1/admin/sites", a).json()["items"];
  EXPECT_EQ(strings(sites, "id"), (std::vector<std::string>{site_a, site_b}));
  EXPECT_EQ(sites[1]["timezone"], "Asia/Novosibirsk");

  // Create: the node, its GPUs, and a single-use enrolment token shown once.
  auto created = add_node(a, site_a, "gpu-a1.example.net", "H100-SXM5-80GB", 8,
                          {{"cpu_model", "Xeon 8480+"},
                           {"cpu_cores", 112},
                           {"ram_gb", 2048},
                           {"disk_gb", 30000},
                           {"labels", {{"rack", "r1"}}}});
  ASSERT_EQ(created.status, 201) << created.body;
  json body = created.json();
  std::string token = body.value("enrollment_token", "");
  EXPECT_TRUE(std::regex_match(token, std::regex("gpe_[0-9a-f]{64}"))) << token;
  EXPECT_GT(body.value("enrollment_token_expires_at", ""), body["node"].value("created_at", ""));
  json n1 = body["node"];
  std::string id1 = n1["id"];
  EXPECT_TRUE(id1.starts_with("nod_")) << id1;
  EXPECT_EQ(n1["site_id"], site_a);
  EXPECT_EQ(n1["hostname"], "gpu-a1.example.net");
  EXPECT_EQ(n1["gpu_model"], "H100-SXM5-80GB");
  EXPECT_EQ(n1["gpu_count"], 8);
  EXPECT_EQ(n1["interconnect"], "nvswitch");
  EXPECT_EQ(n1["cpu_model"], "Xeon 8480+");
  EXPECT_EQ(n1["cpu_cores"], 112);
  EXPECT_EQ(n1["ram_gb"], 2048);
  EXPECT_EQ(n1["disk_gb"], 30000);
  EXPECT_EQ(n1["labels"], json({{"rack", "r1"}}));
  EXPECT_EQ(n1["state"], "enrolling");
  EXPECT_EQ(n1["topology_source"], "declared");
  EXPECT_TRUE(n1["telemetry"].is_null());
  EXPECT_EQ(n1["rentals"], json::array());
  ASSERT_EQ(n1["gpus"].size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(n1["gpus"][i]["index"], i);
  ASSERT_EQ(n1["events"].size(), 1u);
  EXPECT_EQ(n1["events"][0]["to_state"], "enrolling");
  EXPECT_EQ(n1["events"][0]["actor_user_id"], admin.user_id);
  EXPECT_EQ(node_detail(a, id1), n1);

  // Only the token's SHA-256 is stored; the raw token is nowhere in the database.
  EXPECT_EQ(count("SELECT count(*) FROM node_enrollment_tokens WHERE node_id = $1 AND token_hash"
                  " = encode(sha256(convert_to($2, 'UTF8')), 'hex')",
                  id1, token),
            1);
  expect_nowhere_in_database(token.substr(4));
  EXPECT_FALSE(mentions(get("/v1/admin/nodes/" + id1, a).body, token.substr(4)));
  EXPECT_FALSE(mentions(get("/v1/admin/nodes", a).body, token.substr(4)));
  EXPECT_FALSE(mentions(get("/v1/admin/audit", a).body, token.substr(4)));

  std::string id2 = node(a, site_a, "gpu-a2.example.net", "L4-24GB", 1).value("id", "");
  std::string id3 = node(a, site_b, "gpu-b1.example.net", "H100-SXM5-80GB", 8).value("id", "");
  // A retried create (Idempotency-Key) replays the first answer, token included, and makes
  // one node; the replay cache does not keep the token readable either.
  Headers keyed = a;
  keyed["Idempotency-Key"] = "create-gpu-b2";
  auto first_try = add_node(keyed, site_b, "gpu-b2.example.net", "T4-16GB", 4);
  ASSERT_EQ(first_try.status, 201) << first_try.body;
  auto retry = add_node(keyed, site_b, "gpu-b2.example.net", "T4-16GB", 4);
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.body, first_try.body);
  std::string id4 = first_try.json()["node"]["id"];
  std::string token4 = first_try.json()["enrollment_token"];
  EXPECT_EQ(count("SELECT count(*) FROM nodes WHERE lower(hostname) = 'gpu-b2.example.net'"), 1);
  expect_nowhere_in_database(token4.substr(4));
  ASSERT_FALSE(id2.empty() || id3.empty() || id4.empty());

  // Refusals write nothing.
  long long nodes_before = count("SELECT count(*) FROM nodes");
  auto dup = add_node(a, site_b, "GPU-A1.Example.NET", "L4-24GB", 1);
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(dup.json()["error"]["code"], "conflict");
  expect_field_error(add_node(a, kUnknownSite, "new-1.example.net", "L4-24GB", 1), 400, "site_id");
  expect_field_error(add_node(a, "nope", "new-2.example.net", "L4-24GB", 1), 400, "site_id");
  expect_field_error(add_node(a, site_a, "new-3.example.net", "H100", 1), 400, "gpu_model");
  expect_field_error(add_node(a, site_a, "new-5.example.net", "L4-24GB", 1, {{"gpus", 1}}), 400,
                     "gpus");
  expect_field_error(add_node(a, site_a, "new-6.example.net", "L4-24GB", 0), 400, "gpu_count");
  expect_field_error(add_node(a, site_a, "bad host!", "L4-24GB", 1), 400, "hostname");
  EXPECT_EQ(count("SELECT count(*) FROM nodes"), nodes_before);
  EXPECT_EQ(count("SELECT count(*) FROM node_enrollment_tokens"), nodes_before);

  // Filters and paging.
  set_state(id1, "available");
  set_state(id2, "maintenance");
  set_state(id3, "available");
  auto ids_of = [&](const std::string& query) {
    auto r = get("/v1/admin/nodes" + query, a);
    EXPECT_EQ(r.status, 200) << query << " " << r.body;
    EXPECT_TRUE(r.json()["next_cursor"].is_null());
    return strings(r.json()["items"], "id");
  };
  using Ids = std::vector<std::string>;
  EXPECT_EQ(ids_of(""), (Ids{id1, id2, id3, id4}));
  EXPECT_EQ(ids_of("?state=available"), (Ids{id1, id3}));
  EXPECT_EQ(ids_of("?site_id=" + site_a), (Ids{id1, id2}));
  EXPECT_EQ(ids_of("?gpu_model=H100-SXM5-80GB"), (Ids{id1, id3}));
  EXPECT_EQ(ids_of("?site_id=" + site_b + "&state=available"), (Ids{id3}));
  EXPECT_EQ(ids_of("?gpu_model=T4-16GB&state=enrolling"), (Ids{id4}));
  EXPECT_EQ(ids_of("?state=failed"), Ids{});
  EXPECT_EQ(ids_of("?site_id=" + std::string(kUnknownSite)), Ids{});
  EXPECT_EQ(ids_of("?gpu_model=nope"), Ids{});
  expect_field_error(get("/v1/admin/nodes?state=bogus", a), 400, "state");
  expect_field_error(get("/v1/admin/nodes?state=Available", a), 400, "state");
  expect_field_error(get("/v1/admin/nodes?site_id=nope", a), 400, "site_id");
  expect_field_error(get("/v1/admin/nodes?hostname=x", a), 400, "hostname");
  expect_field_error(get("/v1/admin/nodes?limit=0", a), 400, "limit");
  expect_field_error(get("/v1/admin/nodes?cursor=nope", a), 400, "cursor");
  EXPECT_EQ(strings(walk("/v1/admin/nodes", a, 1), "id"), (Ids{id1, id2, id3, id4}));
  EXPECT_EQ(strings(walk("/v1/admin/nodes", a, 3), "id"), (Ids{id1, id2, id3, id4}));
  EXPECT_EQ(strings(walk("/v1/admin/nodes?state=available", a, 1), "id"), (Ids{id1, id3}));
  EXPECT_EQ(strings(walk("/v1/admin/nodes?site_id=" + site_b, a, 1), "id"), (Ids{id3, id4}));
  // A list item is the node without its detail (GPUs, links, events).
  json listed = get("/v1/admin/nodes?gpu_model=T4-16GB", a).json()["items"][0];
  json detail = node_detail(a, id4);
  for (auto& [key, value] : listed.items()) EXPECT_EQ(value, detail[key]) << key;
  EXPECT_FALSE(listed.contains("gpus"));

  // PATCH: hostname, labels and hardware facts; null clears an optional fact.
  auto p = patch("/v1/admin/nodes/" + id2,
                 {{"hostname", "l4-renamed.example.net"},
                  {"labels", {{"pool", "inference"}, {"rack", "r12"}}},
                  {"cpu_cores", 32},
                  {"ram_gb", 256}},
                 a);
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(p.json()["hostname"], "l4-renamed.example.net");
  EXPECT_EQ(p.json()["labels"], json({{"pool", "inference"}, {"rack", "r12"}}));
  EXPECT_EQ(p.json()["cpu_cores"], 32);
  EXPECT_EQ(p.json()["ram_gb"], 256);
  EXPECT_EQ(p.json()["state"], "maintenance") << "PATCH does not touch the state";
  EXPECT_EQ(node_detail(a, id2), p.json());
  auto cleared = patch("/v1/admin/nodes/" + id2, {{"cpu_cores", nullptr}}, a);
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_TRUE(cleared.json()["cpu_cores"].is_null());
  EXPECT_EQ(cleared.json()["ram_gb"], 256) << "absent fields are left";
  EXPECT_EQ(cleared.json()["hostname"], "l4-renamed.example.net");
  EXPECT_EQ(cleared.json()["labels"], json({{"pool", "inference"}, {"rack", "r12"}}));
  auto relabel = patch("/v1/admin/nodes/" + id2, {{"labels", json::object()}}, a);
  ASSERT_EQ(relabel.status, 200) << relabel.body;
  EXPECT_EQ(relabel.json()["labels"], json::object()) << "labels are replaced, not merged";
  auto noop = patch("/v1/admin/nodes/" + id2, json::object(), a);
  ASSERT_EQ(noop.status, 200) << noop.body;
  EXPECT_EQ(noop.json(), relabel.json());
  auto audit = get("/v1/admin/audit?action=node.updated", a).json()["items"];
  EXPECT_EQ(audit.size(), 3u) << audit;

  json before = node_detail(a, id2);
  auto taken = patch("/v1/admin/nodes/" + id2, {{"hostname", "GPU-B1.example.net"}}, a);
  EXPECT_EQ(taken.status, 409) << taken.body;
  EXPECT_EQ(taken.json()["error"]["code"], "conflict");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"gpu_count", 2}}, a), 400, "gpu_count");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"state", "available"}}, a), 400, "state");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"bogus", 1}}, a), 400, "bogus");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"ram_gb", 64}, {"site_id", site_b}}, a), 400,
                     "site_id");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"cpu_cores", 0}}, a), 400, "cpu_cores");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"labels", {{"Rack", "x"}}}}, a), 400,
                     "labels");
  // A node always has a hostname and a label set: null is refused, not silently ignored.
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"hostname", nullptr}}, a), 400, "hostname");
  expect_field_error(patch("/v1/admin/nodes/" + id2, {{"labels", nullptr}}, a), 400, "labels");
  EXPECT_EQ(node_detail(a, id2), before);
  // Renaming to its own name in another case is not a conflict with itself.
  auto recase = patch("/v1/admin/nodes/" + id2, {{"hostname", "L4-RENAMED.example.net"}}, a);
  EXPECT_EQ(recase.status, 200) << recase.body;

  for (std::string bad : {std::string(kUnknownNode), std::string("nod_x"), std::string("x")}) {
    EXPECT_EQ(get("/v1/admin/nodes/" + bad, a).status, 404) << bad;
    EXPECT_EQ(patch("/v1/admin/nodes/" + bad, {{"ram_gb", 1}}, a).status, 404) << bad;
  }
}

// The port engineers reach a node's sshd on is a field of the node (1 to 65535, 22 unless
// given), set on create and patch, shown in every view; out of range, of another type, null
// on a patch, or as the old `ssh_port` label, it is refused naming the field.
TEST_F(InventoryE2E, TheSshPortIsANodeFieldOnCreatePatchAndView) {
  Login admin = platform_admin();
  Headers a = session(admin);
  std::string site = create_site(a, "Port-1");

  json plain = node(a, site, "port-plain.example.net", "L4-24GB", 1);
  EXPECT_EQ(plain["ssh_port"], 22) << "the default";
  EXPECT_TRUE(plain["ssh_probe_key"].is_null()) << "no agent has reported a probe key";
  json custom = node(a, site, "port-custom.example.net", "L4-24GB", 1, {{"ssh_port", 2222}});
  std::string id = custom["id"];
  EXPECT_EQ(custom["ssh_port"], 2222);
  EXPECT_EQ(node_detail(a, id)["ssh_port"], 2222);
  json listed;
  json items = get("/v1/admin/nodes", a).json()["items"];
  for (const auto& item : items) {
    if (item["id"] == id) listed = item;
  }
  EXPECT_EQ(listed["ssh_port"], 2222) << "the list shows it too";
  EXPECT_EQ(
      node(a, site, "port-null.example.net", "L4-24GB", 1, {{"ssh_port", nullptr}})["ssh_port"], 22)
      << "null on create is the default";

  long long nodes_before = count("SELECT count(*) FROM nodes");
  for (const json& bad : {json(0), json(-22), json(65536), json("2222"), json(22.5), json(true)}) {
    SCOPED_TRACE(bad.dump());
    expect_field_error(add_node(a, site, "port-bad.example.net", "L4-24GB", 1, {{"ssh_port", bad}}),
                       400, "ssh_port");
    expect_field_error(patch("/v1/admin/nodes/" + id, {{"ssh_port", bad}}, a), 400, "ssh_port");
  }
  expect_field_error(patch("/v1/admin/nodes/" + id, {{"ssh_port", nullptr}}, a), 400, "ssh_port");
  // The label that used to carry the port is refused, not silently ignored.
  expect_field_error(add_node(a, site, "port-label.example.net", "L4-24GB", 1,
                              {{"labels", {{"ssh_port", "2200"}}}}),
                     400, "labels.ssh_port");
  expect_field_error(patch("/v1/admin/nodes/" + id, {{"labels", {{"ssh_port", "2200"}}}}, a), 400,
                     "labels.ssh_port");
  EXPECT_EQ(count("SELECT count(*) FROM nodes"), nodes_before);
  EXPECT_EQ(node_detail(a, id)["ssh_port"], 2222) << "refusals change nothing";

  auto p = patch("/v1/admin/nodes/" + id, {{"ssh_port", 65535}}, a);
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(p.json()["ssh_port"], 65535);
  EXPECT_EQ(node_detail(a, id), p.json());
  auto other = patch("/v1/admin/nodes/" + id, {{"labels", {{"rack", "r1"}}}}, a);
  ASSERT_EQ(other.status, 200) << other.body;
  EXPECT_EQ(other.json()["ssh_port"], 65535) << "a patch that does not name it keeps it";
  auto low = patch("/v1/admin/nodes/" + id, {{"ssh_port", 1}}, a);
  ASSERT_EQ(low.status, 200) << low.body;
  EXPECT_EQ(low.json()["ssh_port"], 1);
  EXPECT_EQ(count("SELECT count(*) FROM nodes WHERE id = $1 AND ssh_port = 1", id), 1);
  auto audit = get("/v1/admin/audit?action=node.updated", a).json()["items"];
  ASSERT_EQ(audit.size(), 3u) << audit;
  EXPECT_EQ(audit[0]["details"]["fields"], json({"ssh_port"})) << audit;
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, ImagesCompatibilityAndDeprecation) {
  Login admin = platform_admin();
  Headers a = session(admin);
  Login owner = account("owner@example.com", "Alpha");

  auto old_driver = create_image(a, "cuda-12.4-old-driver", "535.104.05", "12.4");
  EXPECT_EQ(old_driver.status, 422) << old_driver.body;
  EXPECT_EQ(old_driver.json()["error"]["code"], "incompatible_image");
  std::string reason = old_driver.json()["error"]["details"].value("reason", "");
  EXPECT_TRUE(mentions(reason, "550.54.14")) << reason;
  EXPECT_EQ(count("SELECT count(*) FROM images"), 0);
  expect_field_error(create_image(a, "cuda-14", "999.1", "14.0"), 400, "cuda_version");
  expect_field_error(create_image(a, "cuda-bad", "580.65.06", "thirteen"), 400, "cuda_version");
  expect_field_error(create_image(a, "driver-bad", "latest", "13.0"), 400, "driver_version");
  EXPECT_EQ(count("SELECT count(*) FROM images"), 0);

  auto cuda13 = create_image(a, "cuda-13.0", "580.65.06", "13.0");
  ASSERT_EQ(cuda13.status, 201) << cuda13.body;
  json img13 = cuda13.json();
  EXPECT_TRUE(img13["id"].get<std::string>().starts_with("img_"));
  EXPECT_EQ(img13["status"], "active");
  EXPECT_TRUE(img13["deprecated_at"].is_null());
  EXPECT_EQ(img13["frameworks"], json::array({"pytorch"}));
  auto compat13 = img13["compatible_gpu_models"].get<std::set<std::string>>();
  EXPECT_FALSE(compat13.count("V100-SXM2-32GB")) << "CUDA 13 builds for Turing onwards";
  EXPECT_TRUE(compat13.count("T4-16GB"));
  EXPECT_TRUE(compat13.count("H100-SXM5-80GB"));
  EXPECT_EQ(compat13.size(), 12u);

  auto cuda118 = create_image(a, "cuda-11.8", "520.61.05", "11.8");
  ASSERT_EQ(cuda118.status, 201) << cuda118.body;
  auto compat118 = cuda118.json()["compatible_gpu_models"].get<std::set<std::string>>();
  for (std::string hopper :
       {"H100-SXM5-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H200-SXM5-141GB"}) {
    EXPECT_FALSE(compat118.count(hopper)) << hopper << " needs R525";
  }
  EXPECT_TRUE(compat118.count("A100-SXM4-80GB"));
  EXPECT_TRUE(compat118.count("V100-SXM2-32GB"));

  auto dup = create_image(a, "CUDA-13.0", "580.65.06", "13.0");
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(dup.json()["error"]["code"], "conflict");
  EXPECT_EQ(count("SELECT count(*) FROM images"), 2);

  // Both are offered to any caller, with what they run on.
  std::string id13 = img13["id"], id118 = cuda118.json()["id"];
  auto listed = [&](const Headers& h) {
    auto r = get("/v1/images", h);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? string_set(r.json()["items"], "id") : std::set<std::string>{};
  };
  EXPECT_TRUE(eventually([&] { return listed(session(owner)).size() == 2; }));
  json paged = walk("/v1/images", session(owner), 1);
  EXPECT_EQ(paged.size(), 2u);
  EXPECT_EQ(string_set(paged, "id"), (std::set<std::string>{id13, id118}));
  json offered = get("/v1/images", session(owner)).json()["items"];
  for (const auto& i : offered) {
    if (i["id"] == id13) {
      EXPECT_EQ(i["compatible_gpu_models"], img13["compatible_gpu_models"]);
      EXPECT_EQ(i["driver_version"], "580.65.06");
      EXPECT_EQ(i["cuda_version"], "13.0");
    }
  }

  auto dep = post("/v1/admin/images/" + id118 + "/deprecate", json::object(), a);
  ASSERT_EQ(dep.status, 200) << dep.body;
  EXPECT_EQ(dep.json()["status"], "deprecated");
  EXPECT_TRUE(dep.json()["deprecated_at"].is_string());
  EXPECT_TRUE(eventually([&] { return listed(session(owner)) == std::set<std::string>{id13}; }))
      << get("/v1/images", session(owner)).body;
  auto admin_list = get("/v1/admin/images", a);
  ASSERT_EQ(admin_list.status, 200) << admin_list.body;
  bool seen = false;
  json admin_items = admin_list.json()["items"];
  for (const auto& i : admin_items) {
    if (i["id"] == id118) {
      seen = true;
      EXPECT_EQ(i["status"], "deprecated");
      EXPECT_EQ(i["deprecated_at"], dep.json()["deprecated_at"]);
    } else {
      EXPECT_EQ(i["status"], "active");
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(admin_list.json()["items"].size(), 2u);

  auto again = post("/v1/admin/images/" + id118 + "/deprecate", json::object(), a);
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.json()["error"]["code"], "invalid_state");
  EXPECT_EQ(post("/v1/admin/images/" + std::string(kUnknownImage) + "/deprecate", json::object(), a)
                .status,
            404);
  EXPECT_EQ(post("/v1/admin/images/nope/deprecate", json::object(), a).status, 404);
  auto audit = get("/v1/admin/audit?action=image.deprecated", a).json()["items"];
  ASSERT_EQ(audit.size(), 1u) << audit;
  EXPECT_EQ(audit[0]["target"], id118);
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, GpuModelsForAnyAuthenticatedCaller) {
  Login owner = account("owner@example.com", "Alpha");
  Login viewer = member_of(owner, "viewer", "viewer@example.com");
  auto [tok_id, bare_token] = token(session(owner), {"rentals:read"});
  exec("UPDATE api_tokens SET scopes = '{}' WHERE id = $1", tok_id);
  auto me = get("/v1/me", bearer(bare_token));
  ASSERT_EQ(me.status, 200) << me.body;
  EXPECT_EQ(me.json()["scopes"], json::array());

  for (const auto& [who, h] : std::vector<std::pair<std::string, Headers>>{
           {"viewer", session(viewer)}, {"token without scopes", bearer(bare_token)}}) {
    SCOPED_TRACE(who);
    auto r = get("/v1/gpu-models", h);
    ASSERT_EQ(r.status, 200) << r.body;
    auto items = r.json()["items"];
    EXPECT_TRUE(r.json()["next_cursor"].is_null());
    ASSERT_EQ(items.size(), 13u) << items;
    std::map<std::string, json> by_name;
    for (const auto& m : items) by_name[m["name"]] = m;
    ASSERT_EQ(by_name.size(), 13u);
    for (const auto& m : items) {
      for (const char* key : {"name", "vendor", "architecture", "compute_capability", "vram_gb",
                              "memory_bandwidth_gbps", "bf16", "fp8", "nvlink", "tdp_w"}) {
        EXPECT_TRUE(m.contains(key)) << m["name"] << " lacks " << key;
      }
    }
    EXPECT_EQ(by_name["T4-16GB"]["bf16"], false);
    EXPECT_EQ(by_name["T4-16GB"]["fp8"], false);
    EXPECT_EQ(by_name["H100-SXM5-80GB"]["fp8"], true);
    EXPECT_EQ(by_name["H100-SXM5-80GB"]["bf16"], true);
    EXPECT_EQ(by_name["H100-SXM5-80GB"]["architecture"], "Hopper");
    EXPECT_EQ(by_name["H100-SXM5-80GB"]["compute_capability"], "9.0");
    EXPECT_EQ(by_name["A100-SXM4-80GB"]["fp8"], false);
    EXPECT_EQ(by_name["A100-SXM4-80GB"]["bf16"], true);
    EXPECT_EQ(by_name["V100-SXM2-32GB"]["compute_capability"], "7.0");
    EXPECT_TRUE(by_name["L4-24GB"]["nvlink"].is_null());
    EXPECT_FALSE(by_name["H100-SXM5-80GB"]["nvlink"].is_null());
    EXPECT_EQ(get("/v1/images", h).status, 200);

    auto names = strings(items, "name");
    auto paged = strings(walk("/v1/gpu-models", h, 5), "name");
    EXPECT_EQ(paged, names) << "limit=5 visits every model once, in the same order";
    EXPECT_EQ(strings(walk("/v1/gpu-models", h, 1), "name"), names);
    EXPECT_EQ(strings(walk("/v1/gpu-models", h, 13), "name"), names);
    auto first = get("/v1/gpu-models?limit=5", h).json();
    EXPECT_EQ(first["items"].size(), 5u);
    EXPECT_FALSE(first["next_cursor"].is_null());
  }

  auto stranger = get("/v1/gpu-models", {});
  EXPECT_EQ(stranger.status, 401) << stranger.body;
  EXPECT_EQ(stranger.json()["error"]["code"], "unauthenticated");
  EXPECT_EQ(get("/v1/gpu-models?limit=5", {}).status, 401);
  EXPECT_EQ(get("/v1/gpu-models", bearer("gpr_" + std::string(64, 'a'))).status, 401);
  EXPECT_EQ(get("/v1/images", {}).status, 401);
  expect_field_error(get("/v1/gpu-models?limit=0", bearer(bare_token)), 400, "limit");
  expect_field_error(get("/v1/gpu-models?sort=name", bearer(bare_token)), 400, "sort");
}

// ---------------------------------------------------------------------------------------------

TEST_F(InventoryE2E, PricesReplaceAndKeepHistory) {
  Login admin = platform_admin();
  Headers a = session(admin);
  auto price = [](const std::string& model, int count, long long amount,
                  const std::string& currency = "RUB") {
    return json{{"gpu_model", model},
                {"gpu_count", count},
                {"price_per_day", {{"amount_minor", amount}, {"currency", currency}}}};
  };
  // The items without valid_from, in GET order (model, then count).
  auto shapes = [](const json& items) {
    json out = json::array();
    for (auto item : items) {
      EXPECT_TRUE(item.contains("valid_from")) << item;
      item.erase("valid_from");
      out.push_back(item);
    }
    return out;
  };
  auto current = [&] {
    auto r = get("/v1/admin/prices", a);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.json()["next_cursor"].is_null());
    return r.json()["items"];
  };
  EXPECT_EQ(current(), json::array());

  json first =
      json::array({price("A100-SXM4-80GB", 8, 9600000), price("H100-SXM5-80GB", 8, 16000000),
                   price("H100-SXM5-80GB", 1, 2100000), price("L4-24GB", 1, 150000)});
  auto put1 = put("/v1/admin/prices", first, a);
  ASSERT_EQ(put1.status, 200) << put1.body;
  json sorted_first = json::array({first[0], first[2], first[1], first[3]});
  EXPECT_EQ(shapes(put1.json()["items"]), sorted_first);
  json after_first = current();
  EXPECT_EQ(after_first, put1.json()["items"]);
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 4);

  // One price changed, one shape dropped, one kept as it was.
  json second =
      json::array({price("A100-SXM4-80GB", 8, 9600000), price("H100-SXM5-80GB", 8, 15000000),
                   price("H100-SXM5-80GB", 1, 2100000)});
  auto put2 = put("/v1/admin/prices", json{{"items", second}}, a);
  ASSERT_EQ(put2.status, 200) << put2.body;
  json after_second = current();
  EXPECT_EQ(shapes(after_second), json::array({second[0], second[2], second[1]}));
  EXPECT_EQ(after_second[0]["valid_from"], after_first[0]["valid_from"])
      << "an unchanged price keeps its row";
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 5) << "the change adds a row";
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE valid_until IS NOT NULL"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE valid_until IS NULL"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE gpu_model = 'L4-24GB' AND valid_until IS NOT"
                  " NULL AND amount_minor = 150000"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE gpu_model = 'H100-SXM5-80GB' AND gpu_count ="
                  " 8 AND amount_minor = 16000000 AND valid_until IS NOT NULL"),
            1);
  auto audit = get("/v1/admin/audit?action=prices.set", a).json()["items"];
  EXPECT_EQ(audit.size(), 2u) << audit;

  // What GET printed can be PUT back as it is: nothing changes, nothing is written.
  auto same = put("/v1/admin/prices", get("/v1/admin/prices", a).json()["items"], a);
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(current(), after_second);
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 5);

  // Refusals leave the list and the table as they were.
  struct Bad {
    std::string what;
    json body;
    std::string field;
  };
  std::vector<Bad> bad = {
      {"USD", json::array({price("H100-SXM5-80GB", 8, 15000000, "USD")}),
       "items[0].price_per_day.currency"},
      {"unknown model", json::array({price("H100", 8, 15000000)}), "items[0].gpu_model"},
      {"unknown model later",
       json::array({price("H100-SXM5-80GB", 8, 1), price("B200-SXM6-192GB", 8, 1)}),
       "items[1].gpu_model"},
      {"duplicate shape",
       json::array({price("H100-SXM5-80GB", 8, 15000000), price("H100-SXM5-80GB", 8, 14000000)}),
       "items[1].gpu_model"},
      {"zero", json::array({price("H100-SXM5-80GB", 8, 0)}), "items[0].price_per_day.amount_minor"},
      {"negative", json::array({price("H100-SXM5-80GB", 8, -5)}),
       "items[0].price_per_day.amount_minor"},
      {"fraction",
       json::array({{{"gpu_model", "L4-24GB"},
                     {"gpu_count", 1},
                     {"price_per_day", {{"amount_minor", 1.5}, {"currency", "RUB"}}}}}),
       "items[0].price_per_day.amount_minor"},
      {"no price", json::array({{{"gpu_model", "L4-24GB"}, {"gpu_count", 1}}}),
       "items[0].price_per_day"},
      {"count", json::array({price("L4-24GB", 0, 1)}), "items[0].gpu_count"},
      {"unknown field", json::array({[&] {
         json p = price("L4-24GB", 1, 1);
         p["discount"] = 5;
         return p;
       }()}),
       "items[0].discount"},
      {"not a list", json{{"gpu_model", "L4-24GB"}}, "gpu_model"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    expect_field_error(put("/v1/admin/prices", b.body, a), 400, b.field);
    EXPECT_EQ(current(), after_second);
    EXPECT_EQ(count("SELECT count(*) FROM prices"), 5);
  }
  EXPECT_EQ(get("/v1/admin/audit?action=prices.set", a).json()["items"].size(), 2u);

  // An empty list withdraws every price; the history stays.
  auto none = put("/v1/admin/prices", json::array(), a);
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(current(), json::array());
  EXPECT_EQ(count("SELECT count(*) FROM prices"), 5);
  EXPECT_EQ(count("SELECT count(*) FROM prices WHERE valid_until IS NULL"), 0);
}

// ---------------------------------------------------------------------------------------------
// Deviations from the contract found while writing the tests above; each fails until fixed.

// BUG: API.md "Conventions" says every list takes ?limit= and ?cursor=; GET /v1/admin/images
// and GET /v1/admin/prices answer {items, next_cursor} but refuse both with 400 (their
// handlers build QueryParams with no known parameters), so a client paging every list alike
// breaks on these two.
TEST_F(InventoryE2E, AdminImageAndPriceListsTakeLimitAndCursorLikeEveryList) {
  Login admin = platform_admin();
  Headers a = session(admin);
  for (std::string name : {"img-a", "img-b", "img-c"}) {
    ASSERT_EQ(create_image(a, name, "580.65.06", "13.0").status, 201);
  }
  json prices = json::array();
  for (int n : {1, 2, 4}) {
    prices.push_back({{"gpu_model", "L4-24GB"},
                      {"gpu_count", n},
                      {"price_per_day", {{"amount_minor", 100000 * n}, {"currency", "RUB"}}}});
  }
  ASSERT_EQ(put("/v1/admin/prices", prices, a).status, 200);
  for (std::string path : {"/v1/admin/images", "/v1/admin/prices"}) {
    SCOPED_TRACE(path);
    auto all = get(path, a);
    ASSERT_EQ(all.status, 200) << all.body;
    ASSERT_EQ(all.json()["items"].size(), 3u);
    auto page = get(path + "?limit=1", a);
    EXPECT_EQ(page.status, 200) << "BUG: a list must take ?limit= (API.md Conventions); got "
                                << page.body;
    if (page.status != 200) continue;
    EXPECT_EQ(page.json()["items"].size(), 1u);
    EXPECT_FALSE(page.json()["next_cursor"].is_null());
    EXPECT_EQ(walk(path, a, 1), all.json()["items"]);
  }
}

// BUG: PUT /v1/admin/nodes/{id}/topology compares the media type case-sensitively, so
// `Content-Type: Text/Plain` is 400 naming Content-Type, while JSON routes accept
// `Application/JSON`. Media types are case-insensitive (RFC 9110 section 8.3.1).
TEST_F(InventoryE2E, TopologyMediaTypeIsCaseInsensitiveLikeJson) {
  Login admin = platform_admin();
  Headers a = session(admin);
  Headers json_mixed_case = a;
  json_mixed_case["Content-Type"] = "Application/JSON";
  auto site =
      http_request(port(), "POST", "/v1/admin/sites",
                   R"({"name": "Moscow-1", "region": "ru", "timezone": "UTC"})", json_mixed_case);
  ASSERT_EQ(site.status, 201) << "JSON routes match the media type case-insensitively";
  std::string id = node(a, site.json()["id"], "l40s.example.net", "L40S-48GB", 1).value("id", "");
  for (std::string type : {"Text/Plain", "TEXT/PLAIN; charset=UTF-8"}) {
    auto r = put_topology(a, id, read_fixture(kL40sFixture), type);
    EXPECT_EQ(r.status, 200) << "BUG: Content-Type " << type << " is text/plain; got " << r.body;
  }
}

}  // namespace gpurent::testing::inventory_e2e
