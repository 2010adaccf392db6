# gpurent_add_tests(<target> KIND <pure|pg|e2e> SOURCES <files...> [LIBS <targets...>])
#
# One GoogleTest binary; every test case becomes a CTest test labelled with its kind:
#   pure - no database, no processes:        x_test.cpp
#   pg   - needs the run's PostgreSQL cluster: x_pgtest.cpp
#   e2e  - starts gpurentd and talks HTTP:    x_e2etest.cpp
# pg and e2e tests require the CTest fixture that starts the throwaway cluster once per
# run (tests/CMakeLists.txt); run by hand, the harness starts a cluster of its own.
function(gpurent_add_tests target)
  cmake_parse_arguments(T "" "KIND" "SOURCES;LIBS" ${ARGN})
  add_executable(${target} ${T_SOURCES})
  target_link_libraries(${target} PRIVATE gpurent_options GTest::gtest GTest::gmock ${T_LIBS})
  target_precompile_headers(${target} REUSE_FROM gpurent_core)
  if(T_KIND STREQUAL "pure")
    target_link_libraries(${target} PRIVATE GTest::gtest_main)
    set(_props LABELS pure)
  else()
    target_link_libraries(${target} PRIVATE gpurent_test_support gpurent_test_main)
    set(_props LABELS ${T_KIND} FIXTURES_REQUIRED pg_cluster
               ENVIRONMENT "GPURENT_TEST_STATE=${PROJECT_BINARY_DIR}/test-pg.json")
  endif()
  gtest_discover_tests(${target}
    DISCOVERY_TIMEOUT 60
    PROPERTIES ${_props} TIMEOUT 120)
endfunction()
