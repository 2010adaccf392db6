// A small Redfish responder for the BMC client's tests: one ComputerSystem in the DMTF shape on
// 127.0.0.1 (plain HTTP, or HTTPS with a throwaway self-signed certificate made at start), its
// ComputerSystem.Reset action with HTTP Basic auth, and faults on demand (slow answers, 500s).
// Never a real BMC: what it answers is what the DMTF schema describes, written here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpurent::testing {

struct RedfishResponderOptions {
  bool tls = false;
  std::string username = "admin";
  std::string password = "responder-secret";
  std::string system_id = "node-7";
  // Where the system says its reset action is; a vendor's own path by default, so a client
  // that builds the DMTF path itself instead of following the system's answer fails.
  std::string reset_target = "/redfish/v1/Systems/node-7/Actions/Vendor/ComputerSystem.Reset";
  std::vector<std::string> allowable = {
      "On",  "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart",
      "Nmi", "ForceOn",  "PushPowerButton",  "PowerCycle"};
  std::string power_state = "On";
  // How long a restart (PowerCycle, ForceRestart, GracefulRestart) stays "PoweringOn".
  std::chrono::milliseconds restart_delay = std::chrono::milliseconds(150);
};

// One request the responder saw.
struct RedfishRequest {
  std::string method;
  std::string target;
  std::string authorization;
  std::string body;
};

class RedfishResponder {
 public:
  explicit RedfishResponder(RedfishResponderOptions options = {});
  ~RedfishResponder();
  RedfishResponder(const RedfishResponder&) = delete;
  RedfishResponder& operator=(const RedfishResponder&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT".
  std::string base_url() const;
  // The certificate's SHA-256 fingerprint (lowercase hex) and its PEM file; TLS only.
  std::string certificate_fingerprint() const { return fingerprint_; }
  std::string certificate_file() const { return cert_dir_ + "/bmc.crt"; }

  // Every answer waits this long first (a BMC that hangs); zero: none.
  void delay_answers(std::chrono::milliseconds delay);
  // Every answer is this status with a Redfish error body (500: a BMC failing); 0: normal.
  void fail_with(int status);

  std::string power_state();
  std::vector<std::string> accepted_resets();  // ResetType of each accepted POST, in order
  std::vector<RedfishRequest> requests();

 private:
  struct Reply {
    int status;
    std::string body;
  };
  void accept_loop();
  void serve(int fd);
  Reply answer(const RedfishRequest& request);
  std::string system_body();
  void settle_locked();  // ends a restart whose delay has passed

  RedfishResponderOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::string cert_dir_;
  std::string fingerprint_;
  void* ssl_ctx_ = nullptr;  // SSL_CTX*, kept out of this header

  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::chrono::milliseconds delay_{0};
  int fail_status_ = 0;
  std::string power_state_;
  std::chrono::steady_clock::time_point powering_on_until_{};
  std::vector<std::string> accepted_;
  std::vector<RedfishRequest> requests_;
  std::vector<std::thread> connections_;
  std::thread accept_thread_;
};

}  // namespace gpurent::testing
