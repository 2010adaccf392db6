// Holding a table lock from a test, so that requests which write the table wait inside their
// transaction for as long as the test needs.
#pragma once

#include <pqxx/pqxx>

#include <string>

namespace gpurent::testing {

class TableLock {
 public:
  TableLock(const std::string& url, const std::string& lock_statement) : conn_(url), tx_(conn_) {
    tx_.exec(lock_statement);
  }
  void release() { tx_.commit(); }  // otherwise rolled back, and so released, when destroyed

 private:
  pqxx::connection conn_;
  pqxx::work tx_;
};

}  // namespace gpurent::testing
