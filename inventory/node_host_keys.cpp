// NodeHostKeys: a delete and one insert of every key, in the hello's transaction.
#include "inventory/node_host_keys.h"

#include "core/pg_array.h"
#include "core/sql.h"

#include <set>

namespace gpurent::inventory {
namespace {

constexpr Statement kDelete = {"node_host_keys_delete",
                               "DELETE FROM node_ssh_host_keys WHERE node_id = $1"};
constexpr Statement kInsertHostKeys = {
    "node_host_keys_insert",
    "INSERT INTO node_ssh_host_keys"
    " (node_id, algorithm, public_key, fingerprint, reported_at, certificate)"
    " SELECT $1, a, k, f, $5, NULLIF(c, '')"
    " FROM unnest($2::text[], $3::text[], $4::text[], $6::text[]) AS t(a, k, f, c)"};
constexpr Statement kList = {
    "node_host_keys_list",
    "SELECT algorithm, public_key, fingerprint, " SQL_MICROS(
        "reported_at") ", coalesce(certificate, '') FROM node_ssh_host_keys WHERE node_id = $1"
                       " ORDER BY algorithm"};

// $1 the node ids (text[]).
constexpr Statement kListNodes = {
    "node_host_keys_list_nodes",
    "SELECT node_id, algorithm, public_key, fingerprint, " SQL_MICROS(
        "reported_at") ", coalesce(certificate, '') FROM node_ssh_host_keys"
                       " WHERE node_id = ANY ($1::text[]) ORDER BY node_id, algorithm"};

}  // namespace

void NodeHostKeys::replace(Tx& tx, const std::string& node_id, const std::vector<HostKey>& keys) {
  std::vector<std::string> algorithms, public_keys, fingerprints, certificates;
  std::set<std::string> seen;
  for (const auto& k : keys) {
    if (!seen.insert(k.algorithm).second) continue;
    algorithms.push_back(k.algorithm);
    public_keys.push_back(k.public_key);
    fingerprints.push_back(k.fingerprint);
    certificates.push_back(k.certificate);
  }
  tx.exec(kDelete, node_id);
  if (algorithms.empty()) return;
  tx.exec(kInsertHostKeys, node_id, pg_array_literal(algorithms), pg_array_literal(public_keys),
          pg_array_literal(fingerprints), sql_timestamp(clock_.now()),
          pg_array_literal(certificates));
}

std::vector<HostKey> NodeHostKeys::list(Tx& tx, const std::string& node_id) {
  std::vector<HostKey> out;
  for (const auto& row : tx.exec(kList, node_id)) {
    out.push_back({row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
                   read_timestamp(row[3]), row[4].as<std::string>()});
  }
  return out;
}

std::map<std::string, std::vector<HostKey>> NodeHostKeys::list(
    Tx& tx, const std::vector<std::string>& node_ids) {
  std::map<std::string, std::vector<HostKey>> out;
  if (node_ids.empty()) return out;
  for (const auto& row : tx.exec(kListNodes, pg_array_literal(node_ids))) {
    out[row[0].as<std::string>()].push_back({row[1].as<std::string>(), row[2].as<std::string>(),
                                             row[3].as<std::string>(), read_timestamp(row[4]),
                                             row[5].as<std::string>()});
  }
  return out;
}

}  // namespace gpurent::inventory
