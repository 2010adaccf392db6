// Built into every target of a sanitizer build: leaks LeakSanitizer should not report.
// libpqxx 6.4 drops one PGresult when a connection breaks in the middle of a query (the
// pool discards such connections; the test that kills a backend on purpose triggers it).
// Weak: interface sources land in several objects of one executable.
extern "C" __attribute__((weak)) const char* __lsan_default_suppressions() {
  return "leak:libpq.so.5\n";
}
