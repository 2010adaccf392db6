// Built into every target of a sanitizer build: leaks LeakSanitizer should not report.
//
// PQmakeEmptyPGresult: libpqxx 6.4 loses one PGresult (216 bytes, plus the 2048-byte block
// it owns, which LeakSanitizer then counts as reachable from a suppressed leak) when BEGIN
// is sent on a connection whose backend was terminated (pqxx::transaction_base::direct_exec
// → PQexec; the result of the failed statement is never cleared before libpqxx throws
// broken_connection). PgPool discards such a connection; PgPool.
// ReconnectsAfterTheServerKillsTheConnection triggers it on purpose. The suppression names
// the allocating libpq function and not the libpqxx frame above it, because that frame is
// an unexported libpqxx symbol that the fast unwinder cannot name; anything else leaked
// through libpq or libpqxx (a connection, a result our code keeps) is still reported.
// Weak: the object lands in several libraries of one executable.
extern "C" __attribute__((weak)) const char* __lsan_default_suppressions() {
  return "leak:PQmakeEmptyPGresult\n";
}
