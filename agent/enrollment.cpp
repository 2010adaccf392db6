// Enrolment: key and CSR here, the signature from POST /agent/v1/enroll.
#include "agent/enrollment.h"

#include "agent/channel.h"
#include "agent/key_request.h"
#include "agent/state_files.h"
#include "core/log.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

namespace gpurent::agent {

using nlohmann::json;

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "gpurent-agent";
  return name;
}

// The server's error body is {"error": {"message": …}}; anything else is quoted short.
std::string server_reason(const HttpsResponse& res) {
  auto body = json::parse(res.body, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_object() &&
      body["error"].contains("message") && body["error"]["message"].is_string()) {
    return body["error"]["message"].get<std::string>();
  }
  return res.body.substr(0, 200);
}

}  // namespace

std::string enroll(const EnrollOptions& options) {
  std::string ca_pem;
  try {
    ca_pem = read_state_file(options.ca_file);
  } catch (const StateError& e) {
    throw EnrollError(e.what());
  }
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) throw EnrollError("cannot make " + options.state_dir.string() + ": " + ec.message());
  // The key is kept here: nobody else on the node reads the folder.
  std::filesystem::permissions(options.state_dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  if (ec) throw EnrollError("cannot restrict " + options.state_dir.string() + ": " + ec.message());

  KeyAndRequest key;
  try {
    key = make_key_and_request(host_name());
  } catch (const KeyError& e) {
    throw EnrollError(e.what());
  }
  HttpsResponse res;
  try {
    res =
        https_post_json(options.url, ca_pem, "/agent/v1/enroll",
                        json{{"enrollment_token", options.token}, {"csr_pem", key.csr_pem}}.dump(),
                        std::chrono::seconds(30));
  } catch (const ChannelError& e) {
    throw EnrollError(e.what());
  }
  if (res.status != 200) {
    throw EnrollError("the control plane refused the enrolment (" + std::to_string(res.status) +
                      "): " + server_reason(res));
  }
  auto body = json::parse(res.body, nullptr, false);
  if (!body.is_object() || !body.contains("node_id") || !body["node_id"].is_string() ||
      !body.contains("certificate_pem") || !body["certificate_pem"].is_string()) {
    throw EnrollError("the control plane's enrolment answer is not one: " +
                      res.body.substr(0, 200));
  }
  std::string node_id = body["node_id"];
  if (body.contains("ca_pem") && body["ca_pem"].is_string() && body["ca_pem"] != ca_pem) {
    // The CA that signed the server's certificate signs ours too; another one is a setup
    // mistake the channel would fail on later with a vaguer error.
    throw EnrollError("the control plane's CA is not the one in " + options.ca_file.string());
  }
  try {
    StatePaths paths{options.state_dir};
    write_file_atomic(paths.key(), key.key_pem, 0600);
    write_file_atomic(paths.certificate(), body["certificate_pem"].get<std::string>(), 0644);
    write_file_atomic(paths.ca(), ca_pem, 0644);
    write_file_atomic(
        paths.node(),
        json{{"node_id", node_id}, {"host", options.url.host}, {"port", options.url.port}}.dump(2) +
            "\n",
        0644);
  } catch (const StateError& e) {
    throw EnrollError(e.what());
  }
  log::info("enrolled as node {}; state in {}", node_id, options.state_dir.string());
  return node_id;
}

}  // namespace gpurent::agent
