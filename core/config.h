// Server configuration: defaults, then a file, then the environment, then flags.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace gpurent {

enum class LogFormat { kAuto, kText, kJson };

struct Config {
  // HTTP listener.
  std::string listen_host = "127.0.0.1";
  unsigned short listen_port = 8080;
  std::string port_file;  // when set, the bound port is written here (tests bind port 0)
  int io_threads = 2;
  int worker_threads = 4;
  std::size_t http_body_limit = 1024 * 1024;
  std::size_t http_header_limit = 16 * 1024;
  std::chrono::milliseconds http_read_timeout{10'000};
  std::chrono::milliseconds http_write_timeout{10'000};
  std::chrono::milliseconds http_idle_timeout{60'000};
  std::size_t http_pipeline_limit = 8;
  std::size_t http_max_connections = 1024;
  std::chrono::milliseconds shutdown_deadline{15'000};
  std::string web_root = "web/public";
  // HTTPS on the public listener: PEM files of the certificate (its chain after it) and its
  // key; both or neither. Set, the listener speaks TLS only (1.2 and 1.3, forward-secret
  // AEAD suites), and SIGHUP reloads both files without dropping a connection.
  std::string tls_certificate;
  std::string tls_key;
  // Strict-Transport-Security's max-age on responses to clients that came over TLS (here or
  // through a trusted proxy); 0 sends none.
  std::chrono::seconds hsts_max_age{std::chrono::hours(8760)};  // a year

  // Database. Empty database_url means: run an embedded PostgreSQL in data_dir.
  std::string database_url;
  std::string data_dir = "var/pg";
  int db_pool_size = 8;
  std::chrono::milliseconds db_pool_wait{2'000};
  std::chrono::milliseconds db_statement_timeout{10'000};
  bool migrate_on_start = true;

  // Identity. Lifetimes are whole seconds; session_idle never exceeds session_absolute.
  bool signup_enabled = true;
  std::chrono::seconds session_idle{12 * 3600};
  std::chrono::seconds session_absolute{7 * 24 * 3600};
  // scrypt's cost for new password hashes, as log2 of N (15: 32 MiB and tens of milliseconds
  // a hash). Below 15 only in test mode, where the suite signs in thousands of times; a hash
  // carries its own cost, so hashes made at any cost keep verifying.
  int password_hash_cost = 15;

  // Rate limits (requests a second, and the burst allowed above that); 0 disables one.
  int rate_limit_per_credential = 20;
  int rate_limit_burst_per_credential = 100;
  int rate_limit_per_ip = 50;
  int rate_limit_burst_per_ip = 200;
  // Reverse proxies whose X-Forwarded-For is believed (addresses and CIDR blocks, comma
  // separated); validated at parse time. Empty: the peer address is the client's.
  std::string trusted_proxies;
  std::string currency = "RUB";  // an ISO 4217 code of a currency in circulation
  // Billing (billing/): VAT in basis points (2000 is 20 %), whether the price list's amounts
  // include it, the discount tiers by length ("min_days:percent,…"), what an interruption
  // gives back, whose calendar months invoices and spend limits follow, and the payment
  // provider's webhook secret (empty: the webhook is off) and how old a signature may be.
  int vat_basis_points = 2000;
  bool prices_include_tax = true;
  std::string rental_discounts = "7:5,30:10";
  std::string sla_credit_policy = "lost_hours";
  // What a running rental's handover (a swap to a spare, a power action) credits.
  std::string handover_credit_policy = "lost_minutes";
  // The least notice a maintenance window gives a rental it takes: the tenant's time to
  // answer (another node, a shift, or cancel free) and to save its work.
  std::chrono::seconds maintenance_notice{72 * 3600};
  std::string billing_time_zone = "UTC";
  std::string payment_webhook_secret;
  std::chrono::seconds payment_webhook_tolerance{300};
  std::chrono::seconds enrollment_token_ttl{24 * 3600};
  // Kept free on a rental's GPUs after it ends, for the wipe and reimage before the next.
  std::chrono::seconds rental_cleaning_window{30 * 60};
  // How far ahead a booking may start, and how far the search for an earliest start and the
  // offers' look ahead, in whole days.
  int booking_horizon_days = 90;
  // How long a request that waits for capacity waits before it expires.
  std::chrono::seconds pending_timeout{24 * 3600};
  // How often each replica's lifecycle worker steps the rentals that are due (starts, ends,
  // provisioning and wipe checks, the waitlist): the delay a rental's moves can have.
  std::chrono::seconds lifecycle_interval{5};
  // Whether a booking that starts now and an agent's report of a finished task start a
  // lifecycle run at once rather than at the next interval: a CI job waiting for `active`
  // waits for its node, not for the worker's clock. Off only where a test steps the
  // lifecycle itself.
  bool lifecycle_wake = true;
  bool burn_ins = true;

  // Agent listener: its own TLS port for node agents. Empty host: off.
  std::string agent_listen_host = "127.0.0.1";
  unsigned short agent_listen_port = 8443;
  // The platform's CA for agents (ca.key, ca.crt); every replica must see the same one.
  std::string agent_pki_dir = "var/pki";
  // The names agents reach the listener by, on its server certificate.
  std::string agent_hostnames = "localhost,127.0.0.1";
  std::chrono::seconds agent_certificate_validity{365 * 24 * 3600};
  // Heartbeats are due every 10 s; silent this long, a node is unreachable (failed).
  std::chrono::seconds agent_silence_limit{60};
  // How often each replica looks for tasks its agents have not been sent: the fallback for
  // a notification missed while its listener reconnected.
  std::chrono::seconds agent_task_poll{15};
  // A node's telemetry is kept once per interval (its latest, and a row of history for the
  // admin views' charts), and every heartbeat that is not healthy; the history is kept this
  // long.
  std::chrono::seconds agent_telemetry_interval{60};
  std::chrono::seconds agent_telemetry_retention{24 * 3600};
  // What one agent's channel may have waiting to be sent (an agent that stops reading):
  // beyond either, the channel is cut and the agent gets its tasks again when it reconnects.
  std::size_t agent_outbox_max_messages = 1000;
  std::size_t agent_outbox_max_bytes = 4 * 1024 * 1024;
  // Healthy heartbeats waiting to be written (the database behind); more are refused with
  // an `overloaded` error to the agent, which sends its next one as usual.
  std::size_t agent_heartbeat_max_pending = 20'000;
  // The platform's SSH CA (ssh_user_ca, ssh_host_ca); every replica needs the same one.
  std::string ssh_ca_dir = "var/ssh-ca";

  // Webhooks (webhooks/, docs/webhooks.md): whether deliveries may reach internal addresses
  // (loopback, private, link-local; tests and private deployments only), how many attempts a
  // delivery gets, the first retry's wait and the longest, each attempt's timeout, how long a
  // claim is one replica's, how often each replica looks for due deliveries, how long before
  // a rental's end rental.expiring is sent, and the available balance (minor units) below
  // which billing.low_balance is sent.
  bool webhook_allow_internal = false;
  // Seals webhooks' signing secrets in the database (every replica needs the same one);
  // empty: they are stored as they are. Never logged.
  std::string webhook_secret_key;
  // Seals the nodes' BMC passwords (bmc/node_power.h), the same on every replica; empty: no
  // BMC can be set. Never logged. `bmc_allow_plain_http`: http:// BMCs (tests only).
  std::string bmc_secret_key;
  bool bmc_allow_plain_http = false;
  std::chrono::milliseconds bmc_timeout{10'000};  // each exchange with a BMC
  int webhook_max_attempts = 8;
  std::chrono::milliseconds webhook_backoff{30'000};
  std::chrono::milliseconds webhook_backoff_max{3'600'000};
  std::chrono::milliseconds webhook_timeout{10'000};
  std::chrono::milliseconds webhook_lease{120'000};
  std::chrono::milliseconds webhook_poll_interval{1'000};
  std::chrono::seconds webhook_expiring_before{3600};
  long long webhook_low_balance_minor = 100'000;
  // Webhook hosts being resolved at once (each lookup has a thread, which outlives a delivery
  // when DNS hangs); a delivery finding none free fails that attempt ("resolver busy").
  std::size_t webhook_max_resolving = 16;

  // Logging.
  LogFormat log_format = LogFormat::kAuto;
  std::string log_level = "info";

  // Seeds demo data at start (make run): a platform admin whose login is printed.
  bool demo = false;

  // Enables the test clock and test-only routes. Never on in production.
  bool test_mode = false;

  // Every field: the documented defaults are checked against the initialisers as a whole.
  bool operator==(const Config&) const = default;
};

// One row of the configuration table (README.md prints the same list).
struct ConfigKey {
  std::string name;  // file key and flag: --name=value
  std::string env;   // environment variable
  std::string help;
  std::string default_value;
};
const std::vector<ConfigKey>& config_keys();

// Loads the configuration. `args` are the command line after the program name and the
// subcommand; the environment comes from `environ`. Throws ConfigError with one clear
// line (which key, which source, what was expected) on any bad value or unknown key.
Config load_config(const std::vector<std::string>& args);

// Same, with an explicit environment (tests).
Config load_config(const std::vector<std::string>& args, const std::vector<std::string>& env);

}  // namespace gpurent
