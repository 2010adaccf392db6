// NodeHostKeys over a real database: each report replaces the node's keys, one per
// algorithm; the table refuses what is not a fingerprint; a node's removal takes its keys.
#include "inventory/node_host_keys.h"
#include "inventory/tests/inventory_fixture.h"

namespace gpurent::inventory {
namespace node_host_keys_pgtest {

const HostKey kEd25519{
    "ssh-ed25519",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
    {}};
const HostKey kEcdsa{"ecdsa-sha2-nistp256",
                     "ecdsa-sha2-nistp256 AAAAE2VjZHNh",
                     "SHA256:ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs",
                     {}};

class NodeHostKeysTest : public InventoryTest {
 protected:
  std::string new_node(const std::string& hostname) {
    return transact([&](Tx& tx) {
      return nodes_.create(tx, node(hostname, "L4-24GB", 2), admin_).node.node.id;
    });
  }
  std::vector<HostKey> keys(const std::string& node_id) {
    return transact([&](Tx& tx) { return host_keys_.list(tx, node_id); });
  }
  void report(const std::string& node_id, const std::vector<HostKey>& keys) {
    transact([&](Tx& tx) { host_keys_.replace(tx, node_id, keys); });
  }

  NodeHostKeys host_keys_{clock_};
};

TEST_F(NodeHostKeysTest, EachReportReplacesTheNodesKeys) {
  std::string a = new_node("gpu-a");
  std::string b = new_node("gpu-b");
  report(a, {kEd25519, kEcdsa, kEd25519});  // a second ed25519 key is ignored
  report(b, {kEcdsa});
  auto listed = keys(a);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].algorithm, "ecdsa-sha2-nistp256");  // by algorithm
  EXPECT_EQ(listed[1].public_key, kEd25519.public_key);
  EXPECT_EQ(listed[1].fingerprint, kEd25519.fingerprint);
  EXPECT_LE(listed[1].reported_at, clock_.now());
  EXPECT_GT(listed[1].reported_at, clock_.now() - std::chrono::minutes(1));

  report(a, {kEcdsa});
  ASSERT_EQ(keys(a).size(), 1u);
  report(a, {});
  EXPECT_TRUE(keys(a).empty());
  EXPECT_EQ(keys(b).size(), 1u) << "another node's keys are its own";
}

TEST_F(NodeHostKeysTest, TheTableRefusesWhatIsNotAFingerprint) {
  std::string a = new_node("gpu-a");
  HostKey bad = kEd25519;
  bad.fingerprint = "MD5:00:11";
  EXPECT_ANY_THROW(report(a, {bad}));
  EXPECT_TRUE(keys(a).empty());
}

}  // namespace node_host_keys_pgtest
}  // namespace gpurent::inventory
