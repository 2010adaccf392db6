# gpurent_add_tests(<target> KIND <pure|pg|e2e> SOURCES <files...> [LIBS <targets...>]
#                   [SHARDS <n>] [UNITY <files per batch>])
#
# One GoogleTest binary, run by CTest as <n> processes (default 1), each taking every n-th
# test case (GoogleTest's GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX). A process per binary or
# shard rather than per case: the cases share nothing, and a sanitizer-built process costs
# far more to start than most cases take to run. The kind becomes the CTest label:
#   pure - no database, no processes:        x_test.cpp
#   pg   - needs the run's PostgreSQL cluster: x_pgtest.cpp
#   e2e  - starts gpurentd and talks HTTP:    x_e2etest.cpp
# pg and e2e tests require the CTest fixture that starts the throwaway cluster once per
# run (tests/CMakeLists.txt); run by hand, the harness starts a cluster of its own.
# Each process writes GoogleTest's XML report to test-results/, which
# scripts/slowest-tests reads to name the slowest cases.
#
# UNITY compiles the sources in batches of that many files, each batch one translation
# unit: test files repeat the same heavy instantiations (GoogleTest's assertions,
# nlohmann::json, std::regex), which a batch compiles once. The end-to-end files took
# ~160 s of CPU one by one and ~45 s in two batches. Each test file therefore keeps its
# helpers in a namespace named after the file (`namespace db_pool_pgtest {`,
# `gpurent::testing::<file>_e2e`), never an anonymous one, so names cannot collide inside
# a batch.
function(gpurent_add_tests target)
  cmake_parse_arguments(T "" "KIND;SHARDS;UNITY" "SOURCES;LIBS" ${ARGN})
  if(NOT T_SHARDS)
    set(T_SHARDS 1)
  endif()
  add_executable(${target} ${T_SOURCES})
  target_link_libraries(${target} PRIVATE gpurent_options GTest::gtest GTest::gmock ${T_LIBS})
  set_target_properties(${target} PROPERTIES GPURENT_TEST_CODE ON)  # ProjectOptions.cmake
  if(T_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${T_UNITY})
  endif()
  target_precompile_headers(${target} REUSE_FROM gpurent_test_support)
  if(T_KIND STREQUAL "pure")
    target_link_libraries(${target} PRIVATE gpurent_test_support GTest::gtest_main)
    set(_props LABELS pure)
    set(_env "")
  else()
    target_link_libraries(${target} PRIVATE gpurent_test_support gpurent_test_main)
    set(_props LABELS ${T_KIND} FIXTURES_REQUIRED pg_cluster)
    set(_env "GPURENT_TEST_STATE=${PROJECT_BINARY_DIR}/test-pg.json")
  endif()
  list(APPEND _env "GPURENT_TEST_CACHE=${PROJECT_BINARY_DIR}/test-cache")
  math(EXPR _last "${T_SHARDS} - 1")
  foreach(i RANGE 0 ${_last})
    if(T_SHARDS EQUAL 1)
      set(_name ${target})
    else()
      set(_name ${target}.${i})
    endif()
    add_test(NAME ${_name} COMMAND ${target} --gtest_brief=1)
    set_tests_properties(${_name} PROPERTIES ${_props} TIMEOUT 900
      ENVIRONMENT "${_env};GTEST_TOTAL_SHARDS=${T_SHARDS};GTEST_SHARD_INDEX=${i};GTEST_OUTPUT=xml:${PROJECT_BINARY_DIR}/test-results/${_name}.xml")
  endforeach()
endfunction()
