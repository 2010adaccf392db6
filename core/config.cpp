// Parses and validates configuration from defaults, a file, the environment and flags.
#include "core/config.h"

#include "core/money.h"
#include "core/trusted_proxies.h"

#include "core/error.h"
#include "core/limits.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string_view>

extern char** environ;

namespace gpurent {
namespace {

using Setter = std::function<void(Config&, const std::string&)>;

struct Field {
  ConfigKey key;
  Setter set;
};

[[noreturn]] void bad(const std::string& expected, const std::string& value) {
  throw ConfigError("expected " + expected + ", got '" + value + "'");
}

long long parse_int(const std::string& v, long long lo, long long hi) {
  long long out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || out < lo || out > hi) {
    bad("an integer from " + std::to_string(lo) + " to " + std::to_string(hi), v);
  }
  return out;
}

constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(87600);
// The least scrypt cost a server outside test mode hashes passwords with (Config's default).
constexpr int kProductionPasswordHashCost = Config{}.password_hash_cost;

// "500ms", "10s", "2m", "1h", up to kMaxDuration.
std::chrono::milliseconds parse_duration(const std::string& v) {
  std::size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  std::string unit = v.substr(digits);
  if (digits == 0 || digits > 9) bad("a duration such as 500ms, 10s or 2m", v);
  long long n = std::stoll(v.substr(0, digits));
  std::chrono::milliseconds d{};
  if (unit == "ms") {
    d = std::chrono::milliseconds(n);
  } else if (unit == "s") {
    d = std::chrono::seconds(n);
  } else if (unit == "m") {
    d = std::chrono::minutes(n);
  } else if (unit == "h") {
    d = std::chrono::hours(n);
  } else {
    bad("a duration such as 500ms, 10s or 2m", v);
  }
  // Added to clock readings (in nanoseconds), 999999999h would overflow; nothing the
  // server waits for or keeps alive needs more than ten years.
  if (d > kMaxDuration) bad("a duration of at most 87600h (ten years)", v);
  return d;
}

// A timeout of zero would expire at once; checked here so the error names key and source.
std::chrono::milliseconds parse_positive_duration(const std::string& v) {
  auto d = parse_duration(v);
  if (d.count() <= 0) bad("a duration greater than zero", v);
  return d;
}

// Lifetimes kept and stored in whole seconds (sessions, enrolment tokens): a value below a
// second would truncate to zero and end every session at once, and a fraction of a second
// would be dropped without a word, so both are refused. 1000ms is 1s and is accepted.
std::chrono::seconds parse_whole_seconds(const std::string& v) {
  auto d = parse_duration(v);
  if (d < std::chrono::seconds(1)) bad("a duration of at least 1s", v);
  if ((d % std::chrono::seconds(1)).count() != 0) {
    bad("a whole number of seconds, such as 90s, 15m or 12h", v);
  }
  return std::chrono::duration_cast<std::chrono::seconds>(d);
}

// The active alphabetic codes of ISO 4217 list one (as of 2025) that are currencies in
// circulation: fund codes (BOV, CLF, USN...), precious metals (XAU...), SDR and bond units,
// and the testing and "no currency" codes (XTS, XXX) are left out, since no price list is
// kept in them. Sorted, so a lookup is a binary search.
constexpr std::array<std::string_view, 156> kCurrencies = {
    "AED", "AFN", "ALL", "AMD", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN",
    "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF",
    "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP",
    "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD",
    "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD", "JPY",
    "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD",
    "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK",
    "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK",
    "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG",
    "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS",
    "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS", "VED",
    "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
};
static_assert(std::adjacent_find(kCurrencies.begin(), kCurrencies.end(), std::greater_equal<>()) ==
                  kCurrencies.end(),
              "kCurrencies must be sorted and hold each code once");

std::string parse_currency(const std::string& v) {
  if (!Money::is_valid_currency(v)) {
    bad("three upper-case letters, an ISO 4217 code such as RUB", v);
  }
  if (!std::binary_search(kCurrencies.begin(), kCurrencies.end(), v)) {
    bad("an ISO 4217 code of a currency in circulation, such as RUB, USD or EUR", v);
  }
  return v;
}

// "1048576", "64KiB", "1MiB".
std::size_t parse_size(const std::string& v) {
  std::size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  std::string unit = v.substr(digits);
  if (digits == 0 || digits > 12) bad("a size such as 1048576, 64KiB or 1MiB", v);
  std::size_t n = std::stoull(v.substr(0, digits));
  if (unit.empty() || unit == "B") return n;
  if (unit == "KiB") return n * 1024;
  if (unit == "MiB") return n * 1024 * 1024;
  bad("a size such as 1048576, 64KiB or 1MiB", v);
}

// "20", "20.5", "0.25": a percentage from 0 to 100 with at most two decimals, as basis points.
int parse_percent_bp(const std::string& v) {
  constexpr const char* kWhat = "a percentage from 0 to 100 with at most two decimals, such as 20";
  auto dot = v.find('.');
  std::string whole = v.substr(0, dot);
  std::string fraction = dot == std::string::npos ? "" : v.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  if (whole.empty() || whole.size() > 3 || !digits(whole) || fraction.size() > 2 ||
      !digits(fraction) || (dot != std::string::npos && fraction.empty())) {
    bad(kWhat, v);
  }
  while (fraction.size() < 2) fraction += '0';
  int bp = std::stoi(whole) * 100 + std::stoi(fraction);
  if (bp > 10000) bad(kWhat, v);
  return bp;
}

// "7:5,30:10" or "none": the shape only (billing/pricing.h checks the tiers' order).
std::string parse_discounts(const std::string& v) {
  constexpr const char* kWhat = "min_days:percent pairs such as 7:5,30:10, or none";
  if (v == "none" || v.empty()) return "none";
  bool number = false;
  bool colon = false;
  for (char ch : v) {
    if (ch >= '0' && ch <= '9') {
      number = true;
    } else if (ch == ':' && number && !colon) {
      colon = true, number = false;
    } else if (ch == ',' && number && colon) {
      colon = false, number = false;
    } else {
      bad(kWhat, v);
    }
  }
  if (!number || !colon || v.size() > 200) bad(kWhat, v);
  return v;
}

// An IANA zone name such as UTC or Europe/Moscow (PostgreSQL's database decides at start).
std::string parse_time_zone(const std::string& v) {
  if (v.empty() || v.size() > 64 || !std::all_of(v.begin(), v.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '_' ||
               ch == '+' || ch == '-';
      })) {
    bad("an IANA time zone such as UTC or Europe/Moscow", v);
  }
  return v;
}

bool parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad("true or false", v);
}

const std::vector<Field>& fields() {
  static const std::vector<Field> kFields = {
      {{"listen", "GPURENT_LISTEN", "HTTP listen address host:port (port 0 picks a free one)",
        "127.0.0.1:8080"},
       [](Config& c, const std::string& v) {
         auto colon = v.rfind(':');
         if (colon == std::string::npos || colon == 0) bad("host:port", v);
         c.listen_host = v.substr(0, colon);
         if (c.listen_host.size() > 2 && c.listen_host.front() == '[' &&
             c.listen_host.back() == ']') {
           c.listen_host = c.listen_host.substr(1, c.listen_host.size() - 2);
         }
         c.listen_port = static_cast<unsigned short>(parse_int(v.substr(colon + 1), 0, 65535));
       }},
      {{"port_file", "GPURENT_PORT_FILE", "write the bound HTTP port to this file", ""},
       [](Config& c, const std::string& v) { c.port_file = v; }},
      {{"io_threads", "GPURENT_IO_THREADS", "network threads", "2"},
       [](Config& c, const std::string& v) { c.io_threads = parse_int(v, 1, 64); }},
      {{"worker_threads", "GPURENT_WORKER_THREADS", "threads for database and blocking work", "4"},
       [](Config& c, const std::string& v) { c.worker_threads = parse_int(v, 1, 256); }},
      {{"http_body_limit", "GPURENT_HTTP_BODY_LIMIT", "largest request body (413 above)", "1MiB"},
       [](Config& c, const std::string& v) {
         c.http_body_limit = parse_size(v);
         if (c.http_body_limit == 0) bad("a size of at least 1 byte", v);
       }},
      {{"http_header_limit", "GPURENT_HTTP_HEADER_LIMIT", "largest request header block", "16KiB"},
       [](Config& c, const std::string& v) { c.http_header_limit = parse_size(v); }},
      {{"http_read_timeout", "GPURENT_HTTP_READ_TIMEOUT",
        "time allowed to receive one whole request", "10s"},
       [](Config& c, const std::string& v) { c.http_read_timeout = parse_positive_duration(v); }},
      {{"http_write_timeout", "GPURENT_HTTP_WRITE_TIMEOUT", "time allowed to send a response",
        "10s"},
       [](Config& c, const std::string& v) { c.http_write_timeout = parse_positive_duration(v); }},
      {{"http_idle_timeout", "GPURENT_HTTP_IDLE_TIMEOUT",
        "keep-alive connection closes after this much silence", "60s"},
       [](Config& c, const std::string& v) { c.http_idle_timeout = parse_positive_duration(v); }},
      {{"http_pipeline_limit", "GPURENT_HTTP_PIPELINE_LIMIT",
        "pipelined requests queued per connection before reading pauses", "8"},
       [](Config& c, const std::string& v) { c.http_pipeline_limit = parse_int(v, 1, 64); }},
      {{"http_max_connections", "GPURENT_HTTP_MAX_CONNECTIONS",
        "open HTTP connections at most; more are answered 503 and closed", "1024"},
       [](Config& c, const std::string& v) {
         c.http_max_connections = parse_int(v, 1, 1'000'000);
       }},
      {{"shutdown_deadline", "GPURENT_SHUTDOWN_DEADLINE",
        "on SIGTERM, how long in-flight requests may take to finish", "15s"},
       [](Config& c, const std::string& v) { c.shutdown_deadline = parse_duration(v); }},
      {{"web_root", "GPURENT_WEB_ROOT", "folder of the web panel's static files", "web/public"},
       [](Config& c, const std::string& v) { c.web_root = v; }},
      {{"tls_certificate", "GPURENT_TLS_CERTIFICATE",
        "PEM certificate (chain after it) for HTTPS on the public listener; with tls_key", ""},
       [](Config& c, const std::string& v) { c.tls_certificate = v; }},
      {{"tls_key", "GPURENT_TLS_KEY", "PEM private key of tls_certificate (SIGHUP reloads both)",
        ""},
       [](Config& c, const std::string& v) { c.tls_key = v; }},
      {{"hsts_max_age", "GPURENT_HSTS_MAX_AGE",
        "Strict-Transport-Security max-age sent to clients over TLS (whole seconds; 0: none)",
        "8760h"},
       [](Config& c, const std::string& v) {
         c.hsts_max_age = v == "0" ? std::chrono::seconds(0) : parse_whole_seconds(v);
       }},
      {{"database_url", "DATABASE_URL",
        "PostgreSQL connection URL; empty runs an embedded PostgreSQL in data_dir", ""},
       [](Config& c, const std::string& v) { c.database_url = v; }},
      {{"data_dir", "GPURENT_DATA_DIR", "embedded PostgreSQL data folder", "var/pg"},
       [](Config& c, const std::string& v) {
         if (v.empty()) bad("a folder path", v);
         c.data_dir = v;
       }},
      {{"db_pool_size", "GPURENT_DB_POOL_SIZE", "database connections per process", "8"},
       [](Config& c, const std::string& v) { c.db_pool_size = parse_int(v, 1, 512); }},
      {{"db_pool_wait", "GPURENT_DB_POOL_WAIT",
        "how long a request waits for a free connection before 503", "2s"},
       [](Config& c, const std::string& v) { c.db_pool_wait = parse_duration(v); }},
      {{"db_statement_timeout", "GPURENT_DB_STATEMENT_TIMEOUT",
        "PostgreSQL statement_timeout for every connection", "10s"},
       [](Config& c, const std::string& v) { c.db_statement_timeout = parse_duration(v); }},
      {{"migrate_on_start", "GPURENT_MIGRATE_ON_START", "apply pending migrations at start-up",
        "true"},
       [](Config& c, const std::string& v) { c.migrate_on_start = parse_bool(v); }},
      {{"signup_enabled", "GPURENT_SIGNUP_ENABLED", "allow POST /v1/auth/signup", "true"},
       [](Config& c, const std::string& v) { c.signup_enabled = parse_bool(v); }},
      {{"session_idle", "GPURENT_SESSION_IDLE",
        "a panel session ends after this much inactivity (whole seconds, at most session_absolute)",
        "12h"},
       [](Config& c, const std::string& v) { c.session_idle = parse_whole_seconds(v); }},
      {{"session_absolute", "GPURENT_SESSION_ABSOLUTE",
        "a panel session ends this long after sign-in, active or not (whole seconds)", "168h"},
       [](Config& c, const std::string& v) { c.session_absolute = parse_whole_seconds(v); }},
      {{"password_hash_cost", "GPURENT_PASSWORD_HASH_COST",
        "scrypt's cost for new password hashes, log2 of N (10 to 20; below 15 only with "
        "test_mode)",
        "15"},
       [](Config& c, const std::string& v) { c.password_hash_cost = parse_int(v, 10, 20); }},
      {{"rate_limit_per_credential", "GPURENT_RATE_LIMIT_PER_CREDENTIAL",
        "requests a second per API token or session, sustained (0: no limit)", "20"},
       [](Config& c, const std::string& v) {
         c.rate_limit_per_credential = parse_int(v, 0, 1'000'000);
       }},
      {{"rate_limit_burst_per_credential", "GPURENT_RATE_LIMIT_BURST_PER_CREDENTIAL",
        "requests per API token or session allowed at once above the rate (0: no limit)", "100"},
       [](Config& c, const std::string& v) {
         c.rate_limit_burst_per_credential = parse_int(v, 0, 1'000'000);
       }},
      {{"trusted_proxies", "GPURENT_TRUSTED_PROXIES",
        "reverse proxies whose X-Forwarded-For names the client (addresses, CIDR blocks)", ""},
       [](Config& c, const std::string& v) {
         try {
           TrustedProxies::parse(v);
         } catch (const std::invalid_argument& e) {
           throw ConfigError(e.what());
         }
         c.trusted_proxies = v;
       }},
      {{"rate_limit_per_ip", "GPURENT_RATE_LIMIT_PER_IP",
        "requests a second per client address, sustained (0: no limit)", "50"},
       [](Config& c, const std::string& v) { c.rate_limit_per_ip = parse_int(v, 0, 1'000'000); }},
      {{"rate_limit_burst_per_ip", "GPURENT_RATE_LIMIT_BURST_PER_IP",
        "requests per client address allowed at once above the rate (0: no limit)", "200"},
       [](Config& c, const std::string& v) {
         c.rate_limit_burst_per_ip = parse_int(v, 0, 1'000'000);
       }},
      {{"currency", "GPURENT_CURRENCY",
        "the platform's currency (ISO 4217, in circulation): every price and balance is in it",
        "RUB"},
       [](Config& c, const std::string& v) { c.currency = parse_currency(v); }},
      {{"vat_rate", "GPURENT_VAT_RATE",
        "the VAT rate in percent, up to two decimals (0 for none); shown on every invoice", "20"},
       [](Config& c, const std::string& v) { c.vat_basis_points = parse_percent_bp(v); }},
      {{"prices_include_tax", "GPURENT_PRICES_INCLUDE_TAX",
        "whether the price list's amounts include VAT (true) or VAT is added to them (false)",
        "true"},
       [](Config& c, const std::string& v) { c.prices_include_tax = parse_bool(v); }},
      {{"rental_discounts", "GPURENT_RENTAL_DISCOUNTS",
        "discounts by rental length as min_days:percent pairs, comma separated, or none",
        "7:5,30:10"},
       [](Config& c, const std::string& v) { c.rental_discounts = parse_discounts(v); }},
      {{"sla_credit_policy", "GPURENT_SLA_CREDIT_POLICY",
        "what an interruption credits: lost_hours (the day's lost hours, pro rata), "
        "whole_block (the whole day) or none",
        "lost_hours"},
       [](Config& c, const std::string& v) {
         if (v != "lost_hours" && v != "whole_block" && v != "none") {
           bad("lost_hours, whole_block or none", v);
         }
         c.sla_credit_policy = v;
       }},
      {{"handover_credit_policy", "GPURENT_HANDOVER_CREDIT_POLICY",
        "what a running rental's handover to a spare (or an admin's power action) credits: "
        "lost_minutes (the minutes lost, pro rata of the day), lost_hours, whole_block or none",
        "lost_minutes"},
       [](Config& c, const std::string& v) {
         if (v != "lost_minutes" && v != "lost_hours" && v != "whole_block" && v != "none") {
           bad("lost_minutes, lost_hours, whole_block or none", v);
         }
         c.handover_credit_policy = v;
       }},
      {{"maintenance_notice", "GPURENT_MAINTENANCE_NOTICE",
        "the least notice a maintenance window gives the running or unmovable rentals it takes",
        "72h"},
       [](Config& c, const std::string& v) { c.maintenance_notice = parse_whole_seconds(v); }},
      {{"billing_time_zone", "GPURENT_BILLING_TIME_ZONE",
        "the IANA time zone whose calendar months invoices and monthly spend limits follow", "UTC"},
       [](Config& c, const std::string& v) { c.billing_time_zone = parse_time_zone(v); }},
      {{"payment_webhook_secret", "GPURENT_PAYMENT_WEBHOOK_SECRET",
        "the payment provider's webhook signing secret (empty: the webhook is off); never "
        "logged",
        ""},
       [](Config& c, const std::string& v) {
         if (!v.empty() && v.size() < 16) bad("a secret of at least 16 characters, or empty", "…");
         c.payment_webhook_secret = v;
       }},
      {{"payment_webhook_tolerance", "GPURENT_PAYMENT_WEBHOOK_TOLERANCE",
        "how far a webhook signature's time may be from now before it is refused as stale "
        "(whole seconds)",
        "5m"},
       [](Config& c, const std::string& v) {
         c.payment_webhook_tolerance = parse_whole_seconds(v);
       }},
      {{"enrollment_token_ttl", "GPURENT_ENROLLMENT_TOKEN_TTL",
        "how long a new node's single-use agent enrolment token is valid (whole seconds)", "24h"},
       [](Config& c, const std::string& v) { c.enrollment_token_ttl = parse_whole_seconds(v); }},
      {{"rental_cleaning_window", "GPURENT_RENTAL_CLEANING_WINDOW",
        "kept free on a rental's GPUs after it ends, for the wipe before the next (whole "
        "seconds)",
        "30m"},
       [](Config& c, const std::string& v) { c.rental_cleaning_window = parse_whole_seconds(v); }},
      {{"booking_horizon_days", "GPURENT_BOOKING_HORIZON_DAYS",
        "how many days ahead a booking may start (and how far earliest starts are searched)", "90"},
       [](Config& c, const std::string& v) {
         c.booking_horizon_days = static_cast<int>(parse_int(v, 1, limits::kMaxRentalDays));
       }},
      {{"pending_timeout", "GPURENT_PENDING_TIMEOUT",
        "how long a request that waits for capacity waits before it expires (whole seconds)",
        "24h"},
       [](Config& c, const std::string& v) { c.pending_timeout = parse_whole_seconds(v); }},
      {{"lifecycle_interval", "GPURENT_LIFECYCLE_INTERVAL",
        "how often the rental lifecycle worker runs on each replica (whole seconds)", "5s"},
       [](Config& c, const std::string& v) { c.lifecycle_interval = parse_whole_seconds(v); }},
      {{"lifecycle_wake", "GPURENT_LIFECYCLE_WAKE",
        "run the lifecycle worker at once when a rental that starts now is booked or an agent"
        " reports a task, not only every lifecycle_interval",
        "true"},
       [](Config& c, const std::string& v) { c.lifecycle_wake = parse_bool(v); }},
      {{"burn_ins", "GPURENT_BURN_INS",
        "have each node's agent run its burn-in before a rental's handover and after its"
        " release; a node that fails is drained and the rental placed again (docs/burn-in.md)",
        "true"},
       [](Config& c, const std::string& v) { c.burn_ins = parse_bool(v); }},
      {{"agent_listen", "GPURENT_AGENT_LISTEN",
        "agent listener (TLS) host:port, or off (port 0 picks a free one)", "127.0.0.1:8443"},
       [](Config& c, const std::string& v) {
         if (v == "off") {
           c.agent_listen_host.clear();
           c.agent_listen_port = 0;
           return;
         }
         auto colon = v.rfind(':');
         if (colon == std::string::npos || colon == 0) bad("host:port or off", v);
         c.agent_listen_host = v.substr(0, colon);
         if (c.agent_listen_host.size() > 2 && c.agent_listen_host.front() == '[' &&
             c.agent_listen_host.back() == ']') {
           c.agent_listen_host = c.agent_listen_host.substr(1, c.agent_listen_host.size() - 2);
         }
         c.agent_listen_port =
             static_cast<unsigned short>(parse_int(v.substr(colon + 1), 0, 65535));
       }},
      {{"agent_pki_dir", "GPURENT_AGENT_PKI_DIR",
        "folder of the agents' certificate authority (made on first start, key 0600)", "var/pki"},
       [](Config& c, const std::string& v) {
         if (v.empty()) bad("a folder", v);
         c.agent_pki_dir = v;
       }},
      {{"agent_hostnames", "GPURENT_AGENT_HOSTNAMES",
        "comma-separated names and addresses agents reach the agent listener by",
        "localhost,127.0.0.1"},
       [](Config& c, const std::string& v) {
         if (v.empty() || v.front() == ',' || v.back() == ',' ||
             v.find(",,") != std::string::npos || v.find_first_of(" \t\"'") != std::string::npos) {
           bad("names separated by commas", v);
         }
         c.agent_hostnames = v;
       }},
      {{"agent_certificate_validity", "GPURENT_AGENT_CERTIFICATE_VALIDITY",
        "how long an agent's client certificate is valid (whole seconds)", "8760h"},
       [](Config& c, const std::string& v) {
         c.agent_certificate_validity = parse_whole_seconds(v);
       }},
      {{"agent_silence_limit", "GPURENT_AGENT_SILENCE_LIMIT",
        "how long a node's agent may be silent before the node counts as unreachable and "
        "fails (whole seconds)",
        "60s"},
       [](Config& c, const std::string& v) { c.agent_silence_limit = parse_whole_seconds(v); }},
      {{"agent_task_poll", "GPURENT_AGENT_TASK_POLL",
        "how often each replica looks for tasks not yet sent to its connected agents, should a "
        "notification have been missed (whole seconds)",
        "15s"},
       [](Config& c, const std::string& v) { c.agent_task_poll = parse_whole_seconds(v); }},
      {{"agent_telemetry_interval", "GPURENT_AGENT_TELEMETRY_INTERVAL",
        "how often a node's GPU telemetry is kept: its latest and a row of history "
        "(whole seconds; unhealthy heartbeats are always kept)",
        "60s"},
       [](Config& c, const std::string& v) {
         c.agent_telemetry_interval = parse_whole_seconds(v);
       }},
      {{"agent_telemetry_retention", "GPURENT_AGENT_TELEMETRY_RETENTION",
        "how long the history of GPU telemetry is kept (whole seconds)", "24h"},
       [](Config& c, const std::string& v) {
         c.agent_telemetry_retention = parse_whole_seconds(v);
       }},
      {{"agent_outbox_max_messages", "GPURENT_AGENT_OUTBOX_MAX_MESSAGES",
        "messages waiting to be sent to one agent at most; beyond it the channel is cut (the "
        "agent reconnects and gets its tasks again)",
        "1000"},
       [](Config& c, const std::string& v) {
         c.agent_outbox_max_messages = parse_int(v, 1, 1'000'000);
       }},
      {{"agent_outbox_max_bytes", "GPURENT_AGENT_OUTBOX_MAX_BYTES",
        "bytes waiting to be sent to one agent at most; beyond it the channel is cut", "4MiB"},
       [](Config& c, const std::string& v) {
         c.agent_outbox_max_bytes = parse_size(v);
         if (c.agent_outbox_max_bytes == 0) bad("a size of at least 1 byte", v);
       }},
      {{"agent_heartbeat_max_pending", "GPURENT_AGENT_HEARTBEAT_MAX_PENDING",
        "healthy heartbeats waiting to be written at most; more are refused with an "
        "'overloaded' error to the agent",
        "20000"},
       [](Config& c, const std::string& v) {
         c.agent_heartbeat_max_pending = parse_int(v, 1, 10'000'000);
       }},
      {{"ssh_ca_dir", "GPURENT_SSH_CA_DIR",
        "the platform's SSH certificate authority: its user and host keys, made on first start",
        "var/ssh-ca"},
       [](Config& c, const std::string& v) {
         if (v.empty()) bad("a folder", v);
         c.ssh_ca_dir = v;
       }},
      {{"webhook_allow_internal", "GPURENT_WEBHOOK_ALLOW_INTERNAL",
        "let webhook deliveries reach loopback, private and link-local addresses (tests and "
        "private deployments only)",
        "false"},
       [](Config& c, const std::string& v) { c.webhook_allow_internal = parse_bool(v); }},
      {{"webhook_secret_key", "GPURENT_WEBHOOK_SECRET_KEY",
        "seals webhooks' signing secrets in the database (AES-256-GCM), at least 32 characters, "
        "the same on every replica (empty: stored as they are); never logged",
        ""},
       [](Config& c, const std::string& v) {
         if (!v.empty() && v.size() < 32) bad("a key of at least 32 characters, or empty", "…");
         c.webhook_secret_key = v;
       }},
      {{"bmc_secret_key", "GPURENT_BMC_SECRET_KEY",
        "seals the nodes' BMC passwords in the database (AES-256-GCM), at least 32 characters, "
        "the same on every replica (empty: no BMC can be set); never logged",
        ""},
       [](Config& c, const std::string& v) {
         if (!v.empty() && v.size() < 32) bad("a key of at least 32 characters, or empty", "…");
         c.bmc_secret_key = v;
       }},
      {{"bmc_allow_plain_http", "GPURENT_BMC_ALLOW_PLAIN_HTTP",
        "talk to BMCs over plain http:// (tests against a local responder only)", "false"},
       [](Config& c, const std::string& v) { c.bmc_allow_plain_http = parse_bool(v); }},
      {{"bmc_timeout", "GPURENT_BMC_TIMEOUT",
        "how long one exchange with a node's BMC may take, connecting and the answer included",
        "10s"},
       [](Config& c, const std::string& v) { c.bmc_timeout = parse_positive_duration(v); }},
      {{"webhook_max_attempts", "GPURENT_WEBHOOK_MAX_ATTEMPTS",
        "attempts a webhook delivery gets before it is marked failed", "8"},
       [](Config& c, const std::string& v) {
         c.webhook_max_attempts = static_cast<int>(parse_int(v, 1, 100));
       }},
      {{"webhook_backoff", "GPURENT_WEBHOOK_BACKOFF",
        "the wait before a failed webhook delivery's first retry; it doubles with each (with "
        "jitter) up to webhook_backoff_max",
        "30s"},
       [](Config& c, const std::string& v) { c.webhook_backoff = parse_positive_duration(v); }},
      {{"webhook_backoff_max", "GPURENT_WEBHOOK_BACKOFF_MAX",
        "the longest wait between a webhook delivery's attempts", "1h"},
       [](Config& c, const std::string& v) { c.webhook_backoff_max = parse_positive_duration(v); }},
      {{"webhook_timeout", "GPURENT_WEBHOOK_TIMEOUT",
        "how long one webhook delivery may take, connecting and the answer included", "10s"},
       [](Config& c, const std::string& v) { c.webhook_timeout = parse_positive_duration(v); }},
      {{"webhook_lease", "GPURENT_WEBHOOK_LEASE",
        "how long a claimed webhook delivery is one replica's; a replica that dies leaves it to "
        "others this long after its claim",
        "2m"},
       [](Config& c, const std::string& v) { c.webhook_lease = parse_positive_duration(v); }},
      {{"webhook_poll_interval", "GPURENT_WEBHOOK_POLL_INTERVAL",
        "how often each replica looks for webhook deliveries that are due", "1s"},
       [](Config& c, const std::string& v) {
         c.webhook_poll_interval = parse_positive_duration(v);
       }},
      {{"webhook_expiring_before", "GPURENT_WEBHOOK_EXPIRING_BEFORE",
        "how long before an active rental's end its rental.expiring webhook event is sent "
        "(whole seconds)",
        "1h"},
       [](Config& c, const std::string& v) { c.webhook_expiring_before = parse_whole_seconds(v); }},
      {{"webhook_low_balance", "GPURENT_WEBHOOK_LOW_BALANCE",
        "the available balance, in minor units of currency, below which billing.low_balance is "
        "sent (once per crossing)",
        "100000"},
       [](Config& c, const std::string& v) {
         c.webhook_low_balance_minor = parse_int(v, 0, 1'000'000'000'000'000LL);
       }},
      {{"webhook_max_resolving", "GPURENT_WEBHOOK_MAX_RESOLVING",
        "webhook host names being resolved at once at most; a delivery finding none free fails "
        "that attempt ('resolver busy') and is retried with the usual backoff",
        "16"},
       [](Config& c, const std::string& v) { c.webhook_max_resolving = parse_int(v, 1, 10'000); }},
      {{"log_format", "GPURENT_LOG_FORMAT",
        "auto (text on a terminal, JSON lines otherwise), text or json", "auto"},
       [](Config& c, const std::string& v) {
         if (v == "auto")
           c.log_format = LogFormat::kAuto;
         else if (v == "text")
           c.log_format = LogFormat::kText;
         else if (v == "json")
           c.log_format = LogFormat::kJson;
         else
           bad("auto, text or json", v);
       }},
      {{"log_level", "GPURENT_LOG_LEVEL", "trace, debug, info, warn, error", "info"},
       [](Config& c, const std::string& v) {
         if (v != "trace" && v != "debug" && v != "info" && v != "warn" && v != "error") {
           bad("trace, debug, info, warn or error", v);
         }
         c.log_level = v;
       }},
      {{"demo", "GPURENT_DEMO",
        "seed demo data and print the demo admin's login (make run); never in production", "false"},
       [](Config& c, const std::string& v) { c.demo = parse_bool(v); }},
      {{"test_mode", "GPURENT_TEST_MODE",
        "enable the test clock and test-only routes; never in production", "false"},
       [](Config& c, const std::string& v) { c.test_mode = parse_bool(v); }},
  };
  return kFields;
}

const Field* find_field(const std::string& name) {
  for (const auto& f : fields()) {
    if (f.key.name == name) return &f;
  }
  return nullptr;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// The value each key was given and where it came from, for errors that weigh two keys.
using Origins = std::map<std::string, std::string>;

void apply(Config& c, Origins& origins, const Field& f, const std::string& value,
           const std::string& source) {
  try {
    f.set(c, value);
  } catch (const ConfigError& e) {
    throw ConfigError("config " + f.key.name + " (from " + source + "): " + e.what());
  }
  origins[f.key.name] = value + ", from " + source;
}

std::string origin(const Origins& origins, const std::string& name) {
  if (auto it = origins.find(name); it != origins.end()) return it->second;
  return find_field(name)->key.default_value + ", the default";
}

// Rules that involve several keys; checked once every source has been applied, since any
// source may set either key.
void check_together(const Config& c, const Origins& origins) {
  if (c.tls_certificate.empty() != c.tls_key.empty()) {
    throw ConfigError("config tls_certificate (" + origin(origins, "tls_certificate") +
                      ") and tls_key (" + origin(origins, "tls_key") +
                      ") must be set together: HTTPS needs both");
  }
  if (c.session_idle > c.session_absolute) {
    throw ConfigError("config session_idle (" + origin(origins, "session_idle") +
                      ") must not exceed session_absolute (" + origin(origins, "session_absolute") +
                      ")");
  }
  if (c.password_hash_cost < kProductionPasswordHashCost && !c.test_mode) {
    throw ConfigError("config password_hash_cost (" + origin(origins, "password_hash_cost") +
                      ") below " + std::to_string(kProductionPasswordHashCost) +
                      " is for the test suite only: it needs test_mode (" +
                      origin(origins, "test_mode") + ")");
  }
}

void apply_file(Config& c, Origins& origins, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("config file " + path + " cannot be read");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    std::string where = path + ":" + std::to_string(number);
    if (eq == std::string::npos) throw ConfigError(where + ": expected key = value");
    std::string key = trim(line.substr(0, eq));
    const Field* f = find_field(key);
    if (!f) throw ConfigError(where + ": unknown key '" + key + "'");
    apply(c, origins, *f, trim(line.substr(eq + 1)), where);
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> kKeys = [] {
    std::vector<ConfigKey> keys;
    for (const auto& f : fields()) keys.push_back(f.key);
    keys.push_back({"config", "GPURENT_CONFIG", "configuration file of key = value lines", ""});
    return keys;
  }();
  return kKeys;
}

Config load_config(const std::vector<std::string>& args) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return load_config(args, env);
}

Config load_config(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::map<std::string, std::string> env_map;
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) env_map[kv.substr(0, eq)] = kv.substr(eq + 1);
  }

  // Flags as (name, value); --name=value or --name value.
  std::vector<std::pair<std::string, std::string>> flags;
  std::optional<std::string> config_file;
  if (auto it = env_map.find("GPURENT_CONFIG"); it != env_map.end() && !it->second.empty()) {
    config_file = it->second;
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) throw ConfigError("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw ConfigError("flag --" + name + " needs a value");
      value = args[++i];
    }
    std::replace(name.begin(), name.end(), '-', '_');
    if (name == "config") {
      config_file = value;
      continue;
    }
    if (!find_field(name)) throw ConfigError("unknown flag --" + name);
    flags.emplace_back(name, value);
  }

  Config c;
  Origins origins;
  if (config_file) apply_file(c, origins, *config_file);
  for (const auto& f : fields()) {
    if (auto it = env_map.find(f.key.env); it != env_map.end()) {
      apply(c, origins, f, it->second, "environment " + f.key.env);
    }
  }
  for (const auto& [name, value] : flags) {
    apply(c, origins, *find_field(name), value, "flag --" + name);
  }
  check_together(c, origins);
  return c;
}

}  // namespace gpurent
