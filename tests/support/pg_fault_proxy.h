// A PostgreSQL wire-protocol proxy for tests that breaks connections at chosen messages: a
// COMMIT cut before or after the server ran it, a backend terminated by an administrator, a
// statement held past its statement_timeout, connections refused, every connection dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpurent::testing {

// Which frontend messages a rule or a counter is about. Only two kinds of message are
// matched: a simple query ('Q', how libpqxx 6 sends BEGIN, COMMIT, ROLLBACK and SAVEPOINT)
// and a Bind ('B', one per exec_prepared or exec_params), the statement it binds being known
// from the Parse that prepared it on the same connection.
struct PgMatch {
  enum class Kind {
    kQuery,      // a simple query whose text starts with `text` (case-insensitive, after spaces)
    kStatement,  // a Bind of the prepared statement named `text` (exactly)
    kBoundSql,   // a Bind of a statement whose SQL starts with `text` (as kQuery)
  };
  Kind kind;
  std::string text;

  static PgMatch query(std::string prefix) { return {Kind::kQuery, std::move(prefix)}; }
  static PgMatch statement(std::string name) { return {Kind::kStatement, std::move(name)}; }
  static PgMatch bound_sql(std::string prefix) { return {Kind::kBoundSql, std::move(prefix)}; }
};

enum class PgFault {
  // The matching message is not forwarded: the proxy closes the server side, waits until
  // that backend has ended (so its transaction is rolled back and its locks are released),
  // then closes the client side. A COMMIT cut here never ran; the client sees the
  // connection lost while waiting for its answer.
  kCutBefore,
  // The message is forwarded; the proxy waits for the server's ReadyForQuery that ends its
  // answer (after the next Sync for a Bind), drops that whole answer, closes the server
  // side, waits until the backend has ended, then closes the client side. A COMMIT cut here
  // has committed (its answer was complete) while the client sees the connection lost during
  // COMMIT. Anything else in an open transaction is rolled back with the backend.
  kCutAfter,
  // Before forwarding, pg_terminate_backend() on the client's backend from a connection of
  // the proxy's own, waiting until the backend has ended; then the message is forwarded. The
  // client receives the backend's FATAL 57P01 (admin_shutdown) and the connection's end.
  kTerminate,
  // Before forwarding, a connection of the proxy's own takes `stall_lock` (e.g. "LOCK TABLE
  // rentals IN ACCESS EXCLUSIVE MODE") in a transaction and keeps it until the server's
  // ReadyForQuery that ends the answer to the message (or `stall_max`). A statement that
  // needs the table waits on the lock until the client's statement_timeout cancels it
  // (57014), deterministically. A statement's first use on a connection starts with its
  // Parse, which locks the tables it names in the client's transaction: a stall that would
  // fire at the Bind fires at that Parse instead (the Parse's answer carries the 57014). The
  // client's own transaction must not hold a conflicting
  // lock on that table already (the proxy's LOCK would wait on it): the proxy gives up
  // after lock_timeout 2 s and records the rule's error.
  kStall,
};

struct PgFaultRule {
  PgMatch match;
  PgFault fault;
  int skip = 0;   // matching messages let through (across connections) before the first firing
  int times = 1;  // firings, then the rule is spent; 0: every match from then on
  // When set, only a message on a connection whose current transaction (since its last
  // BEGIN) has already sent a match of `after` counts: "the COMMIT of the transaction that
  // stored an idempotent response", not some other COMMIT of a background worker.
  std::optional<PgMatch> after;
  std::string stall_lock;                       // kStall: the SQL that takes the lock
  std::chrono::milliseconds stall_max{30'000};  // kStall: the longest the lock is kept
};

enum class PgRefusal {
  kNone,
  kClose,       // a new client connection is closed at once, before any byte
  kStartingUp,  // answered FATAL 57P03 "the database system is starting up", then closed
};

class PgFaultProxy {
 public:
  // upstream_url: the real database (e.g. TestDatabase::url()); the proxy forwards to its
  // host (a unix socket folder or a TCP host) and port, and uses it for its own connections
  // (kTerminate, kStall, waiting for backends to end). Listens on 127.0.0.1, port 0.
  explicit PgFaultProxy(std::string upstream_url);
  ~PgFaultProxy();  // stops accepting, drops every connection, joins its threads
  PgFaultProxy(const PgFaultProxy&) = delete;
  PgFaultProxy& operator=(const PgFaultProxy&) = delete;

  int port() const { return port_; }
  // The upstream's database (or `database`) through the proxy, as a libpq URL.
  std::string url() const;
  std::string url(const std::string& database) const;

  // Returns the rule's id, for fired() and error().
  int arm(PgFaultRule rule);
  void disarm_all();
  int fired(int rule) const;
  // Why the rule could not do its work (kTerminate or kStall); empty when all went well.
  std::string error(int rule) const;

  void refuse_connections(bool refuse) {
    set_refusal(refuse ? PgRefusal::kClose : PgRefusal::kNone);
  }
  void set_refusal(PgRefusal refusal);
  // Drops every open connection now (both sides), as a database restart does to a client,
  // and returns once every such backend has ended.
  void cut_all();

  // Frontend messages matched so far (every connection, since construction), armed or not.
  int seen(const PgMatch& match) const;
  // Client connections currently relayed.
  int open_connections() const;

  struct Session;  // one client connection (pg_fault_proxy.cpp)
  struct Decision {
    int rule = -1;  // -1: forward as usual
    PgFaultRule what;
  };
  // Called by sessions: note_seen() counts a message for seen(); decide() says whether a
  // rule fires on it.
  void note_seen(char type, const std::string& text, const std::string& statement);
  // A message a client sent: its type ('Q' or 'B'), the query text or the bound statement's
  // SQL, and the statement's name.
  struct Message {
    char type;
    std::string text;
    std::string statement;
  };
  // at_parse: only stall rules are asked, for the statement's next Bind (Session::on_parse);
  // exclude: a rule that already fired for this message at its Parse; transaction: what the
  // connection sent since its last BEGIN, for rules with `after`.
  Decision decide(char type, const std::string& text, const std::string& statement, bool at_parse,
                  const std::vector<Message>& transaction, int exclude = -1);
  void record_error(int rule, const std::string& error);
  const std::string& upstream_url() const { return upstream_url_; }
  const std::string& upstream_host() const { return upstream_host_; }
  int upstream_port() const { return upstream_port_; }
  PgRefusal refusal() const;

 private:
  void accept_loop();
  void reap_finished();

  struct Armed {
    PgFaultRule rule;
    int matches = 0;
    int fired = 0;
    bool active = true;
    std::string error;
  };

  std::string upstream_url_, upstream_host_, upstream_user_, upstream_database_;
  int upstream_port_ = 0;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes the acceptor to stop
  int port_ = 0;

  mutable std::mutex mutex_;
  std::vector<Message> seen_;
  std::vector<Armed> rules_;
  PgRefusal refusal_ = PgRefusal::kNone;
  std::list<std::shared_ptr<Session>> sessions_;
  std::thread acceptor_;
};

}  // namespace gpurent::testing
